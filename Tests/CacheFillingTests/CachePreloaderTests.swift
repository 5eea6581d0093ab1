import CacheFilling
import EngineAPI
import Fetcher
import Foundation
import MediaSource
import PlayerCore
import RangeCache
import TestSupport
import Testing

@Suite("Preloading heads into the cache", .serialized)
struct CachePreloaderTests {
    let directory: TemporaryDirectory
    let cache: RangeCache
    let fetcher = Fetcher(userAgent: "Spool/test")
    let origin: FaultOrigin
    let body = patternedBody(1_000_000)
    let url: URL

    init() throws {
        directory = try TemporaryDirectory(prefix: "spool-preload")
        cache = try RangeCache(directory: directory.url)
        origin = try FaultOrigin()
        origin.serve(OriginResource(body, etag: "\"v1\""), at: "/a.mp3")
        url = origin.url(for: "/a.mp3")
    }

    private func plan(prefix: Int64, tail: Int64) -> PreloadPlan {
        var plan = PreloadPlan()
        plan.triggered = true
        plan.items = [.init(id: TrackID(1), url: url, stage: .fetchingHead, prefix: prefix, tail: tail)]
        return plan
    }

    /// Applies `plan` and waits until its one job ended.
    private func run(_ plan: PreloadPlan, on preloader: CachePreloader) -> Bool {
        let ended = DispatchSemaphore(value: 0)
        preloader.setChangeHandler { ended.signal() }
        preloader.apply(plan)
        return ended.wait(timeout: .now() + 10) == .success
    }

    private func preloader() -> CachePreloader {
        CachePreloader(
            cache: cache, fetcher: fetcher, namespace: RangeCache.defaultNamespace, playback: PlaybackSources(),
            revalidator: Revalidator(interval: .seconds(3600)), concurrency: 1)
    }

    @Test func thePrefixThenTheTailAreFetchedTheSecondWithIfRange() throws {
        let preloader = preloader()
        defer { preloader.stop() }
        #expect(run(plan(prefix: 65_536, tail: 16_384), on: preloader))
        let requests = try origin.requests(atLeast: 2)
        #expect(requests.map(\.range) == ["bytes=0-65535", "bytes=983616-999999"])
        #expect(requests.map(\.ifRange) == [nil, "\"v1\""])
        let state = try #require(preloader.preparedTracks().first)
        #expect(state.headReady && state.error == nil)
        #expect(state.download.length == 1_000_000)
        #expect(state.download.cachedBytes == 65_536 + 16_384)
    }

    @Test func aNewVersionEmptiesTheEntryAndItsBytesFromTheStartReplaceTheOld() throws {
        let preloader = preloader()
        defer { preloader.stop() }
        #expect(run(plan(prefix: 65_536, tail: 0), on: preloader))
        let newBody = Data(body.reversed())
        origin.replace("/a.mp3", with: OriginResource(newBody, etag: "\"v2\""))
        #expect(run(plan(prefix: 131_072, tail: 0), on: preloader))
        let requests = try origin.requests(atLeast: 2)
        #expect(requests.last?.ifRange == "\"v1\"")
        let entry = try cache.entry(for: url)
        defer { entry.close() }
        #expect(entry.metadata.validator.etag == "\"v2\"")
        let cached = try #require(entry.read(at: 0, maxLength: 131_072))
        #expect(cached.count == 131_072)
        #expect(firstDifference(cached, newBody.prefix(131_072)) == nil, "no byte of the old version is kept")
    }

    @Test func aNoStoreResponseIsNotPreloadedAndNoByteReachesTheDisk() throws {
        origin.serve(OriginResource(body, etag: "\"v1\"", headers: ["Cache-Control": "no-store"]), at: "/a.mp3")
        let preloader = preloader()
        defer { preloader.stop() }
        #expect(run(plan(prefix: 65_536, tail: 16_384), on: preloader))
        let state = try #require(preloader.preparedTracks().first)
        #expect(state.error == "not preloaded: the origin forbids storing it")
        #expect(!state.headReady)
        #expect(state.download.cachedBytes == 0)
    }

    @Test func anOriginWithoutRangesGivesTheFirstAnswerOnlyAndThePreloadSaysWhy() throws {
        origin.serve(OriginResource(body, etag: "\"v1\""), at: "/a.mp3", faults: OriginFaults(ignoresRange: true))
        let preloader = preloader()
        defer { preloader.stop() }
        #expect(run(plan(prefix: 65_536, tail: 16_384), on: preloader))
        let state = try #require(preloader.preparedTracks().first)
        #expect(state.error == "the origin ignores Range requests: the rest comes when it plays")
        #expect(try origin.requests(atLeast: 1).count == 1, "no request for a tail the origin cannot send alone")
        let entry = try cache.entry(for: url)
        defer { entry.close() }
        let cached = try #require(entry.read(at: 0, maxLength: 65_536))
        #expect(firstDifference(cached, body.prefix(65_536)) == nil)
    }

    @Test func aHeadAlreadyCachedStartsNoPreload() throws {
        let preloader = preloader()
        defer { preloader.stop() }
        #expect(run(plan(prefix: 65_536, tail: 16_384), on: preloader))
        let before = try origin.requests(atLeast: 2).count
        preloader.apply(plan(prefix: 65_536, tail: 16_384))
        // A job is registered within apply: checked at once, a request it started later counts too.
        #expect(preloader.download(of: url).downloading == false, "a preload was started for a head that is here")
        #expect(preloader.preparedTracks().first?.headReady == true)
        #expect(origin.requestsBegun == before)
    }
}
