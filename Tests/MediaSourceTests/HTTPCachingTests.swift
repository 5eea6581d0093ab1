import Fetcher
import Foundation
import MediaSource
import RangeCache
import TestSupport
import Testing

/// The cached source follows the origin's caching headers (RFC 9111): a fresh copy replays with
/// no request, a `no-cache` one is checked before it plays, a `no-store` one never reaches the
/// disk, and a response that varied by request headers serves only the same headers.
@Suite("HTTP caching in the cached source", .serialized)
struct HTTPCachingTests {
    /// A revalidator that would check every play at once and hold the open briefly: whatever
    /// is not checked is left alone by the freshness rules, not by the interval.
    static func eager(wait: Duration = .milliseconds(100)) -> Revalidator {
        Revalidator(interval: .zero, wait: wait)
    }

    /// A rig whose resource goes out with `headers`, played once whole.
    private func filledRig(_ headers: [String: String], size: Int = 200_000) throws -> CacheRig {
        let rig = try CacheRig(size: size)
        rig.origin.serve(OriginResource(rig.body, etag: "\"v1\"", headers: headers), at: rig.path)
        try rig.fill()
        rig.origin.clearRequests()
        return rig
    }

    @Test func aFreshResponseReplaysWithNoRequestEvenAfterARestart() throws {
        let rig = try filledRig(["Cache-Control": "max-age=3600"])
        try rig.reopenCache()
        let source = try rig.source(revalidator: Self.eager())
        defer { source.close() }
        _ = try open(source).get()
        #expect(firstDifference(try readFully(source, at: 0, length: rig.body.count).get(), rig.body) == nil)
        #expect(rig.origin.requests().isEmpty, "fresh for an hour: \(rig.origin.requests())")
        #expect(!source.isRevalidating)
    }

    @Test func aStaleResponseIsCheckedAndTheNotModifiedRenewsItsLifetime() async throws {
        let rig = try filledRig(["Cache-Control": "max-age=0"])
        // The origin's 304 now says the copy is good for an hour.
        rig.origin.serve(
            OriginResource(rig.body, etag: "\"v1\"", headers: ["Cache-Control": "max-age=3600"]), at: rig.path)
        do {
            let source = try rig.source(revalidator: Self.eager(wait: .seconds(5)))
            _ = try open(source).get()
            // The play went on from the cache beside the check; its answer renews the copy.
            #expect(await eventually(timeout: 10) { !source.isRevalidating })
            source.close()
        }
        #expect(try rig.origin.requests(atLeast: 1).map(\.status) == [304])
        rig.origin.clearRequests()
        let again = try rig.source(revalidator: Self.eager())
        defer { again.close() }
        _ = try open(again).get()
        #expect(firstDifference(try readFully(again, at: 0, length: rig.body.count).get(), rig.body) == nil)
        #expect(rig.origin.requests().isEmpty, "the 304 renewed it: \(rig.origin.requests())")
    }

