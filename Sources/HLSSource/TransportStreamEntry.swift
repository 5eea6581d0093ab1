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

    /// PTS values wrap at 33 bits.
    static let ptsModulus: Int64 = 1 << 33

    /// Reads the head of a segment (its first packets, a few kilobytes): nil when the bytes are
    /// not a transport stream from its first byte, hold no PAT before the audio, or show no
    /// timestamped audio PES packet.
    public static func head(of bytes: Data) -> Head? {
        var sawTable = false
        let head = firstPacket(in: bytes) { offset, packet -> Head?? in
            if packet.pid == 0 { sawTable = true }
            guard let pts = audioPESTimestamp(packet) else { return nil }
            // The first audio ends the head: with no PAT before it, there is no head to keep.
            return .some(sawTable ? Head(tablesLength: offset, audioPID: packet.pid, firstPTS: pts) : nil)
        }
        return head ?? nil
    }

    /// The first packet in `bytes` (which begin at a packet boundary of the segment `head`
    /// was read from) that begins a timestamped PES packet of the head's audio stream; nil when
    /// none is whole in them or the bytes lose sync.
    public static func entry(in bytes: Data, after head: Head) -> Entry? {
        firstPacket(in: bytes) { offset, packet in
            guard packet.pid == head.audioPID, let pts = audioPESTimestamp(packet) else { return nil }
            let ticks = ((pts - head.firstPTS) % ptsModulus + ptsModulus) % ptsModulus
            return Entry(offset: offset, time: .microseconds(ticks * 100 / 9))
        }
    }

    /// The first answer `answer` gives for a whole packet of `bytes` (with its offset), in
    /// order; nil when none does or the bytes lose sync first.
    private static func firstPacket<Answer>(
        in bytes: Data, _ answer: (Int, TransportPacket) -> Answer?
    ) -> Answer? {
        let bytes = [UInt8](bytes)
        var offset = 0
        while offset + TransportPacket.size <= bytes.count {
            guard let packet = TransportPacket(bytes[offset..<offset + TransportPacket.size]) else { return nil }
            if let found = answer(offset, packet) { return found }
            offset += TransportPacket.size
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
        let aligned = estimate / Int64(TransportPacket.size) * Int64(TransportPacket.size)
        return aligned > tables && aligned < length ? aligned : nil
    }

    /// The PTS of the PES packet `packet` begins, if it begins one of MPEG audio (stream ids
    /// 0xC0–0xDF) that carries a PTS.
    private static func audioPESTimestamp(_ packet: TransportPacket) -> Int64? {
        guard packet.startsUnit, let payload = packet.payload, payload.count >= 14 else { return nil }
        let p = payload.startIndex
        guard payload[p] == 0, payload[p + 1] == 0, payload[p + 2] == 1, (0xC0...0xDF).contains(payload[p + 3]),
            payload[p + 7] & 0x80 != 0
        else { return nil }
        return Int64((payload[p + 9] >> 1) & 0x07) << 30 | Int64(payload[p + 10]) << 22
            | Int64(payload[p + 11] >> 1) << 15 | Int64(payload[p + 12]) << 7 | Int64(payload[p + 13] >> 1)
    }
}
