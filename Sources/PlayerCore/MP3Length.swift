import FoundationEssentials
import Glibc

/// The length of a constant-bitrate MP3 that has no Xing, Info or VBRI header, from the
/// bitrate of its first frame and the size of its audio, as other players estimate it.
/// GStreamer finds it only after it has parsed frames while playing, so a track loaded paused
/// would show no length until Play.
public enum MP3Length {
    /// How much of the file's start ``estimate(head:tail:fileSize:)`` wants.
    public static let headBytes = 64 << 10

    /// The length of the file at `path`, reading its head and its last 128 bytes. Blocks on the
    /// disk: call it off the player, D-Bus and streaming threads.
    public static func estimate(atPath path: String) -> Duration? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size > 0 else { return nil }
        func read(_ count: Int, at offset: Int) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
            return got > 0 ? Array(bytes.prefix(got)) : []
        }
        let size = Int(info.st_size)
        let head = read(min(size, headBytes), at: 0)
        let tail = size >= 128 ? read(128, at: size - 128) : []
        return estimate(head: head, tail: tail, fileSize: Int64(size))
    }

    /// The length, from the file's first bytes (`head`, up to ``headBytes``), its last 128 bytes
    /// (`tail`, for an ID3v1 tag) and its size; nil when the start is not an MPEG audio frame
    /// followed by another, or the first frame carries a VBR header.
    public static func estimate(head: [UInt8], tail: [UInt8], fileSize: Int64) -> Duration? {
        var offset = 0
        // An ID3v2 tag: "ID3", version, flags, then a 28-bit synchsafe size.
        if head.count >= 10, head[0] == 0x49, head[1] == 0x44, head[2] == 0x33 {
            let size = head[6..<10].reduce(0) { $0 << 7 | Int($1 & 0x7F) }
            offset = 10 + size + (head[5] & 0x10 != 0 ? 10 : 0)
        }
        guard let frame = Frame(head, at: offset), let next = Frame(head, at: offset + frame.length),
            next.bitrate == frame.bitrate, next.sampleRate == frame.sampleRate, !frame.hasVBRHeader(head, at: offset)
        else { return nil }
        let id3v1 = tail.count == 128 && tail[0] == 0x54 && tail[1] == 0x41 && tail[2] == 0x47 ? 128 : 0  // "TAG"
        let audio = fileSize - Int64(offset) - Int64(id3v1)
        guard audio > 0 else { return nil }
        let micros = audio * 8 * 1_000_000 / Int64(frame.bitrate)
        return .microseconds(micros)
    }

    /// One MPEG audio frame header.
    struct Frame {
        let version: Int  // 1, 2 or 25 (MPEG 2.5)
        let layer: Int  // 1, 2 or 3
        let bitrate: Int  // bits per second
        let sampleRate: Int
        let length: Int  // bytes, header included
        let mono: Bool

        init?(_ bytes: [UInt8], at offset: Int) {
            guard offset >= 0, offset + 4 <= bytes.count, bytes[offset] == 0xFF, bytes[offset + 1] & 0xE0 == 0xE0 else {
                return nil
            }
            let b1 = bytes[offset + 1]
            let b2 = bytes[offset + 2]
            switch (b1 >> 3) & 3 {
            case 0: version = 25
            case 2: version = 2
            case 3: version = 1
            default: return nil
            }
            switch (b1 >> 1) & 3 {
            case 1: layer = 3
            case 2: layer = 2
            case 3: layer = 1
            default: return nil
            }
            let bitrateIndex = Int(b2 >> 4)
            let rateIndex = Int((b2 >> 2) & 3)
            guard (1...14).contains(bitrateIndex), rateIndex < 3 else { return nil }
            let table: [Int]
            switch (version, layer) {
            case (1, 1): table = [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448]
            case (1, 2): table = [32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384]
            case (1, 3): table = [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
            case (_, 1): table = [32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256]
            default: table = [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
            }
            bitrate = table[bitrateIndex - 1] * 1000
            sampleRate = [44_100, 48_000, 32_000][rateIndex] / (version == 1 ? 1 : version == 2 ? 2 : 4)
            let padding = Int((b2 >> 1) & 1)
            switch layer {
            case 1: length = (12 * bitrate / sampleRate + padding) * 4
            case 3 where version != 1: length = 72 * bitrate / sampleRate + padding
            default: length = 144 * bitrate / sampleRate + padding
            }
            mono = bytes[offset + 3] >> 6 == 3
        }

        /// Whether the frame at `offset` holds a Xing/Info (after the side information) or VBRI header.
        func hasVBRHeader(_ bytes: [UInt8], at offset: Int) -> Bool {
            let sideInformation = version == 1 ? (mono ? 17 : 32) : (mono ? 9 : 17)
            func tag(at position: Int) -> String? {
                guard position >= 0, position + 4 <= bytes.count else { return nil }
                return String(decoding: bytes[position..<position + 4], as: UTF8.self)
            }
            let xing = tag(at: offset + 4 + sideInformation)
            return xing == "Xing" || xing == "Info" || tag(at: offset + 36) == "VBRI"
        }
    }
}
