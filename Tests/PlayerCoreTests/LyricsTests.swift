import Foundation
import PlayerCore
import TestSupport
import Testing

@Suite("LRC lyrics")
struct LyricsTests {
    typealias Expected = (lines: [(Double, String)], plain: String)

    /// Real-world shapes of LRC and what each must give: timed lines (seconds, text) and the plain text.
    static let cases: [(name: String, text: String, expected: Expected)] = [
        ("one stamp a line", "[00:01.00]One\n[00:02.50]Two\n", ([(1, "One"), (2.5, "Two")], "One\nTwo")),
        (
            "several stamps a line (a chorus)", "[00:12.00][01:30.50]Chorus\n[00:20.00]Verse",
            ([(12, "Chorus"), (20, "Verse"), (90.5, "Chorus")], "Chorus\nVerse\nChorus")
        ),
        ("positive offset: sooner", "[offset:+500]\n[00:02.00]A\n[00:00.20]B", ([(0, "B"), (1.5, "A")], "B\nA")),
        ("negative offset: later", "[00:02.00]A\n[offset:-250]", ([(2.25, "A")], "A")),
        (
            "metadata tags ignored",
            "[ar:Someone]\n[ti:A Song]\n[al:Album]\n[by:me]\n[length: 03:20]\n[re:editor]\n[00:01.00]Only line",
            ([(1, "Only line")], "Only line")
        ),
        (
            "hundredths, thousandths, tenths, no fraction",
            "[00:01.25]a\n[00:02.125]b\n[00:03.5]c\n[00:04]d\n[00:05:50]e",
            ([(1.25, "a"), (2.125, "b"), (3.5, "c"), (4, "d"), (5.5, "e")], "a\nb\nc\nd\ne")
        ),
        (
            "minutes of 60 and more", "[75:00.00]late\n[123:04.00]later",
            ([(4500, "late"), (7384, "later")], "late\nlater")
        ),
        (
            "unsorted lines, stable for equal times", "[00:03.00]c\n[00:01.00]a1\n[00:02.00]b\n[00:01.00]a2",
            ([(1, "a1"), (1, "a2"), (2, "b"), (3, "c")], "a1\na2\nb\nc")
        ),
        (
            "blank lines and timed blanks", "\n\n[00:01.00]a\n\n   \n[00:02.00]\n[00:03.00]b\n\n",
            ([(1, "a"), (2, ""), (3, "b")], "a\n\nb")
        ),
        ("UTF-8 BOM", "\u{FEFF}[00:01.00]Grüße", ([(1, "Grüße")], "Grüße")),
        (
            "CRLF and lone CR", "[00:01.00]a\r\n[00:02.00]b\r[00:03.00]c\r\n",
            ([(1, "a"), (2, "b"), (3, "c")], "a\nb\nc")
        ),
        (
            "word-level stamps stripped", "[00:01.00]<00:01.00>Hello <00:01.50>world <00:02.00>",
            ([(1, "Hello world")], "Hello world")
        ),
        ("a < that is no stamp stays", "[00:01.00]1 <3 you <b>", ([(1, "1 <3 you <b>")], "1 <3 you <b>")),
        (
            "invalid lines skipped",
            "[00:01.00]good\n[00:61.00]bad seconds\n[xx:01.00]bad\n[00:02.00 unclosed\nno stamp\n[00:03.00]good too",
            ([(1, "good"), (3, "good too")], "good\ngood too")
        ),
        ("a bracket word is text", "[00:01.00][Chorus] la la", ([(1, "[Chorus] la la")], "[Chorus] la la")),
        ("control characters dropped", "[00:01.00]a\u{0}b\u{1B}[31mc\td", ([(1, "ab[31mc d")], "ab[31mc d")),
        ("plain text: unsynced", "First line\n\n\nSecond verse\r\n", ([], "First line\n\nSecond verse")),
        ("plain text with a bracket", "[Verse 1]\nWords", ([], "[Verse 1]\nWords")),
        ("only metadata", "[ar:Someone]\n[ti:Song]\n", ([], "")),
        ("empty", "", ([], "")),
    ]

