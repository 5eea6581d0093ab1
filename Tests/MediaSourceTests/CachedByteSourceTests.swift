import Fetcher
import Foundation
import MediaSource
import RangeCache
import TestSupport
import Testing

/// A cache directory, a fetcher and a fault origin serving one resource.
final class CacheRig {
    let directory: TemporaryDirectory
    let origin: FaultOrigin
    let fetcher: Fetcher
    let body: Data
    let path = "/track.flac"
    private(set) var cache: RangeCache

    init(
        size: Int = 1_500_000, faults: OriginFaults = OriginFaults(),
        fetcher: Fetcher = Fetcher(userAgent: "Spool/test"),
        storage: (any CacheStorage)? = nil, syncBatchBytes: Int64? = nil
    ) throws {
        self.fetcher = fetcher
        directory = try TemporaryDirectory(prefix: "spool-cache")
        origin = try FaultOrigin()
        body = patternedBody(size)
        origin.serve(OriginResource(body, etag: "\"v1\""), at: path, faults: faults)
        var configuration = RangeCache.Configuration()
        if let storage { configuration.storage = storage }
        if let syncBatchBytes {
            // As tight as the cache allows: a writer waits as soon as a second batch is due.
            configuration.syncBatchBytes = syncBatchBytes
            configuration.maximumUnsyncedBytes = syncBatchBytes
        }
        cache = try RangeCache(directory: directory.url, configuration: configuration)
    }

    // Closed before the directory goes, so its checks never meet a vanished index.
    deinit { cache.close() }

    var url: URL { origin.url(for: path) }

    func source(
        url: URL? = nil, revalidator: Revalidator? = nil, readAhead: HTTPByteSource.ReadAheadPolicy? = nil
    ) throws -> HTTPByteSource {
        let url = url ?? self.url
        return HTTPByteSource(
            url: url, entry: try cache.entry(for: url), fetcher: fetcher, revalidator: revalidator,
            readAhead: readAhead)
    }

    /// Plays the whole resource once so the entry is complete.
    func fill() throws {
        let source = try source()
        _ = try open(source).get()
        _ = try readFully(source, at: 0, length: body.count).get()
        source.close()
        // The origin logs a response after its last byte, which can come after the client has
        // it all: settled, a test that clears the log next never finds the fill's request in it.
        _ = try origin.settledRequests()
    }

    /// Closes the cache and opens it again, as a restarted daemon would.
    func reopenCache() throws {
        cache.close()
        cache = try RangeCache(directory: directory.url)
    }

    /// Body bytes the origin sent so far.
    var bytesSent: Int { origin.requests().reduce(0) { $0 + $1.bodyBytesSent } }

    /// Body bytes the origin sent, once every response under way has ended: the origin logs a
    /// response after its last byte, which a client that read it all may see before that.
    func settledBytesSent() throws -> Int {
        try origin.settledRequests().reduce(0) { $0 + $1.bodyBytesSent }
    }
}

@Suite("Cached byte source", .serialized)
struct CachedByteSourceTests {
    @Test func aSecondPlayReadsEverythingFromTheCacheWithNoRequest() throws {
        let rig = try CacheRig()
        do {
            let source = try rig.source()
            #expect(try open(source).get().length == Int64(rig.body.count))
            let read = try readFully(source, at: 0, length: rig.body.count).get()
            #expect(firstDifference(read, rig.body) == nil)
            source.close()
        }
        let requestsAfterFirstPlay = try rig.origin.requests(atLeast: 1).count
        try rig.reopenCache()
        let again = try rig.source()
        defer { again.close() }
        #expect(try open(again).get().length == Int64(rig.body.count))
        #expect(firstDifference(try readFully(again, at: 0, length: rig.body.count).get(), rig.body) == nil)
        #expect(rig.origin.requests().count == requestsAfterFirstPlay, "a replay must not touch the network")
        #expect(try rig.settledBytesSent() == rig.body.count, "every byte fetched exactly once")
    }

