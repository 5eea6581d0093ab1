import Foundation
import PlayerCore
import TestSupport
import Testing

@Suite("Saved playlists on disk")
struct PlaylistLibraryTests {
    @Test func anExtendedM3UNamesEachTrackAndItsLengthWhenKnown() {
        let text = PlaylistLibrary.m3u([
            PlaylistEntry(
                url: URL(fileURLWithPath: "/music/a b.flac"), title: "Song – Band", duration: .milliseconds(61_600)),
            PlaylistEntry(url: URL(string: "https://example.org/ep.mp3")!, title: "Two\nlines"),
            PlaylistEntry(url: URL(string: "https://example.org/plain.mp3")!),
        ])
        #expect(
            text == """
                #EXTM3U
                #EXTINF:62,Song – Band
                /music/a b.flac
                #EXTINF:-1,Two lines
                https://example.org/ep.mp3
                https://example.org/plain.mp3

                """)
        let read = PlaylistParser.parse(text, base: URL(fileURLWithPath: "/lists/x.m3u"))
        #expect(
            read.map(\.url.absoluteString) == [
                "file:///music/a%20b.flac", "https://example.org/ep.mp3", "https://example.org/plain.mp3",
            ])
        #expect(read.map(\.title) == ["Song – Band", "Two lines", nil], "read back as written")
    }

    @Test(arguments: ["", "a/b", ".hidden", "..", "x\0y"])
    func aNameThatIsNoPlainFileNameIsRefused(name: String) {
        #expect(throws: PlaylistError.self) { try PlaylistLibrary.check(name) }
    }

    @Test func spoolsOwnAndTheMusicFoldersAreListedTogetherAndOnlySpoolsAreWritten() throws {
        let root = try TemporaryDirectory()
        let music = root.url.appendingPathComponent("Music/Playlists")
        try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
        try Data("#EXTM3U\n/a.flac\n".utf8).write(to: music.appendingPathComponent("Road trip.m3u8"))
        try Data("/b.flac\n".utf8).write(to: music.appendingPathComponent("mix.m3u"))
        try Data("not a playlist".utf8).write(to: music.appendingPathComponent("notes.txt"))
        let library = PlaylistLibrary(folder: root.url.appendingPathComponent("own"), musicFolder: music)
        #expect(library.list().map(\.name) == ["mix", "Road trip"])
        #expect(library.playlist(named: "mix")?.isSpools == false)

        try library.add([PlaylistEntry(url: URL(fileURLWithPath: "/c.flac"))], to: "mix")
        #expect(library.playlist(named: "mix")?.isSpools == true, "Spool's copy wins over the music folder's")
        let copied = try String(contentsOf: root.url.appendingPathComponent("own/mix.m3u"), encoding: .utf8)
        #expect(copied == "#EXTM3U\n/b.flac\n/c.flac\n")
        #expect(
            try String(contentsOf: music.appendingPathComponent("mix.m3u"), encoding: .utf8) == "/b.flac\n",
            "never written in place")
        #expect(try library.remove("Road trip") == false, "the music folder's file is the user's")
        #expect(try library.remove("mix") == true)
        #expect(library.playlist(named: "mix")?.isSpools == false, "the music folder's shows again")
    }
}
