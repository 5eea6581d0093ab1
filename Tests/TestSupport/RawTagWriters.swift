import Foundation

/// A tag field Spool reads, as written into a file's tag by ``RawTagWriter``.
public enum RawTagField: String, Sendable, CaseIterable {
    /// Track title.
    case title
    /// One artist (repeat the field for several).
    case artist
    /// Album title.
    case album
    /// One album artist.
    case albumArtist
    /// One genre.
    case genre
    /// Free-form comment.
    case comment
    /// Track number, as text (`"3"`, `"3/12"`, or anything else).
    case trackNumber
    /// Disc number, as text.
    case discNumber
    /// Release date, as text.
    case date

    /// The ID3v2 frame that holds the field.
    var id3Frame: String {
        switch self {
        case .title: "TIT2"
        case .artist: "TPE1"
        case .album: "TALB"
        case .albumArtist: "TPE2"
        case .genre: "TCON"
        case .comment: "COMM"
        case .trackNumber: "TRCK"
        case .discNumber: "TPOS"
        case .date: "TDRC"
        }
    }

    /// The Vorbis comment field name (FLAC and Ogg Vorbis).
    var vorbisName: String {
        switch self {
        case .title: "TITLE"
        case .artist: "ARTIST"
        case .album: "ALBUM"
        case .albumArtist: "ALBUMARTIST"
        case .genre: "GENRE"
        case .comment: "COMMENT"
        case .trackNumber: "TRACKNUMBER"
        case .discNumber: "DISCNUMBER"
        case .date: "DATE"
        }
    }
}

/// Tag values as raw bytes, so that a test can write what no tagger would: invalid UTF-8,
/// control characters, NULs inside a value, megabyte strings, thousands of values.
public struct RawTags: Sendable {
    /// The values in file order; a field may repeat (several artists).
    public var values: [(field: RawTagField, bytes: [UInt8])] = []
    /// Vorbis comments of other names (`LYRICS`), written after ``values`` (FLAC and Ogg Vorbis only).
    public var otherVorbisComments: [(name: String, bytes: [UInt8])] = []
    /// Other ID3v2 frames (`USLT`), their content as it goes after the frame header (MP3 only).
    public var otherID3Frames: [(id: String, content: [UInt8])] = []

    /// No values.
    public init() {}

    /// Adds one value.
    public mutating func add(_ field: RawTagField, _ bytes: [UInt8]) { values.append((field, bytes)) }

    /// Adds one value written as UTF-8.
    public mutating func add(_ field: RawTagField, _ text: String) { add(field, Array(text.utf8)) }

    /// The values of `field`, in order.
    func values(of field: RawTagField) -> [[UInt8]] { values.filter { $0.field == field }.map(\.bytes) }

    /// The fields set, each once, in first-use order.
    var fields: [RawTagField] {
        var seen: [RawTagField] = []
        for (field, _) in values where !seen.contains(field) { seen.append(field) }
        return seen
    }
}

/// Replaces the tags of a fixture file with ``RawTags`` written byte for byte: an ID3v2.4 tag
/// (UTF-8) for MP3, a VORBIS_COMMENT block for FLAC, the comment header for Ogg Vorbis.
public enum RawTagWriter {
    /// `file` (an MP3) with its leading ID3v2 tag replaced by one holding `tags`, every text
    /// frame declared UTF-8 (encoding 3) and several values of a field separated by NUL.
    public static func mp3(_ file: Data, _ tags: RawTags) -> Data {
        var audio = file[...]
        if file.prefix(3) == Data("ID3".utf8), file.count > 10 {
            let header = [UInt8](file.prefix(10))
            let size = header[6...9].reduce(0) { $0 << 7 | Int($1 & 0x7F) }
            audio = file.dropFirst(10 + size + (header[5] & 0x10 != 0 ? 10 : 0))
        }
        var body: [UInt8] = []
        for field in tags.fields {
            let joined = tags.values(of: field).joined(separator: [0]).map { $0 }
            // COMM: encoding, language, empty description (NUL-terminated), text.
            let content = field == .comment ? [3] + Array("eng".utf8) + [0] + joined : [3] + joined
            body += Array(field.id3Frame.utf8) + syncsafe(content.count) + [0, 0] + content
        }
        for (id, content) in tags.otherID3Frames {
            body += Array(id.utf8) + syncsafe(content.count) + [0, 0] + content
        }
        return Data(Array("ID3".utf8) + [4, 0, 0] + syncsafe(body.count) + body) + audio
    }

