import FoundationEssentials

/// Where an MPEG-TS segment can be entered part-way, so that a seek deep into a segment not
/// fetched yet waits for the bytes near its target, not for every byte before it. A demuxer
/// needs the tables at the segment's head (the PAT, the program map) and then any packet that
/// begins an audio PES packet: given those, it decodes from there as from a segment's start.
/// Where the entered stream plays from is that PES packet's PTS against the segment's first
/// audio PTS. Pure: bytes in, offsets and times out; anything it cannot read is a nil, and
/// the segment is then read whole.
public enum TransportStreamEntry {
    /// What a segment's head tells an entry.
    public struct Head: Sendable, Equatable {
        /// The bytes before the first packet of audio: the tables a demuxer reads first.
        public var tablesLength: Int
        /// The PID of the audio stream (the first whose PES stream id is MPEG audio, which
        /// ADTS AAC and MP3 use).
        public var audioPID: Int
        /// The PTS of the segment's first audio PES packet, in 90 kHz ticks.
        public var firstPTS: Int64

        /// A head of `tablesLength` bytes of tables before audio on `audioPID` from `firstPTS`.
        public init(tablesLength: Int, audioPID: Int, firstPTS: Int64) {
            self.tablesLength = tablesLength
            self.audioPID = audioPID
            self.firstPTS = firstPTS
        }
    }

    /// A packet that begins an audio PES packet, past the head.
    public struct Entry: Sendable, Equatable {
        /// Its offset in the bytes searched.
        public var offset: Int
        /// How long after the segment's first audio its audio plays.
        public var time: Duration

        /// An entry at `offset`, playing `time` into the segment.
        public init(offset: Int, time: Duration) {
            self.offset = offset
            self.time = time
        }
    }

    static let packetSize = 188
    /// PTS values wrap at 33 bits.
    static let ptsModulus: Int64 = 1 << 33

    /// Reads the head of a segment (its first packets, a few kilobytes): nil when the bytes are
    /// not a transport stream from its first byte, hold no PAT before the audio, or show no
    /// timestamped audio PES packet.
    public static func head(of bytes: Data) -> Head? {
        let bytes = [UInt8](bytes)
        var sawTable = false
        var offset = 0
        while offset + packetSize <= bytes.count {
            let packet = bytes[offset..<offset + packetSize]
            guard packet[offset] == 0x47 else { return nil }
            let pid = Int(packet[offset + 1] & 0x1F) << 8 | Int(packet[offset + 2])
            if pid == 0 { sawTable = true }
            if let pts = audioPESTimestamp(packet) {
                return sawTable ? Head(tablesLength: offset, audioPID: pid, firstPTS: pts) : nil
            }
            offset += packetSize
        }
        return nil
    }

    /// The first packet in `bytes` (which begin at a packet boundary of the segment `head`
    /// was read from) that begins a timestamped PES packet of the head's audio stream; nil when
    /// none is whole in them or the bytes lose sync.
    public static func entry(in bytes: Data, after head: Head) -> Entry? {
        let bytes = [UInt8](bytes)
        var offset = 0
        while offset + packetSize <= bytes.count {
            let packet = bytes[offset..<offset + packetSize]
            guard packet[offset] == 0x47 else { return nil }
            let pid = Int(packet[offset + 1] & 0x1F) << 8 | Int(packet[offset + 2])
            if pid == head.audioPID, let pts = audioPESTimestamp(packet) {
                let ticks = ((pts - head.firstPTS) % ptsModulus + ptsModulus) % ptsModulus
                return Entry(offset: offset, time: .microseconds(ticks * 100 / 9))
            }
            offset += packetSize
        }
        return nil
    }

    /// Where to ask for a segment of `length` bytes and `duration` to be entered `depth` into
    /// its time: that share of the bytes after the head's tables, at a packet boundary. Nil
    /// when that is no further than the first audio packet (the segment is read whole).
    public static func estimatedOffset(depth: Duration, duration: Duration, length: Int64, head: Head) -> Int64? {
        guard duration > .zero, depth > .zero, length > Int64(head.tablesLength) else { return nil }
        let share = min(1, depth / duration)
        let tables = Int64(head.tablesLength)
        let estimate = tables + Int64(share * Double(length - tables))
        let aligned = estimate / Int64(packetSize) * Int64(packetSize)
        return aligned > tables && aligned < length ? aligned : nil
    }

    /// The PTS of the PES packet `packet` begins, if it begins one of MPEG audio (stream ids
    /// 0xC0–0xDF) that carries a PTS.
    private static func audioPESTimestamp(_ packet: ArraySlice<UInt8>) -> Int64? {
        let start = packet.startIndex
        guard packet[start + 1] & 0x40 != 0 else { return nil }  // no PES packet begins here
        let adaptation = (packet[start + 3] >> 4) & 0x3
        guard adaptation & 0x1 != 0 else { return nil }  // no payload
        let payload = start + 4 + (adaptation & 0x2 != 0 ? 1 + Int(packet[start + 4]) : 0)
        guard payload + 14 <= packet.endIndex else { return nil }
        let header = packet[payload..<payload + 14]
        guard header[payload] == 0, header[payload + 1] == 0, header[payload + 2] == 1,
            (0xC0...0xDF).contains(header[payload + 3]), header[payload + 7] & 0x80 != 0
        else { return nil }
        let pts = header[(payload + 9)...]
        let first = pts.startIndex
        return Int64((pts[first] >> 1) & 0x07) << 30 | Int64(pts[first + 1]) << 22
            | Int64(pts[first + 2] >> 1) << 15 | Int64(pts[first + 3]) << 7 | Int64(pts[first + 4] >> 1)
    }
}
