import Foundation
import PlayerCore
import Testing

@Suite("Checking what the user asks to play")
struct TrackInputTests {
    /// Inputs that are accepted, and what they are taken for.
    static let accepted: [(String, TrackInput)] = [
        ("http://example.org/a.mp3", .remote(URL(string: "http://example.org/a.mp3")!)),
        (
            "HTTPS://Example.org:8443/a%20b.mp3?sig=x#t",
            .remote(URL(string: "HTTPS://Example.org:8443/a%20b.mp3?sig=x#t")!)
        ),
        ("http://user:pw@127.0.0.1:8080/x", .remote(URL(string: "http://user:pw@127.0.0.1:8080/x")!)),
        ("http://[::1]:8080/x.flac", .remote(URL(string: "http://[::1]:8080/x.flac")!)),
        ("http://bücher.example/x.ogg", .remote(URL(string: "http://bücher.example/x.ogg")!)),
        ("http://example.org", .remote(URL(string: "http://example.org")!)),
        ("file:///music/a%20b.flac", .local(path: "/music/a b.flac")),
        ("file://localhost/music/a.flac", .local(path: "/music/a.flac")),
        ("/music/My Song.flac", .local(path: "/music/My Song.flac")),
        ("relative/song.mp3", .local(path: "relative/song.mp3")),
        ("~/Music", .local(path: "~/Music")),
        ("talk: part 1.mp3", .local(path: "talk: part 1.mp3")),
    ]

    /// Inputs that are refused, and a word the one-line reason must contain.
    static let refused: [(String, String)] = [
        ("", "empty"),
        ("http://", "no host"),
        ("https:///path.mp3", "no host"),
        ("http://:8080/a.mp3", "no host"),
        ("http://user@/a.mp3", "no host"),
        ("http://exa mple.org/a.mp3", "%20"),
        ("http://example.org/a b.mp3", "space"),
        ("http://example.org/a\tb.mp3", "control character"),
        ("/music/a\u{7}.mp3", "control character"),
        ("http://example.org/\u{85}", "control character"),
        ("http:example.org/a.mp3", "start with http://"),
        ("http:/example.org/a.mp3", "start with http://"),
        ("gopher://example.org/a.mp3", "not a supported URL"),
        ("ftp://example.org/a.mp3", "not a supported URL"),
        ("http://example.org:99999/a.mp3", "port"),
        ("http://example.org:8o/a.mp3", "port"),
        ("http://exa<mple.org/a.mp3", "invalid host"),
        ("http://.example.org/", "invalid host"),
        ("http://[::1/a.mp3", "unclosed"),
        ("http://[xyz]/a.mp3", "IPv6"),
        ("file://", "no file path"),
        ("file:///", "no file path"),
        ("file://server/share/a.mp3", "another machine"),
        (String(repeating: "\u{1F3B5}", count: 250_000), "longer than"),
        ("http://example.org/" + String(repeating: "a", count: TrackInput.maximumLength), "longer than"),
    ]

    @Test(arguments: accepted.indices)
    func acceptedInputsAreClassified(_ index: Int) throws {
        let (text, expected) = Self.accepted[index]
        #expect(try TrackInput.parse(text).get() == expected, "\(text)")
    }

    @Test(arguments: refused.indices)
    func refusedInputsSayWhyInOneLine(_ index: Int) {
        let (text, word) = Self.refused[index]
        guard case .failure(let error) = TrackInput.parse(text) else {
            Issue.record("'\(text)' was accepted")
            return
        }
        #expect(error.description.contains(word), "'\(text)': \(error.description)")
        #expect(!error.description.contains("\n") && !error.description.unicodeScalars.contains { $0.value < 0x20 })
    }

    @Test func aLongInputIsShortenedInTheMessage() {
        guard case .failure(let error) = TrackInput.parse("gopher://" + String(repeating: "x", count: 200_000)) else {
            Issue.record("accepted")
            return
        }
        #expect(error.description.count < 300)
    }
}
