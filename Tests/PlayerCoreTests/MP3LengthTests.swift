import PlayerCore
import Testing

@Suite("Length of a constant-bitrate MP3 from its bitrate")
struct MP3LengthTests {
    /// An MPEG-1 Layer III frame, 128 kbit/s, 44.1 kHz, stereo: 417 bytes.
    static func frame(
        _ header: [UInt8] = [0xFF, 0xFB, 0x90, 0x00], length: Int = 417, tag: String? = nil, at position: Int = 36
    ) -> [UInt8] {
        var bytes = header + [UInt8](repeating: 0, count: length - 4)
        if let tag { bytes.replaceSubrange(position..<position + 4, with: Array(tag.utf8)) }
        return bytes
    }

    static func frames(_ count: Int, _ frame: [UInt8] = frame()) -> [UInt8] {
        Array((0..<count).map { _ in frame }.joined())
    }

    static let id3v2: [UInt8] = [0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 100] + [UInt8](repeating: 0, count: 100)
    static let id3v1: [UInt8] = Array("TAG".utf8) + [UInt8](repeating: 0x20, count: 125)

    /// (file bytes, expected microseconds or nil)
    static let cases: [(name: String, file: [UInt8], micros: Int64?)] = [
        ("plain", frames(100), 41_700 * 8 * 1_000_000 / 128_000),
        ("after an ID3v2 tag", id3v2 + frames(100), 41_700 * 8 * 1_000_000 / 128_000),
        ("before an ID3v1 tag", frames(100) + id3v1, 41_700 * 8 * 1_000_000 / 128_000),
        (
            "MPEG-2 64 kbit/s 22.05 kHz", frames(50, frame([0xFF, 0xF3, 0x80, 0x00], length: 208)),
            50 * 208 * 8 * 1_000_000 / 64_000
        ),
        ("a Xing header", [frame(tag: "Xing")].joined() + frames(99), nil),
        ("an Info header", [frame(tag: "Info")].joined() + frames(99), nil),
        ("a VBRI header", [frame(tag: "VBRI", at: 36)].joined() + frames(99), nil),
        ("one frame, then noise", frame() + [UInt8](repeating: 0x11, count: 4000), nil),
        ("not MPEG audio", Array("not audio at all, just text\n".utf8) + [UInt8](repeating: 0x41, count: 4000), nil),
        ("a bad bitrate index", frames(10, frame([0xFF, 0xFB, 0xF0, 0x00])), nil),
        ("empty", [], nil),
    ]

    @Test(arguments: cases.indices)
    func theLengthIsTheAudioBytesOverTheBitrate(_ index: Int) {
        let (name, file, micros) = Self.cases[index]
        let head = Array(file.prefix(MP3Length.headBytes))
        let tail = file.count >= 128 ? Array(file.suffix(128)) : []
        let estimate = MP3Length.estimate(head: head, tail: tail, fileSize: Int64(file.count))
        #expect(estimate == micros.map { .microseconds($0) }, "\(name)")
    }
}