    @Test func anInterruptedDownloadContinuesFromItsFirstMissingByteWithIfRange() throws {
        let rig = try CacheRig(faults: OriginFaults(bytesPerSecond: 2_000_000))
        do {
            let source = try rig.source()
            _ = try open(source).get()
            _ = try readFully(source, at: 0, length: 300_000).get()
            source.close()  // the daemon stops mid-download
        }
        try rig.reopenCache()
        let cachedBefore = try rig.cache.entry(for: rig.url).contiguousLength(from: 0)
        #expect(cachedBefore >= 300_000 && cachedBefore < Int64(rig.body.count))
        rig.origin.setFaults(OriginFaults(), for: rig.path)
        rig.origin.clearRequests()
        let source = try rig.source()
        defer { source.close() }
        _ = try open(source).get()
        #expect(firstDifference(try readFully(source, at: 0, length: rig.body.count).get(), rig.body) == nil)
        let resumed = try #require(rig.origin.requests(atLeast: 1).first)
        #expect(resumed.range?.hasPrefix("bytes=\(cachedBefore)-") == true, "\(resumed)")
        #expect(resumed.ifRange == "\"v1\"")
        #expect(resumed.status == 206)
    }

    @Test func aFileChangedOnTheServerIsNeverSplicedWithTheOldCopy() throws {
        let rig = try CacheRig(faults: OriginFaults(bytesPerSecond: 2_000_000))
        do {
            let source = try rig.source()
            _ = try open(source).get()
            _ = try readFully(source, at: 0, length: 200_000).get()
            source.close()
        }
        let newer = Data(patternedBody(rig.body.count).reversed())
        rig.origin.replace(rig.path, with: OriginResource(newer, etag: "\"v2\""))
        rig.origin.setFaults(OriginFaults(), for: rig.path)
        try rig.reopenCache()
        // The track opened from the cache discovers the change when it continues.
        let stale = try rig.source()
        _ = try open(stale).get()
        let result = readFully(stale, at: 0, length: rig.body.count)
        if case .success(let bytes) = result {
            #expect(firstDifference(bytes, rig.body) == nil || firstDifference(bytes, newer) == nil, "spliced bytes")
        }
        stale.close()
        // Reopened, it plays the new version, whole.
        let fresh = try rig.source()
        defer { fresh.close() }
        _ = try open(fresh).get()
        #expect(firstDifference(try readFully(fresh, at: 0, length: newer.count).get(), newer) == nil)
    }

