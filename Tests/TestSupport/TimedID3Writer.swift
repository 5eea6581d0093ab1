import Foundation

/// Adds timed ID3 metadata to an MPEG-TS segment the way HLS packagers carry it (Apple's "Timed
/// Metadata for HTTP Live Streaming"; a radio's packager names the song on air this way): the
/// program map gains an elementary stream of type 0x15 (metadata in PES packets) with a
/// metadata descriptor of format `ID3 `, and a PES packet on that stream, stamped with the
/// segment's first audio timestamp, carries the tag. No segmenter installed here writes it
/// (GStreamer 1.22's `mpegtsmux` takes no `meta/x-id3`), so the test writes these packets itself
/// into `hlssink2`'s real segments.
public enum TimedID3Writer {
    /// The PID the metadata stream is given (`hlssink2`'s muxer uses 0x0000, 0x0020 and 0x0041+).
    public static let metadataPID = 0x01E0
    static let packetSize = 188

    /// `segment` with `tag` added as timed ID3, after the segment's first program map.
    public static func adding(_ tag: Data, to segment: Data) throws -> Data {
        let bytes = [UInt8](segment)
        guard bytes.count % packetSize == 0, bytes.first == 0x47 else {
            throw RigError("not whole MPEG-TS packets: \(bytes.count) bytes")
        }
        var packets = stride(from: 0, to: bytes.count, by: packetSize).map { Array(bytes[$0..<$0 + packetSize]) }
        guard let pat = packets.first(where: { pid(of: $0) == 0 }) else { throw RigError("no PAT in the segment") }
        let patStart = payloadStart(of: pat)
        let patSection = Array(pat[(patStart + 1 + Int(pat[patStart]))...])
        let programMapPID = (Int(patSection[10]) & 0x1F) << 8 | Int(patSection[11])
        guard let mapIndex = packets.firstIndex(where: { pid(of: $0) == programMapPID && $0[1] & 0x40 != 0 }) else {
            throw RigError("no program map (PID \(programMapPID)) in the segment")
        }
        for index in packets.indices where pid(of: packets[index]) == programMapPID {
            packets[index] = try withMetadataStream(packets[index])
        }
        let timestamp = firstPresentationTimestamp(in: packets) ?? 0
        packets.insert(contentsOf: pesPackets(carrying: tag, at: timestamp), at: mapIndex + 1)
        return Data(packets.joined())
    }

    /// A small transport stream of one AAC program (PAT, program map, `audioPackets` packets of
    /// one PES packet stamped `timestamp`), for tests of what reads one: its bytes are not audio.
    public static func syntheticSegment(audioPackets: Int, timestamp: UInt64 = 900_000) -> Data {
        func psi(_ pid: Int, _ section: [UInt8]) -> [UInt8] {
            let crc = crc32(section)
            let body = [0x47, 0x40 | UInt8(pid >> 8), UInt8(pid & 0xFF), 0x10, 0] + section
            return body + [24, 16, 8, 0].map { UInt8((crc >> $0) & 0xFF) }
                + [UInt8](repeating: 0xFF, count: packetSize - body.count - 4)
        }
        let pat = psi(0, [0x00, 0xB0, 13, 0, 1, 0xC1, 0, 0, 0, 1, 0xF0, 0x00])
        let map = psi(0x1000, [0x02, 0xB0, 18, 0, 1, 0xC1, 0, 0, 0xE1, 0x00, 0xF0, 0, 0x0F, 0xE1, 0x00, 0xF0, 0])
        var packets = [pat, map]
        for number in 0..<audioPackets {
            var packet: [UInt8] = [0x47, number == 0 ? 0x41 : 0x01, 0x00, 0x10 | UInt8(number & 0x0F)]
            if number == 0 { packet += [0, 0, 1, 0xC0, 0, 0, 0x80, 0x80, 5] + timestampBytes(timestamp) }
            packet += [UInt8](repeating: UInt8(truncatingIfNeeded: number), count: packetSize - packet.count)
            packets.append(packet)
        }
        return Data(packets.joined())
    }

    /// An ID3v2.4 tag naming a song: `TIT2` and `TPE1`, UTF-8.
    public static func songTag(artist: String, title: String) -> Data {
        var frames = Data()
        for (id, text) in [("TIT2", title), ("TPE1", artist)] {
            let body = Data([3]) + Data(text.utf8)
            frames += Data(id.utf8) + synchsafe(body.count) + [0, 0] + body
        }
        return Data("ID3".utf8) + [4, 0, 0] + synchsafe(frames.count) + frames
    }

    private static func synchsafe(_ value: Int) -> [UInt8] { [21, 14, 7, 0].map { UInt8((value >> $0) & 0x7F) } }

    static func pid(of packet: [UInt8]) -> Int { (Int(packet[1]) & 0x1F) << 8 | Int(packet[2]) }

    /// Where a packet's payload begins: after its header and adaptation field.
    static func payloadStart(of packet: [UInt8]) -> Int { packet[3] & 0x20 != 0 ? 5 + Int(packet[4]) : 4 }