    /// `file` (a native FLAC stream) with its VORBIS_COMMENT blocks replaced by one holding `tags`.
    public static func flac(_ file: Data, _ tags: RawTags) throws -> Data {
        let bytes = [UInt8](file)
        guard bytes.count > 42, bytes[0..<4] == [0x66, 0x4C, 0x61, 0x43] else { throw RigError("not a FLAC file") }
        var blocks: [(type: UInt8, body: ArraySlice<UInt8>)] = []
        var offset = 4
        while true {
            guard offset + 4 <= bytes.count else { throw RigError("FLAC metadata runs past the end") }
            let header = bytes[offset]
            let length = Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard offset + 4 + length <= bytes.count else { throw RigError("FLAC block runs past the end") }
            blocks.append((header & 0x7F, bytes[(offset + 4)..<(offset + 4 + length)]))
            offset += 4 + length
            if header & 0x80 != 0 { break }
        }
        let comment = vorbisComment(tags, framingBit: false)
        guard comment.count < 1 << 24 else { throw RigError("a FLAC metadata block holds at most 16 MiB") }
        // STREAMINFO first, then the comment, then the rest (pictures, seek tables) without the old comments.
        var kept = blocks.filter { $0.type != 4 }
        kept.insert((4, comment[...]), at: 1)
        var result = Array("fLaC".utf8)
        for (index, block) in kept.enumerated() {
            let last: UInt8 = index == kept.count - 1 ? 0x80 : 0
            result += [last | block.type] + bigEndian(block.body.count, bytes: 3) + block.body
        }
        return Data(result + bytes[offset...])
    }

    /// `file` (Vorbis in Ogg, one logical stream) with its comment header replaced by one
    /// holding `tags`: the header packets are paged anew and every audio page renumbered.
    public static func oggVorbis(_ file: Data, _ tags: RawTags) throws -> Data {
        let pages = try OggPage.parse([UInt8](file))
        // The three header packets (identification, comment, setup), and the first audio page.
        var packets: [[UInt8]] = [[]]
        var audioStart = 0
        for (index, page) in pages.enumerated() where packets.count <= 3 {
            var offset = 0
            for lace in page.lacing {
                packets[packets.count - 1] += page.body[offset..<(offset + Int(lace))]
                offset += Int(lace)
                if lace < 255 { packets.append([]) }
            }
            audioStart = index + 1
        }
        guard packets.count == 4, packets[3].isEmpty, packets[1].starts(with: [3] + Array("vorbis".utf8)) else {
            throw RigError("the Ogg stream does not end its Vorbis headers at a page boundary")
        }
        let serial = pages[0].serial
        var sequence: UInt32 = 0
        var output: [UInt8] = []
        func emit(_ page: OggPage) {
            var page = page
            page.sequence = sequence
            sequence += 1
            output += page.bytes()
        }
        emit(
            OggPage(
                flags: 2, granule: 0, serial: serial, sequence: 0, lacing: lacing(packets[0].count), body: packets[0]))
        let comment = [3] + Array("vorbis".utf8) + vorbisComment(tags, framingBit: true)
        for page in OggPage.paginate([comment, packets[2]], serial: serial) { emit(page) }
        for page in pages[audioStart...] { emit(page) }
        return Data(output)
    }

    /// A Vorbis comment structure (without the packet type and "vorbis" of the Ogg header).
    private static func vorbisComment(_ tags: RawTags, framingBit: Bool) -> [UInt8] {
        let vendor = Array("spool hostile tags".utf8)
        let named =
            tags.values.map { ($0.field.vorbisName, $0.bytes) } + tags.otherVorbisComments.map { ($0.name, $0.bytes) }
        var result = littleEndian(vendor.count) + vendor + littleEndian(named.count)
        for (name, value) in named {
            let entry = Array(name.utf8) + [UInt8(ascii: "=")] + value
            result += littleEndian(entry.count) + entry
        }
        return framingBit ? result + [1] : result
    }

    /// Ogg lacing values for one packet of `length` bytes (a final value below 255 ends it).
    static func lacing(_ length: Int) -> [UInt8] {
        Array(repeating: 255, count: length / 255) + [UInt8(length % 255)]
    }

