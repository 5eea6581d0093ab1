import CacheFilling
import Fetcher
import Foundation
import MediaSource
import RangeCache
import TestSupport
import Testing

@Suite("The playing sources, by URL")
struct PlaybackSourcesTests {
    @Test func theNewestSourceOfAURLIsFoundWhileTheEngineHoldsIt() throws {
        let directory = try TemporaryDirectory(prefix: "spool-sources")
        let cache = try RangeCache(directory: directory.url)
        defer { cache.close() }
        let fetcher = Fetcher(userAgent: "Spool/test")
        let url = try #require(URL(string: "http://127.0.0.1:9/a.mp3"))
        let playback = PlaybackSources()
        let first = HTTPByteSource(url: url, entry: try cache.entry(for: url), fetcher: fetcher)
        playback.register(first, for: url)
        var second: HTTPByteSource? = HTTPByteSource(url: url, entry: try cache.entry(for: url), fetcher: fetcher)
        playback.register(try #require(second), for: url)
        #expect(playback.source(for: url) === second)
        #expect(playback.source(for: try #require(URL(string: "http://127.0.0.1:9/b.mp3"))) == nil)
        second = nil
        #expect(playback.source(for: url) == nil, "a released source is not kept alive")
        withExtendedLifetime(first) {}
    }
}
