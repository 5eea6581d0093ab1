import Foundation
import PlayerCore
import TestSupport
import Testing

@Suite("Playlists and directories")
struct TrackSourcesTests {
    let base = URL(string: "http://127.0.0.1:8080/lists/mix.m3u8")!

    /// (The absolute path is dropped: a list from the network names only http(s) addresses.)
    @Test func m3uEntriesKeepTheirEXTINFTitlesAndResolveRelativeToThePlaylist() {
        let text = """
            #EXTM3U\r
            #EXTINF:123,Artist - First\r
            one.mp3\r
            \r
            # a comment
            ../other/two.flac
            https://cdn.example/three.ogg?sig=x
            /music/four.wav
            """
        let items = PlaylistParser.parse(text, base: base)
        #expect(
            items.map(\.url.absoluteString) == [
                "http://127.0.0.1:8080/lists/one.mp3", "http://127.0.0.1:8080/other/two.flac",
                "https://cdn.example/three.ogg?sig=x",
            ])
        #expect(items.map(\.title) == ["Artist - First", nil, nil])
    }

    @Test func plsEntriesAreOrderedByNumberWithTitles() {
        let text = """
            [playlist]
            File2=b.mp3
            Title2=Second
            File1=http://127.0.0.1:1/a.mp3
            NumberOfEntries=2
            Version=2
            """
        let items = PlaylistParser.parse(text, base: URL(string: "http://127.0.0.1:1/x.pls")!)
        #expect(items.map(\.url.absoluteString) == ["http://127.0.0.1:1/a.mp3", "http://127.0.0.1:1/b.mp3"])
        #expect(items.map(\.title) == [nil, "Second"])
    }

    @Test func aDirectoryQueuesItsAudioFilesInNaturalOrder() async throws {
        let dir = try TemporaryDirectory()
        for name in ["10 ten.mp3", "2 two.flac", "1 one.ogg", "cover.jpg", "notes.txt"] {
            try Data().write(to: dir.file(name))
        }
        try FileManager.default.createDirectory(at: dir.file("cd2"), withIntermediateDirectories: true)
        try Data().write(to: dir.file("cd2/1 more.opus"))
        let resolver = TrackResolver { _ in Data() }
        let items = try await resolver.resolve(dir.path)
        #expect(items.map(\.url.lastPathComponent) == ["1 one.ogg", "2 two.flac", "10 ten.mp3", "1 more.opus"])
    }

    @Test func aRemotePlaylistIsFetchedAndALocalOneRead() async throws {
        let resolver = TrackResolver { url in
            #expect(url.absoluteString == "http://127.0.0.1:9/list.m3u")
            return Data("#EXTM3U\n#EXTINF:-1,Live\nstream.mp3\n".utf8)
        }
        let remote = try await resolver.resolve("http://127.0.0.1:9/list.m3u")
        #expect(remote.map(\.url.absoluteString) == ["http://127.0.0.1:9/stream.mp3"])
        #expect(remote.first?.title == "Live")

        let dir = try TemporaryDirectory()
        try Data("a.mp3\nsub/b.mp3\n".utf8).write(to: dir.file("local.m3u"))
        let local = try await resolver.resolve(dir.file("local.m3u").absoluteString)
        #expect(local.map(\.url.path) == [dir.file("a.mp3").path, dir.file("sub/b.mp3").path])
    }

    @Test func badInputsGetClearErrors() async throws {
        let resolver = TrackResolver { _ in throw URLError(.cannotConnectToHost) }
        await #expect(throws: TrackSourceError.self) { try await resolver.resolve("gopher://x/y") }
        await #expect(throws: TrackSourceError.self) { try await resolver.resolve("/nonexistent/spool/file.mp3") }
        await #expect(throws: TrackSourceError.self) { try await resolver.resolve("http://127.0.0.1:9/x.pls") }
        let empty = try TemporaryDirectory()
        await #expect(throws: TrackSourceError.self) { try await resolver.resolve(empty.path) }
    }
}
