import Basics
import Foundation
import Testing

@Suite("ID3v2 tags")
struct ID3v2Tests {
    /// A tag of `version` holding `frames` (id, encoding byte and text bytes).
    static func tag(version: UInt8, _ frames: [(String, [UInt8])], frameFlags: UInt8 = 0) -> Data {
        func size(_ count: Int, syncsafe: Bool) -> [UInt8] {
            syncsafe
                ? [UInt8(count >> 21 & 0x7f), UInt8(count >> 14 & 0x7f), UInt8(count >> 7 & 0x7f), UInt8(count & 0x7f)]
                : [UInt8(count >> 24 & 0xff), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
        }
        let body = frames.flatMap { id, payload in
            Array(id.utf8) + size(payload.count, syncsafe: version == 4) + [0, frameFlags] + payload
        }
        return Data([0x49, 0x44, 0x33, version, 0, 0] + size(body.count, syncsafe: true) + body)
    }

    @Test func textFramesAreReadInEachEncoding() {
        let utf8 = Self.tag(version: 4, [("TIT2", [3] + Array("Façade".utf8)), ("TPE1", [3] + Array("Björk".utf8))])
        #expect(ID3v2.textFrames(utf8) == ["TIT2": "Façade", "TPE1": "Björk"])
        let latin1 = Self.tag(version: 3, [("TIT2", [0, 0x43, 0x61, 0x66, 0xE9])])
        #expect(ID3v2.textFrames(latin1)["TIT2"] == "Café")
        // UTF-16 with a little-endian byte order mark, and UTF-16BE without one.
        let little = Self.tag(version: 3, [("TIT2", [1, 0xFF, 0xFE, 0x48, 0, 0x69, 0, 0, 0])])
        #expect(ID3v2.textFrames(little)["TIT2"] == "Hi")
        let big = Self.tag(version: 4, [("TPE1", [2, 0, 0x4F, 0, 0x4B])])
        #expect(ID3v2.textFrames(big)["TPE1"] == "OK")
        #expect(ID3v2.tagLength(utf8) == Int64(utf8.count))
    }

    @Test func framesItCannotReadAndMalformedTagsGiveWhatIsReadable() {
        // A compressed frame (v2.4 format flag 0x08) is left out; a PRIV frame is not text.
        let compressed = Self.tag(version: 4, [("TIT2", [3] + Array("x".utf8))], frameFlags: 0x08)
        #expect(ID3v2.textFrames(compressed).isEmpty)
        let priv = Self.tag(version: 4, [("PRIV", Array("com.apple".utf8) + [0, 1, 2])])
        #expect(ID3v2.textFrames(priv).isEmpty)
        // A frame claiming more bytes than the tag holds ends the reading; the one before stays.
        var truncated = Self.tag(version: 4, [("TIT2", [3, 0x41]), ("TPE1", [3, 0x42, 0x43])])
        truncated.removeLast(1)
        #expect(ID3v2.textFrames(truncated) == ["TIT2": "A"])
        #expect(ID3v2.textFrames(Data("not a tag at all".utf8)).isEmpty)
        #expect(ID3v2.textFrames(Data([0x49, 0x44, 0x33, 2, 0, 0, 0, 0, 0, 10])).isEmpty, "v2.2 is not read")
    }
}
