import FoundationEssentials

/// Finds the ID3 tags an MPEG-TS segment carries as timed metadata, as HLS packagers put the
/// song on air there: an elementary stream of type 0x15 (metadata in PES packets) in the
/// program map, whose PES packets each hold one ID3v2 tag. Fed a segment's bytes in order, in
/// pieces of any size, it answers each complete tag with the position (counted from the
/// segment's first byte) of the TS packet its PES packet begins in, and the bytes of audio
/// before that packet: a parser behind the demuxer counts offsets in the audio's bytes (PES
/// payloads), not the stream's, and a title is timed by the audio it comes with.
///
/// It reads only what it needs (the PAT, the program map, the metadata PIDs) and gives up on a
/// segment that is not a transport stream or loses sync: it never guesses. A PES packet larger
/// than ``maximumTagSize`` is dropped, so a hostile stream cannot make it hold more.
public struct TimedID3Scanner: Sendable {
    /// A tag found, and where its PES packet began in the segment.
    public struct Found: Sendable, Equatable {
        /// The ID3v2 tag, header included.
        public var tag: Data
        /// The segment offset of the TS packet that starts the tag's PES packet.
        public var position: Int64
        /// The bytes of the segment's audio (its first audio stream's PES payloads) before
        /// that packet.
        public var audioOffset: Int64

        /// A tag found at `position`, after `audioOffset` bytes of audio.
        public init(tag: Data, position: Int64, audioOffset: Int64 = 0) {
            self.tag = tag
            self.position = position
            self.audioOffset = audioOffset
        }
    }

    /// The largest PES packet kept: a song's tag is a few hundred bytes; artwork is not read.
    public static let maximumTagSize = 64 * 1024
    static let metadataStreamType: UInt8 = 0x15
    /// MPEG-1/2 audio, ADTS AAC, LATM AAC, AC-3: the stream types whose bytes a parser counts.
    static let audioStreamTypes: Set<UInt8> = [0x03, 0x04, 0x0F, 0x11, 0x81]

    /// Bytes of a packet not yet whole.
    private var partial: [UInt8] = []
    /// Bytes fed so far: the position of the next byte.
    public private(set) var fed: Int64 = 0
    private var programMapPIDs: Set<Int> = []
    private var metadataPIDs: Set<Int> = []
    /// The first audio stream of the program map, whose bytes are counted.
    private var audioPID: Int?
    /// Bytes of audio (PES payloads of ``audioPID``, from its first PES packet on) read so far.
    public private(set) var audioBytes: Int64 = 0
    private var audioStarted = false
    /// The metadata PES packet being gathered: its bytes so far, where it began (in the
    /// segment, and in its audio), its length.
    private var gathering: (pid: Int, bytes: [UInt8], position: Int64, audioOffset: Int64, length: Int?)?
    /// The segment is not a transport stream, or lost sync: nothing more is read.
    public private(set) var stopped = false

    /// A scanner at the start of a segment.
    public init() {}

    /// Reads the next `bytes` of the segment; answers the tags completed in them.
    public mutating func scan(_ bytes: Data) -> [Found] {
        guard !stopped, !bytes.isEmpty else { return [] }
        var found: [Found] = []
        let bytes = [UInt8](bytes)
        var index = 0
        var position = fed
        fed += Int64(bytes.count)
        if !partial.isEmpty {
            let wanted = min(TransportPacket.size - partial.count, bytes.count)
            partial += bytes[0..<wanted]
            index = wanted
            if partial.count < TransportPacket.size { return [] }
            let packet = partial
            partial = []
            read(packet[...], at: position - Int64(TransportPacket.size - wanted), into: &found)
            position += Int64(wanted)
        }
        while !stopped, bytes.count - index >= TransportPacket.size {
            read(bytes[index..<index + TransportPacket.size], at: position, into: &found)
            index += TransportPacket.size
            position += Int64(TransportPacket.size)
        }
        if !stopped, index < bytes.count { partial = Array(bytes[index...]) }
        return found
    }

    /// The segment ended: a tag whose PES packet gave no length ends with it.
    public mutating func finish() -> [Found] {
        defer { gathering = nil }
        guard let open = gathering, open.length == nil, let tag = Self.tag(inPES: open.bytes) else { return [] }
        return [Found(tag: tag, position: open.position, audioOffset: open.audioOffset)]
    }