    @Test func randomSeeksReadExactBytesAndTheOriginSendsLittleMoreThanTheFile() throws {
        // A bandwidth cap, so seeks land while transfers run; the origin counts the body bytes
        // it wrote to its sockets, including any a cancelled transfer never read.
        let rig = try CacheRig(size: 3_000_000, faults: OriginFaults(bytesPerSecond: 1_000_000))
        let source = try rig.source()
        defer { source.close() }
        _ = try open(source).get()
        // SPOOL_TEST_SEED=<seed> replays a failing run's seeks.
        let seed =
            ProcessInfo.processInfo.environment["SPOOL_TEST_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64(UInt32.max))
        var generator = SeededGenerator(seed: seed)
        var offsets: [Int] = [0]
        for _ in 0..<5 { offsets.append(generator.next(below: rig.body.count - 70_000)) }
        for offset in offsets {
            let read = try readFully(source, at: Int64(offset), length: 65_536).get()
            #expect(firstDifference(read, rig.body[offset..<(offset + 65_536)]) == nil, "at \(offset), seed \(seed)")
        }
        // Then play it all from the start: what the seeks left out is fetched now (or was by the read-ahead).
        #expect(
            firstDifference(try readFully(source, at: 0, length: rig.body.count, timeout: 30).get(), rig.body) == nil)
        source.close()
        let log = try rig.origin.settledRequests()
        let sent = log.reduce(0) { $0 + $1.bodyBytesSent }
        #expect(
            sent <= rig.body.count + 5 * 64 * 1024,
            "origin sent \(sent) (stored \(rig.cache.stats.bytesFromNetwork)) for \(rig.body.count) with seeks at \(offsets) (seed \(seed)): \(log.map { "\($0.range ?? "-") \($0.bodyBytesSent)" })"
        )
    }

    @Test func aSmallReadNearTheEndGetsItsOwnShortRequest() throws {
        let rig = try CacheRig(size: 4_000_000, faults: OriginFaults(bytesPerSecond: 1_000_000))
        let source = try rig.source()
        defer { source.close() }
        _ = try open(source).get()
        _ = try readFully(source, at: 0, length: 4096).get()
        let tail = Int64(rig.body.count - 10_000)
        #expect(firstDifference(try readFully(source, at: tail, length: 10_000).get(), rig.body.suffix(10_000)) == nil)
        // The origin logs a request when its response ends, which may be just after the client has the bytes.
        let ranges = try rig.origin.requests(atLeast: 1).compactMap(\.range)
        #expect(ranges.contains("bytes=\(tail)-\(rig.body.count - 1)"), "\(ranges)")
        // The main transfer from 0 is still running: it was not restarted at the tail.
        #expect(ranges.filter { $0.hasPrefix("bytes=0-") }.count <= 1)
    }

    /// GStreamer's type finders peek at the middle of a file before playback starts: that
    /// probe must not stop (or set aside) the download that playback is about to read.
    @Test func aSmallProbeOfTheMiddleGetsAShortRequestAndTheMainOneGoesOn() throws {
        let rig = try CacheRig(size: 4_000_000, faults: OriginFaults(bytesPerSecond: 1_000_000))
        let source = try rig.source()
        defer { source.close() }
        _ = try open(source).get()
        _ = try readFully(source, at: 0, length: 4096).get()
        let middle = rig.body.count / 2
        let probe = try readFully(source, at: Int64(middle), length: 4096).get()
        #expect(firstDifference(probe, rig.body[middle..<(middle + 4096)]) == nil)
        let played = try readFully(source, at: 4096, length: 600_000).get()
        #expect(firstDifference(played, rig.body[4096..<604_096]) == nil)
        source.close()
        let ranges = try rig.origin.settledRequests().compactMap(\.range)
        let short = "bytes=\(middle)-\(middle + Int(DownloadPlanner.probeRequestMinimum) - 1)"
        #expect(ranges.contains(short), "\(ranges)")
        // Playback's bytes came from the one transfer from 0, never restarted or moved.
        #expect(Set(ranges).subtracting([short]).allSatisfy { $0.hasPrefix("bytes=0-") }, "\(ranges)")
    }

    /// A far read that reads on is a seek: a transfer follows on from the short request's end
    /// before the reader gets there, and the bytes are exact across the join.
    @Test func readsThatGoOnFromAFarReadTurnItIntoASeek() throws {
        let rig = try CacheRig(size: 4_000_000, faults: OriginFaults(bytesPerSecond: 2_000_000))
        let source = try rig.source()
        defer { source.close() }
        _ = try open(source).get()
        _ = try readFully(source, at: 0, length: 4096).get()
        let target = 2_500_000
        var offset = target
        while offset < target + 400_000 {
            let chunk = try readFully(source, at: Int64(offset), length: 4096).get()
            #expect(firstDifference(chunk, rig.body[offset..<(offset + 4096)]) == nil)
            offset += 4096
        }
        source.close()
        let ranges = try rig.origin.settledRequests().compactMap(\.range)
        let join = target + Int(DownloadPlanner.probeRequestMinimum)
        #expect(ranges.contains { $0.hasPrefix("bytes=\(join)-") }, "\(ranges)")
        #expect(!ranges.contains { $0.hasPrefix("bytes=\(target + 4096)-") }, "\(ranges)")
    }

    @Test func aCompleteEntryPlaysWithTheNetworkDown() throws {
        let rig = try CacheRig(size: 200_000)
        do {
            let source = try rig.source()
            _ = try open(source).get()
            _ = try readFully(source, at: 0, length: rig.body.count).get()
            source.close()
        }
        rig.origin.stop()
        try rig.reopenCache()
        let offline = try rig.source()
        defer { offline.close() }
        _ = try open(offline).get()
        #expect(firstDifference(try readFully(offline, at: 0, length: rig.body.count).get(), rig.body) == nil)
    }

    @Test func aPartialEntryOfflinePlaysItsCachedPartThenFailsPromptlyAndRecoversWhenTheOriginIsBack() throws {
        let rig = try CacheRig(size: 1_000_000, faults: OriginFaults(bytesPerSecond: 2_000_000))
        do {
            let source = try rig.source()
            _ = try open(source).get()
            _ = try readFully(source, at: 0, length: 300_000).get()
            source.close()  // the daemon stops mid-download
        }
        let port = rig.origin.port
        rig.origin.stop()  // the origin is gone: its port refuses connections
        try rig.reopenCache()
        let cached = Int(try rig.cache.entry(for: rig.url).contiguousLength(from: 0))
        #expect(cached >= 300_000 && cached < rig.body.count)
        let source = try rig.source()
        defer { source.close() }
        #expect(try open(source).get().length == Int64(rig.body.count))
        #expect(firstDifference(try readFully(source, at: 0, length: cached).get(), rig.body.prefix(cached)) == nil)
        // The first missing byte: a clear network error, long before the fetcher's retry budget
        // (eight attempts, over 30 s of backoff); past the read's deadline it would be a timeout.
        let missing = readFully(source, at: Int64(cached), length: 4096, timeout: 10)
        guard case .failure(let error) = missing else {
            Issue.record("read past the cached part succeeded offline: \(missing)")
            return
        }
        #expect(error.description.contains("network error"), "\(error)")
        #expect(error.description.contains("onnect"), "names the connection failure: \(error)")
        // The origin comes back at the same address: the next read fetches, exactly.
        let back = try FaultOrigin(port: port)
        back.serve(OriginResource(rig.body, etag: "\"v1\""), at: rig.path)
        let rest = try readFully(source, at: Int64(cached), length: rig.body.count - cached).get()
        #expect(firstDifference(rest, rig.body.suffix(from: cached)) == nil)
        #expect(try back.requests(atLeast: 1).first?.range?.hasPrefix("bytes=\(cached)-") == true)
    }

    @Test func openingAnUncachedResourceOfflineFailsPromptlyWithANetworkError() throws {
        let rig = try CacheRig(size: 100_000, faults: OriginFaults())
        rig.origin.stop()  // its port now refuses connections
        let source = try rig.source()
        defer { source.close() }
        // Within the `open` helper's 10 s (after which it reports a timeout, not this), long
        // before the fetcher's retry budget.
        let opened = open(source)
        guard case .failure(let error) = opened else {
            Issue.record("opened with no origin and nothing cached: \(opened)")
            return
        }
        #expect(error.description.contains("cannot reach the server"), "\(error)")
        #expect(!error.description.contains("retrying"), "the open stopped its transfer: \(error)")
        #expect(source.isDownloading == false, "the transfer is stopped, not left retrying")
    }

    /// A large read just ahead of the running download waits for it (a new connection would
    /// not bring the bytes sooner); a small far read — a probe — gets its own request at once.
    @Test func aReadJustAheadOfTheDownloadWaitsAndAFarProbeDoesNot() throws {
        let rig = try CacheRig(size: 4_000_000, faults: OriginFaults(bytesPerSecond: 500_000))
        let source = try rig.source()
        _ = try open(source).get()
        // 16 KiB first: the download's rate is measured over enough of its bytes that a slow
        // start (a loaded machine) does not make it look slower than it is.
        _ = try readFully(source, at: 0, length: 16_384).get()
        // Within the wait-ahead floor of the 16 KiB the download has surely brought: a read there
        // waits whatever rate a loaded machine measures (40 000 bytes ahead, a rate measured over
        // a slow start made the planner give the read its own request: 1 run in ~20 of the lanes).
        let near = 16_384 + Int(DownloadPlanner.waitAheadFloor) - 1_024
        let far = 3_000_000
        #expect(
            firstDifference(
                try readFully(source, at: Int64(near), length: 100_000).get(), rig.body[near..<near + 100_000]) == nil)
        // Counted now: later, the download may reconnect at where it got to (a slow window on a
        // loaded machine), which the origin could not tell from a request for the near read.
        #expect(rig.origin.requestsBegun == 1, "the near read got a request of its own")
        #expect(
            firstDifference(try readFully(source, at: Int64(far), length: 4096).get(), rig.body[far..<far + 4096])
                == nil)
        source.close()
        let ranges = try rig.origin.settledRequests().compactMap(\.range)
        #expect(ranges.contains { $0.hasPrefix("bytes=\(far)-") }, "\(ranges)")
    }

    @Test func aSeekStormOpensFewConnectionsAndServesTheLastTarget() throws {
        let rig = try CacheRig(size: 8_000_000, faults: OriginFaults(bytesPerSecond: 2_000_000))
        let source = try rig.source()
        defer { source.close() }
        _ = try open(source).get()
        let before = rig.origin.acceptedConnections
        // Twenty seeks in a burst, as a listener dragging a slider: each replaces the last.
        var target: Int64 = 0
        for step in 1...20 {
            target = Int64(step) * 300_000
            #expect(source.read(at: target, maxLength: 4096, wake: {}) == .pending)
        }
        let last = try readFully(source, at: target, length: 4096).get()
        #expect(firstDifference(last, rig.body[Int(target)..<Int(target) + 4096]) == nil)
        let opened = rig.origin.acceptedConnections - before
        #expect(opened <= 3, "the storm opened \(opened) connections")
    }

    @Test func aCompleteEntryIsRevalidatedInTheBackgroundAtMostOncePerInterval() async throws {
        let rig = try CacheRig(size: 300_000)
        try rig.fill()
        rig.origin.clearRequests()
        let revalidator = Revalidator(interval: .seconds(3600))
        for _ in 0..<2 {
            let source = try rig.source(revalidator: revalidator)
            _ = try open(source).get()
            #expect(firstDifference(try readFully(source, at: 0, length: rig.body.count).get(), rig.body) == nil)
            #expect(await eventually(timeout: 10) { !source.isRevalidating })
            #expect(!source.foundNewVersion)
            source.close()
        }
        let checks = try rig.origin.requests(atLeast: 1)
        #expect(checks.count == 1, "\(checks)")
        #expect(rig.origin.requests().count == 1)
        #expect(checks.first?.ifNoneMatch == "\"v1\"")
        #expect(checks.first?.status == 304)
    }

    @Test func aChangedResourceReplacesTheEntryForTheNextPlayNotTheCurrentOne() async throws {
        let rig = try CacheRig(size: 300_000)
        try rig.fill()
        let newer = Data(rig.body.reversed())
        rig.origin.replace(rig.path, with: OriginResource(newer, etag: "\"v2\""))
        let revalidator = Revalidator(interval: .seconds(3600))
        do {
            let current = try rig.source(revalidator: revalidator)
            _ = try open(current).get()
            #expect(await eventually(timeout: 10) { !current.isRevalidating })
            #expect(current.foundNewVersion)
            #expect(
                firstDifference(try readFully(current, at: 0, length: rig.body.count).get(), rig.body) == nil,
                "the play in progress keeps the version it started with")
            current.close()
        }
        let next = try rig.source(revalidator: revalidator)
        defer { next.close() }
        _ = try open(next).get()
        #expect(firstDifference(try readFully(next, at: 0, length: newer.count).get(), newer) == nil)
    }

    @Test func aLargeResourceIsFetchedOnlyAWindowAheadOfThePlayHead() async throws {
        let rig = try CacheRig(size: 6_000_000)
        let window: Int64 = 1_000_000
        let source = try rig.source(readAhead: .init(threshold: 2_000_000, window: window))
        defer { source.close() }
        _ = try open(source).get()
        #expect(firstDifference(try readFully(source, at: 0, length: 65_536).get(), rig.body.prefix(65_536)) == nil)
        #expect(await eventually(timeout: 10) { !source.isDownloading })
        let cached = try rig.cache.entry(for: rig.url).cachedRanges.count
        #expect(cached >= window && cached < window + 512 * 1024, "cached \(cached) bytes")
        // Playing on moves the window.
        let later: Int64 = 3_000_000
        #expect(
            firstDifference(
                try readFully(source, at: later, length: 65_536).get(), rig.body[Int(later)..<Int(later) + 65_536])
                == nil)
        #expect(await eventually(timeout: 10) { !source.isDownloading })
        let ranges = try rig.cache.entry(for: rig.url).cachedRanges
        #expect(ranges.contains(later + window - 1))
        #expect(!ranges.contains(Int64(rig.body.count) - 1), "the end was not fetched")
    }

    @Test func theDownloadStateSaysWhatTheTransferIsDoing() async throws {
        // Retry-After: 3, so the state lasts long enough for a poll of a loaded machine to see it
        // (a 1-s one was missed once, the download already complete).
        let rig = try CacheRig(
            size: 200_000, faults: OriginFaults(errorResponses: .init(count: 1, status: 503, retryAfter: 3)))
        let source = try rig.source()
        defer { source.close() }
        let opened = DispatchSemaphore(value: 0)
        source.open { _ in opened.signal() }
        var seen = ""
        #expect(
            await eventually(timeout: 5) {
                seen = source.downloadState
                return seen.hasPrefix("retrying in ")
            }, "state was '\(seen)'")
        #expect(seen.contains("503"), "\(seen)")
        #expect(opened.wait(timeout: .now() + 10) == .success)
        _ = try readFully(source, at: 0, length: rig.body.count).get()
        #expect(source.downloadState == "complete")
    }
}