    /// A program map packet with the metadata stream added to its one section: a metadata
    /// pointer descriptor in the program's loop, the stream with its metadata descriptor. The
    /// packet is written again without the adaptation field (the muxer's is stuffing only).
    private static func withMetadataStream(_ packet: [UInt8]) throws -> [UInt8] {
        guard packet[1] & 0x40 != 0 else { throw RigError("a program map packet this writer cannot edit") }
        let payload = payloadStart(of: packet)
        var section = Array(packet[(payload + 1 + Int(packet[payload]))...])
        let length = (Int(section[1]) & 0x0F) << 8 | Int(section[2])
        section = Array(section[0..<(3 + length - 4)])  // without its CRC
        let identifier = Array("ID3 ".utf8)
        let format: [UInt8] = [0xFF, 0xFF] + identifier + [0xFF] + identifier + [0]
        let pointer: [UInt8] = [0x25, UInt8(format.count + 3)] + format + [0x1F, section[3], section[4]]
        let programInfoLength = (Int(section[10]) & 0x0F) << 8 | Int(section[11])
        section.insert(contentsOf: pointer, at: 12 + programInfoLength)
        let newInfoLength = programInfoLength + pointer.count
        section[10] = 0xF0 | UInt8(newInfoLength >> 8)
        section[11] = UInt8(newInfoLength & 0xFF)
        let descriptor: [UInt8] = [0x26, UInt8(format.count + 1)] + format + [0x0F]
        section += [0x15, 0xE0 | UInt8(metadataPID >> 8), UInt8(metadataPID & 0xFF)]
        section += [0xF0, UInt8(descriptor.count)] + descriptor
        let newLength = section.count - 3 + 4
        section[1] = (section[1] & 0xF0) | UInt8(newLength >> 8)
        section[2] = UInt8(newLength & 0xFF)
        let crc = crc32(section)
        section += [24, 16, 8, 0].map { UInt8((crc >> $0) & 0xFF) }
        let edited = Array(packet[0..<3]) + [0x10 | packet[3] & 0x0F, 0] + section
        guard edited.count <= packetSize else { throw RigError("the program map outgrew its packet") }
        return edited + [UInt8](repeating: 0xFF, count: packetSize - edited.count)
    }

    /// The first PES header's presentation timestamp on any stream, in 90 kHz ticks.
    private static func firstPresentationTimestamp(in packets: [[UInt8]]) -> UInt64? {
        for packet in packets where packet[1] & 0x40 != 0 && packet[3] & 0x10 != 0 {
            let payload = payloadStart(of: packet)
            guard payload + 14 <= packetSize, packet[payload..<payload + 3] == [0, 0, 1],
                packet[payload + 7] & 0x80 != 0
            else { continue }
            let p = Array(packet[(payload + 9)..<(payload + 14)])
            return UInt64(p[0] >> 1 & 0x07) << 30 | UInt64(p[1]) << 22 | UInt64(p[2] >> 1) << 15
                | UInt64(p[3]) << 7 | UInt64(p[4] >> 1)
        }
        return nil
    }

    /// The tag in one PES packet of private stream 1 (0xBD), with a PTS, cut into TS packets;
    /// the last one padded by its adaptation field.
    private static func pesPackets(carrying tag: Data, at timestamp: UInt64) -> [[UInt8]] {
        let header: [UInt8] = [0x84, 0x80, 5] + timestampBytes(timestamp)
        // Past 16 bits the length is 0: unbounded, ended by the next PES packet.
        let length = header.count + tag.count <= 0xFFFF ? header.count + tag.count : 0
        var pes: [UInt8] = [0, 0, 1, 0xBD, UInt8(length >> 8), UInt8(length & 0xFF)] + header + [UInt8](tag)
        var packets: [[UInt8]] = []
        var counter: UInt8 = 0
        while !pes.isEmpty {
            let take = min(pes.count, packetSize - 4)
            let first: UInt8 = packets.isEmpty ? 0x40 : 0
            var packet: [UInt8] = [0x47, first | UInt8(metadataPID >> 8), UInt8(metadataPID & 0xFF)]
            if take == packetSize - 4 {
                packet += [0x10 | counter] + pes.prefix(take)
            } else {
                // Stuffing: an adaptation field fills what the payload leaves.
                let fieldLength = packetSize - 4 - take - 1
                var field: [UInt8] = [UInt8(fieldLength)]
                if fieldLength > 0 { field += [0x00] + [UInt8](repeating: 0xFF, count: fieldLength - 1) }
                packet += [0x30 | counter] + field + pes.prefix(take)
            }
            pes.removeFirst(take)
            packets.append(packet)
            counter = (counter + 1) & 0x0F
        }
        return packets
    }

    /// A PES header's five bytes of a presentation timestamp alone.
    private static func timestampBytes(_ timestamp: UInt64) -> [UInt8] {
        [
            0x21 | UInt8(timestamp >> 29 & 0x0E), UInt8(timestamp >> 22 & 0xFF), UInt8(timestamp >> 14 & 0xFE) | 1,
            UInt8(timestamp >> 7 & 0xFF), UInt8(timestamp << 1 & 0xFE) | 1,
        ]
    }

    /// MPEG-2's CRC-32 of a PSI section (polynomial 0x04C11DB7, no reflection, no final XOR).
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? crc << 1 ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc
    }
}