    @Test func noCacheIsCheckedBeforeUseEvenPastTheDeadline() throws {
        let rig = try filledRig(["Cache-Control": "no-cache, max-age=3600"])
        let newer = Data(rig.body.reversed())
        rig.origin.serve(
            OriginResource(newer, etag: "\"v2\"", headers: ["Cache-Control": "no-cache"]), at: rig.path,
            faults: OriginFaults(firstByteLatency: 0.6))
        let source = try rig.source(revalidator: Self.eager(wait: .milliseconds(50)))
        defer { source.close() }
        let (opened, seconds) = timedOpen(source)
        _ = try opened.get()
        #expect(seconds >= 0.5, "the open went on after \(seconds) s, before the origin answered")
        #expect(
            firstDifference(try readFully(source, at: 0, length: newer.count).get(), newer) == nil,
            "the check's new version plays, not the stored copy")
        let check = try #require(try rig.origin.requests(atLeast: 1).first)
        #expect(check.ifNoneMatch == "\"v1\"")
    }

    @Test func noCacheStillPlaysTheStoredCopyWhenTheOriginIsUnreachable() throws {
        let rig = try filledRig(["Cache-Control": "no-cache"])
        rig.origin.stop()
        let source = try rig.source(revalidator: Self.eager(wait: .milliseconds(50)))
        defer { source.close() }
        _ = try open(source).get()  // no-cache holds the open past any deadline: only the refusal opens it
        #expect(firstDifference(try readFully(source, at: 0, length: rig.body.count).get(), rig.body) == nil)
    }

    @Test(arguments: [["Cache-Control": "no-store"], ["Cache-Control": "max-age=60", "Vary": "*"]])
    func aResponseThatMayNotBeStoredPlaysFromMemoryAndLeavesNothingOnDisk(headers: [String: String]) throws {
        let rig = try CacheRig(size: 400_000, faults: OriginFaults(bytesPerSecond: 4_000_000))
        rig.origin.serve(OriginResource(rig.body, etag: "\"v1\"", headers: headers), at: rig.path)
        for play in 1...2 {
            let source = try rig.source(revalidator: Self.eager())
            _ = try open(source).get()
            let read = try readFully(source, at: 0, length: rig.body.count).get()
            #expect(firstDifference(read, rig.body) == nil, "play \(play)")
            #expect(source.bytesInMemory == Int64(rig.body.count))
            #expect(dataFiles(rig).isEmpty, "play \(play) wrote \(dataFiles(rig))")
            source.close()
        }
        #expect(try rig.settledBytesSent() == 2 * rig.body.count, "nothing kept, so each play fetches it")
        #expect(rig.cache.stats.bytesFromNetwork == 0)
        try rig.reopenCache()
        #expect(rig.cache.stats.entries == 0)
    }

    @Test func aStoredCopyIsDroppedWhenTheOriginSaysNoStore() async throws {
        let rig = try filledRig(["Cache-Control": "max-age=0"])
        #expect(!dataFiles(rig).isEmpty)
        rig.origin.serve(
            OriginResource(rig.body, etag: "\"v2\"", headers: ["Cache-Control": "no-store"]), at: rig.path,
            faults: OriginFaults(firstByteLatency: 0.3))
        do {
            let source = try rig.source(revalidator: Self.eager(wait: .seconds(5)))
            _ = try open(source).get()
            #expect(
                firstDifference(try readFully(source, at: 0, length: rig.body.count).get(), rig.body) == nil,
                "the stored copy plays while the check travels")
            #expect(await eventually(timeout: 10) { !source.isRevalidating })
            source.close()
        }
        try rig.reopenCache()
        #expect(rig.cache.stats.entries == 0, "the old copy and the new one both stay off disk")
    }

    @Test func aVaryingResponseServesOnlyRequestsWithTheSameHeaders() throws {
        let rig = try filledRig(["Cache-Control": "max-age=3600", "Vary": "User-Agent"])
        let same = try rig.source(revalidator: Self.eager())
        _ = try open(same).get()
        same.close()
        #expect(rig.origin.requests().isEmpty, "same User-Agent: the stored copy serves")
        let other = Fetcher(userAgent: "Spool/other")
        let source = HTTPByteSource(
            url: rig.url, entry: try rig.cache.entry(for: rig.url), fetcher: other, revalidator: Self.eager())
        defer { source.close() }
        _ = try open(source).get()
        #expect(firstDifference(try readFully(source, at: 0, length: rig.body.count).get(), rig.body) == nil)
        let log = try rig.origin.requests(atLeast: 1)
        #expect(log.first?.ifNoneMatch == nil && log.first?.ifRange == nil, "fetched anew: \(log)")
    }

    /// The data files in the rig's cache directory (the index lives beside them).
    private func dataFiles(_ rig: CacheRig) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: rig.directory.url.appendingPathComponent("data").path))
            ?? []
    }
}
