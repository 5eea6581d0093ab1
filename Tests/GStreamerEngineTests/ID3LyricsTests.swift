import Testing

@testable import GStreamerEngine

@Suite("Lyrics in ID3 USLT frames")
struct ID3LyricsTests {
    /// A USLT frame: header (id, size, flags), encoding, language, description, text.
    static func frame(encoding: UInt8, description: [UInt8], text: [UInt8], flags: UInt8 = 0, extra: [UInt8] = [])
        -> [UInt8]
    {
        let content = extra + [encoding] + Array("eng".utf8) + description + text
        return Array("USLT".utf8) + [0, 0, 0, UInt8(content.count)] + [0, flags] + content
    }

    static func utf16LE(_ text: String, bom: Bool = true) -> [UInt8] {
        (bom ? [0xFF, 0xFE] : []) + text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
    }

    @Test func readsEveryTextEncoding() {
        let lrc = "[00:01.00]Grüße\n[00:02.00]two"
        let utf8 = Self.frame(encoding: 3, description: Array("desc".utf8) + [0], text: Array(lrc.utf8) + [0])
        #expect(ID3Lyrics.text(ofFrame: utf8, version: 4) == lrc)
        let latin1 = Self.frame(encoding: 0, description: [0], text: [0x47, 0x72, 0xFC, 0xDF, 0x65])
        #expect(ID3Lyrics.text(ofFrame: latin1, version: 3) == "Grüße")
        // UTF-16: the description ends with two NULs on a unit boundary; a BOM sets the byte order.
        let utf16 = Self.frame(encoding: 1, description: Self.utf16LE("d") + [0, 0], text: Self.utf16LE(lrc))
        #expect(ID3Lyrics.text(ofFrame: utf16, version: 3) == lrc)
        let utf16BE = Self.frame(encoding: 2, description: [0, 0], text: [0x00, 0x41, 0x00, 0xE9])
        #expect(ID3Lyrics.text(ofFrame: utf16BE, version: 4) == "Aé")
        #expect(
            ID3Lyrics.text(ofFrame: Self.frame(encoding: 3, description: [0], text: [0x61, 0xFF]), version: 4)
                == "a\u{FFFD}")
    }

    @Test func skipsWhatItCannotRead() {
        let text = Array("la".utf8)
        #expect(
            ID3Lyrics.text(
                ofFrame: Array("COMM".utf8) + Self.frame(encoding: 3, description: [0], text: text).dropFirst(4),
                version: 4) == nil)
        #expect(
            ID3Lyrics.text(ofFrame: Self.frame(encoding: 3, description: [0], text: text, flags: 0x08), version: 4)
                == nil, "compressed")
        #expect(
            ID3Lyrics.text(ofFrame: Self.frame(encoding: 3, description: [0], text: text, flags: 0x80), version: 3)
                == nil, "compressed")
        #expect(
            ID3Lyrics.text(ofFrame: Self.frame(encoding: 3, description: [0], text: []), version: 4) == nil, "empty")
        #expect(ID3Lyrics.text(ofFrame: Array("USLT".utf8) + [0, 0, 0, 1, 0, 0, 3], version: 4) == nil, "truncated")
        let withLength = Self.frame(encoding: 3, description: [0], text: text, flags: 0x01, extra: [0, 0, 0, 7])
        #expect(ID3Lyrics.text(ofFrame: withLength, version: 4) == "la", "data length indicator")
    }
}