    @Test(arguments: cases.indices)
    func parsesRealWorldShapes(_ index: Int) {
        let (name, text, expected) = Self.cases[index]
        let lyrics = Lyrics.parse(text)
        let lines = lyrics.lines.map {
            (Double($0.time.components.seconds) + Double($0.time.components.attoseconds) / 1e18, $0.text)
        }
        #expect(lines.map(\.0) == expected.lines.map(\.0), "\(name): times")
        #expect(lines.map(\.1) == expected.lines.map(\.1), "\(name): texts")
        #expect(lyrics.plainText == expected.plain, "\(name): plain text")
        #expect(lyrics.isTimed == !expected.lines.isEmpty, "\(name)")
    }

    @Test func theLineIndexIsTheLastLineStarted() {
        let lyrics = Lyrics.parse("[00:01.00]a\n[00:02.00]b\n[00:02.00]b2\n[00:05.00]c")
        let probes: [(Duration, Int)] = [
            (.zero, -1), (.milliseconds(999), -1), (.seconds(1), 0), (.milliseconds(1999), 0), (.seconds(2), 2),
            (.seconds(4), 2), (.seconds(5), 3), (.seconds(500), 3),
        ]
        for (position, index) in probes {
            #expect(lyrics.lineIndex(at: position) == index, "at \(position)")
        }
        #expect(lyrics.nextChange(after: .zero) == .seconds(1))
        #expect(lyrics.nextChange(after: .seconds(2)) == .seconds(5))
        #expect(lyrics.nextChange(after: .seconds(5)) == nil)
        #expect(Lyrics.parse("plain").lineIndex(at: .seconds(10)) == -1)
        #expect(Lyrics().lineIndex(at: .zero) == -1)
    }

    @Test func repeatedStampsAreCapped() {
        let stamps = String(repeating: "[00:01.00]", count: Lyrics.maximumLines + 10)
        #expect(Lyrics.parse(stamps + "la").lines.count == Lyrics.maximumLines)
    }

    @Test func aSidecarFileIsFoundAndDecoded() throws {
        let folder = try TemporaryDirectory(prefix: "spool-lyrics")
        let track = folder.url.appendingPathComponent("01 Song.flac")
        #expect(LyricsFile.sidecarPath(for: track) == folder.url.path + "/01 Song.lrc")
        #expect(LyricsFile.sidecarPath(for: URL(string: "https://example.org/a.mp3")!) == nil)
        #expect(LyricsFile.read(atPath: folder.url.path + "/01 Song.lrc") == nil)
        // Invalid UTF-8 becomes U+FFFD; UTF-16 with a BOM is decoded.
        try Data([0x5B, 0x30, 0x30, 0x3A, 0x30, 0x31, 0x5D, 0x61, 0xFF, 0x62]).write(
            to: URL(fileURLWithPath: folder.url.path + "/01 Song.lrc"))
        #expect(LyricsFile.read(atPath: folder.url.path + "/01 Song.lrc") == "[00:01]a\u{FFFD}b")
        #expect(
            LyricsFile.decode([0xFF, 0xFE] + Array("[00:01]é".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }))
                == "[00:01]é")
        #expect(
            LyricsFile.decode([0xFE, 0xFF] + Array("x".utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })) == "x")
        // A huge file is read up to the cap.
        try Data(repeating: 0x61, count: LyricsFile.maximumSize + 100).write(
            to: URL(fileURLWithPath: folder.url.path + "/big.lrc"))
        #expect(LyricsFile.read(atPath: folder.url.path + "/big.lrc")?.utf8.count == LyricsFile.maximumSize)
    }

    @Test(arguments: [
        ("[00:01.00]Hello\n", true),
        ("Plain words, no stamps", true),
        ("\u{FEFF}[ti:Song]\r\n[00:01]a", true),
        ("  <!DOCTYPE html><html><body>Not Found</body></html>", false),
        ("<html><head><title>404</title></head></html>", false),
        ("<?xml version=\"1.0\"?><Error/>", false),
        ("", false),
    ])
    func onlyTextIsTakenAsALyricsFile(text: String, isLyrics: Bool) {
        #expect(LyricsFile.isText(Array(text.utf8)) == isLyrics)
    }

    @Test func audioAndUTF16AreToldApart() {
        let wave = Array("RIFF".utf8) + [0x24, 0x08, 0, 0] + Array("WAVEfmt ".utf8)
        #expect(!LyricsFile.isText(wave), "audio from a server that ignores the path")
        #expect(
            LyricsFile.isText([0xFF, 0xFE] + Array("[00:01]a".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })))
    }
}