    private static func syncsafe(_ value: Int) -> [UInt8] { [3, 2, 1, 0].map { UInt8((value >> ($0 * 7)) & 0x7F) } }
    private static func bigEndian(_ value: Int, bytes: Int) -> [UInt8] {
        (0..<bytes).reversed().map { UInt8((value >> ($0 * 8)) & 0xFF) }
    }
    private static func littleEndian(_ value: Int) -> [UInt8] { (0..<4).map { UInt8((value >> ($0 * 8)) & 0xFF) } }
}

/// One Ogg page (RFC 3533), enough to read a stream's pages and write them anew.
struct OggPage {
    /// Continuation (1), beginning (2) and end (4) of stream.
    var flags: UInt8
    var granule: UInt64
    var serial: UInt32
    var sequence: UInt32
    var lacing: [UInt8]
    var body: [UInt8]

    /// Every page of `bytes`, which must hold nothing else.
    static func parse(_ bytes: [UInt8]) throws -> [OggPage] {
        var pages: [OggPage] = []
        var offset = 0
        func field(_ at: Int, _ count: Int) -> UInt64 {
            (0..<count).reduce(0) { $0 | UInt64(bytes[offset + at + $1]) << (8 * $1) }
        }
        while offset < bytes.count {
            guard offset + 27 <= bytes.count, bytes[offset..<(offset + 4)] == [0x4F, 0x67, 0x67, 0x53] else {
                throw RigError("no Ogg page at \(offset)")
            }
            let segments = Int(bytes[offset + 26])
            guard offset + 27 + segments <= bytes.count else { throw RigError("Ogg page header past the end") }
            let lacing = Array(bytes[(offset + 27)..<(offset + 27 + segments)])
            let start = offset + 27 + segments
            let length = lacing.reduce(0) { $0 + Int($1) }
            guard start + length <= bytes.count else { throw RigError("Ogg page body past the end") }
            pages.append(
                OggPage(
                    flags: bytes[offset + 5], granule: field(6, 8), serial: UInt32(field(14, 4)),
                    sequence: UInt32(field(18, 4)), lacing: lacing, body: Array(bytes[start..<(start + length)])))
            offset = start + length
        }
        return pages
    }

    /// `packets` on as many pages as they need, the last one ending with the last packet. A page
    /// on which no packet ends has granule position -1, as the specification requires.
    static func paginate(_ packets: [[UInt8]], serial: UInt32) -> [OggPage] {
        var segments: [(lace: UInt8, bytes: ArraySlice<UInt8>, endsPacket: Bool)] = []
        for packet in packets {
            let laces = RawTagWriter.lacing(packet.count)
            var offset = 0
            for (index, lace) in laces.enumerated() {
                segments.append((lace, packet[offset..<(offset + Int(lace))], index == laces.count - 1))
                offset += Int(lace)
            }
        }
        var pages: [OggPage] = []
        var continued = false
        for start in stride(from: 0, to: segments.count, by: 255) {
            let slice = segments[start..<min(start + 255, segments.count)]
            let endsPacket = slice.contains { $0.endsPacket }
            pages.append(
                OggPage(
                    flags: continued ? 1 : 0, granule: endsPacket ? 0 : UInt64.max, serial: serial, sequence: 0,
                    lacing: slice.map(\.lace), body: slice.flatMap(\.bytes)))
            continued = !(slice.last?.endsPacket ?? true)
        }
        return pages
    }

    /// The page as written in a file, with its checksum.
    func bytes() -> [UInt8] {
        func le(_ value: UInt64, _ count: Int) -> [UInt8] { (0..<count).map { UInt8((value >> (8 * $0)) & 0xFF) } }
        var page = Array("OggS".utf8) + [0, flags] + le(granule, 8) + le(UInt64(serial), 4) + le(UInt64(sequence), 4)
        page += [0, 0, 0, 0, UInt8(lacing.count)] + lacing + body
        let crc = OggPage.checksum(page)
        page.replaceSubrange(22..<26, with: le(UInt64(crc), 4))
        return page
    }

    /// Ogg's CRC-32: polynomial 0x04C11DB7, not reflected, initial value and final XOR zero.
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0
        for byte in bytes {
            crc = (crc << 8) ^ table[Int(UInt8(crc >> 24) ^ byte)]
        }
        return crc
    }

    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index) << 24
        for _ in 0..<8 { value = value & 0x8000_0000 != 0 ? (value << 1) ^ 0x04C1_1DB7 : value << 1 }
        return value
    }
}
