import FoundationEssentials

/// The ID3v2 tag a media stream may begin with (an MP3 file, each packed-audio HLS segment).
public enum ID3v2 {
    /// The bytes the tag takes, from its first 10 bytes `head` (header, syncsafe size, optional
    /// 10-byte footer); 0 when `head` starts with no tag (or holds fewer than 10 bytes).
    public static func tagLength(_ head: Data) -> Int64 {
        let bytes = [UInt8](head.prefix(10))
        guard bytes.count == 10, bytes[0] == 0x49, bytes[1] == 0x44, bytes[2] == 0x33 else { return 0 }
        let size = bytes[6...9].reduce(Int64(0)) { $0 << 7 | Int64($1 & 0x7f) }
        let footer: Int64 = bytes[5] & 0x10 != 0 ? 10 : 0
        return 10 + size + footer
    }
}

extension ID3v2 {
    /// The text frames (`TIT2`, `TPE1`, …) of the whole tag `tag`, by frame id: ID3v2.3 and
    /// v2.4, each text in its declared encoding (Latin-1, UTF-16 with a byte order mark,
    /// UTF-16BE, UTF-8), up to its first NUL. Frames this does not read (compressed, encrypted,
    /// an unsynchronised tag) are left out; a malformed tag gives what was read before the fault.
    public static func textFrames(_ tag: Data) -> [String: String] {
        let bytes = [UInt8](tag)
        guard bytes.count >= 10, bytes[0] == 0x49, bytes[1] == 0x44, bytes[2] == 0x33 else { return [:] }
        let version = bytes[3]
        let flags = bytes[5]
        guard version == 3 || version == 4, flags & 0x80 == 0 else { return [:] }
        let end = min(bytes.count, Int(tagLength(tag)))
        var index = 10
        if flags & 0x40 != 0, index + 4 <= end {
            // The extended header: its size counts itself in v2.4 and does not in v2.3.
            let size = size(bytes[index..<index + 4], syncsafe: version == 4)
            index += version == 4 ? size : size + 4
        }
        var frames: [String: String] = [:]
        while index + 10 <= end, bytes[index] != 0 {
            let id = String(decoding: bytes[index..<index + 4], as: Unicode.ASCII.self)
            let size = size(bytes[index + 4..<index + 8], syncsafe: version == 4)
            let formatFlags = bytes[index + 9]
            let body = index + 10
            guard size > 0, body + size <= end else { break }
            // v2.3: compression 0x80, encryption 0x40; v2.4: 0x08, 0x04, unsynchronisation 0x02.
            let unreadable = version == 3 ? formatFlags & 0xC0 != 0 : formatFlags & 0x0E != 0
            if id.hasPrefix("T"), id != "TXXX", !unreadable, let text = decode(bytes[body..<body + size]) {
                frames[id] = text
            }
            index = body + size
        }
        return frames
    }

    private static func size(_ bytes: ArraySlice<UInt8>, syncsafe: Bool) -> Int {
        bytes.reduce(0) { syncsafe ? $0 << 7 | Int($1 & 0x7f) : $0 << 8 | Int($1) }
    }

    /// A text frame's body: its encoding byte, then the text.
    private static func decode(_ body: ArraySlice<UInt8>) -> String? {
        guard let encoding = body.first else { return nil }
        let text = body.dropFirst()
        let decoded: String?
        switch encoding {
        case 0:
            decoded = String(text.prefix { $0 != 0 }.map { Character(Unicode.Scalar($0)) })
        case 1, 2:
            var units = stride(from: text.startIndex, to: text.endIndex - 1, by: 2).map {
                UInt16(text[$0]) << 8 | UInt16(text[$0 + 1])
            }
            if encoding == 1, let mark = units.first {
                if mark == 0xFFFE { units = units.map { $0.byteSwapped } }
                if mark == 0xFEFF || mark == 0xFFFE { units.removeFirst() }
            }
            decoded = String(decoding: units.prefix { $0 != 0 }, as: UTF16.self)
        case 3:
            decoded = String(decoding: text.prefix { $0 != 0 }, as: UTF8.self)
        default:
            decoded = nil
        }
        return decoded.flatMap { $0.isEmpty ? nil : $0 }
    }
}
