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
        ("file:///music/a.flac", true, SourceChooser.Route.file),
        ("file:///music/a.flac", false, .file),
        ("FILE:///music/a.flac", true, .file),
        ("http://example.org/a.mp3", true, .cachedHTTP),
        ("https://example.org/a.mp3?token=1", true, .cachedHTTP),
        ("HTTPS://example.org/a.mp3", true, .cachedHTTP),
        ("http://example.org/a.mp3", false, .uncachedHTTP),
        ("https://example.org/a.mp3", false, .uncachedHTTP),
        ("ftp://example.org/a.mp3", true, .unsupported(scheme: "ftp")),
        ("smb://nas/a.mp3", false, .unsupported(scheme: "smb")),
        ("a.mp3", true, .unsupported(scheme: "")),
    ])
    func routeDependsOnTheSchemeAndTheCache(url: String, cacheOpen: Bool, route: SourceChooser.Route) throws {
        let url = try #require(URL(string: url))
        #expect(SourceChooser.route(for: url, cacheOpen: cacheOpen) == route)
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
        #expect(source is CachedByteSource)
        #expect(playback.source(for: url) === source)
    }

    @Test func httpWithoutACacheStreamsFromMemory() throws {
        let url = try #require(URL(string: "https://127.0.0.1:9/a.mp3"))
        let source = try chooser(cache: nil).source(for: url)
        defer { source.close() }
        #expect(source is HTTPByteSource)
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

    @Test func anUnsupportedSchemeIsRefusedForGood() throws {
        let url = try #require(URL(string: "ftp://example.org/a.mp3"))
        #expect(throws: MediaSourceError.gone("unsupported URL scheme 'ftp'")) {
            try chooser(cache: nil).source(for: url)
        }
    }
}
