import ByteSourceAPI
import CacheFilling
import Fetcher
import Foundation
import MediaSource
import RangeCache
import TestSupport
import Testing

@Suite("Which byte source a URL gets")
struct SourceChooserTests {
    @Test(arguments: [
        ("file:///music/a.flac", SourceChooser.Route.file),
        ("FILE:///music/a.flac", .file),
        ("http://example.org/a.mp3", .http),
        ("https://example.org/a.mp3?token=1", .http),
        ("HTTPS://example.org/a.mp3", .http),
        ("ftp://example.org/a.mp3", .unsupported(scheme: "ftp")),
        ("smb://nas/a.mp3", .unsupported(scheme: "smb")),
        ("a.mp3", .unsupported(scheme: "")),
    ])
    func routeDependsOnTheScheme(url: String, route: SourceChooser.Route) throws {
        let url = try #require(URL(string: url))
        #expect(SourceChooser.route(for: url) == route)
    }

    private func chooser(cache: RangeCache?, playback: PlaybackSources = PlaybackSources()) -> SourceChooser {
        SourceChooser(
            cache: cache, namespace: "test", fetcher: Fetcher(userAgent: "Spool/test"),
            revalidator: Revalidator(interval: .seconds(3600)), readAhead: nil, playback: playback)
    }

    @Test func httpWithTheCacheOpenReadsThroughItsEntryAndIsRegistered() throws {
        let directory = try TemporaryDirectory(prefix: "spool-cache")
        let cache = try RangeCache(directory: directory.url)
        defer { cache.close() }
        let playback = PlaybackSources()
        let url = try #require(URL(string: "http://127.0.0.1:9/a.mp3"))
        let source = try chooser(cache: cache, playback: playback).source(for: url)
        defer { source.close() }
        #expect(source is HTTPByteSource)
        #expect(playback.source(for: url) === source)
    }

    @Test func httpWithoutACacheStreamsFromMemory() async throws {
        let origin = try FaultOrigin()
        let body = patternedBody(100_000)
        origin.serve(OriginResource(body, etag: "\"v1\""), at: "/a.mp3")
        let source = try #require(try chooser(cache: nil).source(for: origin.url(for: "/a.mp3")) as? HTTPByteSource)
        defer { source.close() }
        let opened = DispatchSemaphore(value: 0)
        source.open { _ in opened.signal() }
        #expect(opened.wait(timeout: .now() + 10) == .success)
        // The bytes arrive in memory, not on a disk: nothing waits for them there.
        let arrived = await eventually(timeout: 10) { source.bytesInMemory == Int64(body.count) }
        #expect(arrived, "\(source.bytesInMemory) bytes in memory")
        #expect(source.read(at: 0, maxLength: 16) {} == .data(body.prefix(16)))
    }

    /// A memory-only source (no cache) follows the metered rules like a cached one: those in
    /// force when it is made, and every later switch.
    @Test func httpWithoutACacheIsUnderTheMeteredRules() throws {
        let playback = PlaybackSources()
        playback.setMetered(true)
        let url = try #require(URL(string: "https://127.0.0.1:9/a.mp3"))
        let source = try #require(try chooser(cache: nil, playback: playback).source(for: url) as? HTTPByteSource)
        defer { source.close() }
        #expect(source.isMetered)
        playback.setMetered(false)
        #expect(!source.isMetered)
    }

    @Test func aFileURLIsReadInPlace() throws {
        let source = try chooser(cache: nil).source(for: URL(fileURLWithPath: "/nonexistent/a.flac"))
        #expect(source is FileByteSource)
    }

    @Test func anUnsupportedSchemeIsRefusedForGood() async throws {
        let url = try #require(URL(string: "ftp://example.org/a.mp3"))
        #expect(throws: MediaSourceError.gone("unsupported URL scheme 'ftp'")) {
            try chooser(cache: nil).source(for: url)
        }
    }
}
