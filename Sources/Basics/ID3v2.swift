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