    private mutating func read(_ bytes: ArraySlice<UInt8>, at position: Int64, into found: inout [Found]) {
        guard let packet = TransportPacket(bytes) else {
            stopped = true
            gathering = nil
            return
        }
        guard let body = packet.payload else { return }
        let (pid, startsUnit) = (packet.pid, packet.startsUnit)
        if pid == 0 {
            if startsUnit { readProgramAssociation(body) }
        } else if programMapPIDs.contains(pid) {
            if startsUnit { readProgramMap(body) }
        } else if pid == audioPID {
            countAudio(body, startsUnit: startsUnit)
        } else if metadataPIDs.contains(pid) {
            gather(body, pid: pid, startsUnit: startsUnit, at: position, into: &found)
        }
    }

    /// The program association table: the PIDs of the programs' maps.
    private mutating func readProgramAssociation(_ body: ArraySlice<UInt8>) {
        guard let section = Self.section(body), section.count >= 12, section[section.startIndex] == 0x00 else { return }
        let s = section.startIndex
        var entry = s + 8
        while entry + 4 <= section.endIndex - 4 {
            let program = Int(section[entry]) << 8 | Int(section[entry + 1])
            let pid = Int(section[entry + 2] & 0x1F) << 8 | Int(section[entry + 3])
            if program != 0 { programMapPIDs.insert(pid) }
            entry += 4
        }
    }

    /// A program map: the PIDs of its metadata streams.
    private mutating func readProgramMap(_ body: ArraySlice<UInt8>) {
        guard let section = Self.section(body), section.count >= 16, section[section.startIndex] == 0x02 else { return }
        let s = section.startIndex
        let programInfo = Int(section[s + 10] & 0x0F) << 8 | Int(section[s + 11])
        var entry = s + 12 + programInfo
        let end = section.endIndex - 4  // the CRC
        while entry + 5 <= end {
            let type = section[entry]
            let pid = Int(section[entry + 1] & 0x1F) << 8 | Int(section[entry + 2])
            let infoLength = Int(section[entry + 3] & 0x0F) << 8 | Int(section[entry + 4])
            if type == Self.metadataStreamType { metadataPIDs.insert(pid) }
            if audioPID == nil, Self.audioStreamTypes.contains(type) { audioPID = pid }
            entry += 5 + infoLength
        }
    }

    /// The section a PSI payload starts (after its pointer field), cut to its stated length; nil
    /// when it does not fit in the packet (a map this large names no metadata stream worth the
    /// work here).
    private static func section(_ body: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        let start = body.startIndex + 1 + Int(body[body.startIndex])
        guard start + 3 <= body.endIndex else { return nil }
        let length = Int(body[start + 1] & 0x0F) << 8 | Int(body[start + 2])
        guard start + 3 + length <= body.endIndex else { return nil }
        return body[start..<(start + 3 + length)]
    }

    /// Counts an audio packet's payload, less its PES header; bytes before the first PES
    /// header reach no parser.
    private mutating func countAudio(_ body: ArraySlice<UInt8>, startsUnit: Bool) {
        var count = body.count
        if startsUnit {
            guard body.count >= 9, body.prefix(3).elementsEqual([0, 0, 1]) else { return }
            audioStarted = true
            count -= min(count, 9 + Int(body[body.startIndex + 8]))
        }
        if audioStarted { audioBytes += Int64(count) }
    }

    private mutating func gather(
        _ body: ArraySlice<UInt8>, pid: Int, startsUnit: Bool, at position: Int64, into found: inout [Found]
    ) {
        if startsUnit {
            found += finish()
            guard body.count >= 6, body.prefix(3).elementsEqual([0, 0, 1]) else { return }
            let s = body.startIndex
            let length = Int(body[s + 4]) << 8 | Int(body[s + 5])
            gathering = (pid, [], position, audioBytes, length == 0 ? nil : 6 + length)
        }
        guard var open = gathering, open.pid == pid else { return }
        gathering = nil
        open.bytes += body
        if let length = open.length, open.bytes.count >= length {
            if let tag = Self.tag(inPES: Array(open.bytes.prefix(length))) {
                found.append(Found(tag: tag, position: open.position, audioOffset: open.audioOffset))
            }
            return
        }
        guard open.bytes.count <= Self.maximumTagSize else { return }
        gathering = open
    }

    /// The ID3 tag a metadata PES packet holds: right after the PES header (private stream 1),
    /// or after the 5-byte metadata access unit header that a metadata stream (0xFC) has.
    public static func tag(inPES pes: [UInt8]) -> Data? {
        guard pes.count >= 9 else { return nil }
        let payload = 9 + Int(pes[8])
        for start in [payload, payload + 5] where start + 10 <= pes.count {
            if pes[start] == 0x49, pes[start + 1] == 0x44, pes[start + 2] == 0x33 { return Data(pes[start...]) }
        }
        return nil
    }
}
