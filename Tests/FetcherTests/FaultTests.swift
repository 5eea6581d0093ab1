import Fetcher
import Foundation
import Synchronization
import TestSupport
import Testing

/// One test per fault of the `FaultOrigin`: the delivered bytes equal the resource exactly,
/// and the origin's log shows exactly which ranges were asked.
@Suite("Fetcher against each fault of the origin", .serialized)
struct FaultTests {
    let fetcher = Fetcher(configuration: .forTests)
    let body = patternedBody(100_000)

    private func serve(_ faults: OriginFaults, etag: String = "\"v1\"") throws -> (FaultOrigin, URL) {
        let origin = try FaultOrigin()
        origin.serve(OriginResource(body, etag: etag), at: "/a.mp3", faults: faults)
        return (origin, origin.url(for: "/a.mp3"))
    }

    @Test func firstByteLatencyIsWaitedOut() throws {
        let (origin, url) = try serve(OriginFaults(firstByteLatency: 0.3))
        expectDelivered(fetcher.record(RangeRequest(url: url)), body)
        #expect(try origin.requests(atLeast: 1).map(\.range) == ["bytes=0-"])
    }

    @Test func aBandwidthCappedBodyArrivesWhole() throws {
        let (origin, url) = try serve(OriginFaults(bytesPerSecond: 400_000))
        expectDelivered(fetcher.record(RangeRequest(url: url, start: 20_000)), body[20_000...], from: 20_000)
        #expect(try origin.requests(atLeast: 1).map(\.range) == ["bytes=20000-"])
    }

    @Test func aBodyCutShortContinuesFromItsFirstMissingByte() throws {
        let (origin, url) = try serve(OriginFaults(closeAfterBodyBytes: 30_000))
        let recorder = fetcher.record(RangeRequest(url: url))
        expectDelivered(recorder, body)
        let log = try origin.requests(atLeast: 4)
        #expect(log.map(\.range) == ["bytes=0-", "bytes=30000-99999", "bytes=60000-99999", "bytes=90000-99999"])
        // Continuations are guarded by the version the first response named.
        #expect(log.map(\.ifRange) == [nil, "\"v1\"", "\"v1\"", "\"v1\""])
        #expect(recorder.statuses == [30_000, 60_000, 90_000].map { .reconnecting(from: $0) })
    }

    /// The last bytes asked for with a suffix range: an error before any response asks the same
    /// again; a cut after the response continues from the first missing byte, with If-Range.
    @Test func theLastBytesSurviveAnErrorAndCuts() throws {
        var faults = OriginFaults(closeAfterBodyBytes: 20_000)
        faults.errorResponses = .init(count: 1, status: 503)
        let (origin, url) = try serve(faults)
        let recorder = fetcher.record(.lastBytes(50_000, of: url))
        expectDelivered(recorder, body[50_000...], from: 50_000)
        let log = try origin.requests(atLeast: 4)
        #expect(log.map(\.range) == ["bytes=-50000", "bytes=-50000", "bytes=70000-99999", "bytes=90000-99999"])
        #expect(log.map(\.ifRange) == [nil, nil, "\"v1\"", "\"v1\""])
    }

    @Test func serverErrorsAreRetriedWithBackoff() throws {
        let (origin, url) = try serve(OriginFaults(errorResponses: .init(count: 2, status: 503)))
        let recorder = fetcher.record(RangeRequest(url: url))
        expectDelivered(recorder, body)
        let log = try origin.requests(atLeast: 3)
        #expect(log.map(\.status) == [503, 503, 206])
        #expect(log.map(\.range) == ["bytes=0-", "bytes=0-", "bytes=0-"])
        let attempts = recorder.statuses.compactMap {
            if case .retrying(let delay, let attempt, .httpStatus(503)) = $0 { (delay, attempt) } else { nil }
        }
        #expect(attempts.map(\.1) == [1, 2])
        // 50 ms doubling, jittered into [d/2, d].
        #expect(attempts.first.map { (0.025...0.05).contains($0.0) } == true)
        #expect(attempts.last.map { (0.05...0.1).contains($0.0) } == true)
    }

    @Test func retryAfterIsHonoured() throws {
        let (origin, url) = try serve(OriginFaults(errorResponses: .init(count: 1, status: 429, retryAfter: 1)))
        let recorder = fetcher.record(RangeRequest(url: url))
        expectDelivered(recorder, body)
        #expect(recorder.statuses.first == .retrying(in: 1, attempt: 1, reason: .httpStatus(429)))
        let waited = recorder.time { $0.isHead }! - recorder.time { $0.isStatus }!
        // Not longer either: the delivery's deadline (10 s) is far below the 60-s limit on Retry-After.
        #expect(waited >= 0.95, "waited \(waited) s")
        #expect(try origin.requests(atLeast: 2).map(\.status) == [429, 206])
    }

    @Test func retriesStopAtTheConfiguredMaximum() throws {
        var configuration = FetcherConfiguration.forTests
        configuration.maxAttempts = 3
        let fetcher = Fetcher(configuration: configuration)
        let (origin, url) = try serve(OriginFaults(errorResponses: .init(count: 10, status: 500)))
        let recorder = fetcher.record(RangeRequest(url: url))
        expectFailure(recorder) { $0 == .httpStatus(500) }
        #expect(try origin.requests(atLeast: 3).count == 3)
        #expect(recorder.statuses.count == 2)
    }

    @Test func aRefusedConnectionIsRetriedThenFails() throws {
        var configuration = FetcherConfiguration.forTests
        configuration.maxAttempts = 2
        let fetcher = Fetcher(configuration: configuration)
        let origin = try FaultOrigin()
        let url = origin.url(for: "/gone")
        origin.stop()
        let recorder = fetcher.record(RangeRequest(url: url))
        expectFailure(recorder) { if case .transport(7, _) = $0 { true } else { false } }
        #expect(recorder.statuses.count == 1)
    }

    @Test func anOriginIgnoringRangeIsSkippedToTheByteAsked() throws {
        let (origin, url) = try serve(OriginFaults(ignoresRange: true))
        let recorder = fetcher.record(RangeRequest(url: url, start: 10_000, end: 60_000))
        expectDelivered(recorder, body[10_000..<60_000], from: 10_000)
        #expect(recorder.head?.status == 200)
        #expect(recorder.head?.honoursRange == false)
        #expect(recorder.head?.totalLength == 100_000)
        #expect(try origin.requests(atLeast: 1).map(\.range) == ["bytes=10000-59999"])
    }

    @Test func aChunkedBodyHasNoLengthUntilItsCleanEnd() throws {
        let (origin, url) = try serve(OriginFaults(ignoresRange: true, chunked: true))
        let recorder = fetcher.record(RangeRequest(url: url))
        expectDelivered(recorder, body)
        #expect(recorder.head?.totalLength == nil)
        #expect(recorder.head?.contentLength == nil)
        #expect(try origin.requests(atLeast: 1).count == 1)
    }

    @Test func aChunkedPartialResponseTakesItsLengthFromContentRange() throws {
        let (origin, url) = try serve(OriginFaults(chunked: true))
        let recorder = fetcher.record(RangeRequest(url: url, start: 500))
        expectDelivered(recorder, body[500...], from: 500)
        #expect(recorder.head?.totalLength == 100_000)
        #expect(try origin.requests(atLeast: 1).map(\.range) == ["bytes=500-"])
    }

    @Test func aBodyShorterThanItsContentLengthEndsAtTheDeclaredRange() throws {
        // Content-Length claims 500 more bytes than Content-Range: the range is complete, nothing more is asked.
        let (origin, url) = try serve(OriginFaults(contentLengthError: 500))
        expectDelivered(fetcher.record(RangeRequest(url: url)), body)
        #expect(try origin.requests(atLeast: 1).map(\.range) == ["bytes=0-"])
    }

    @Test func anOverstatedContentLengthFromAnOriginWithoutRangesEndsWhereTheBodyEnds() throws {
        // Declares 4,096 bytes more than it sends, then closes: it cannot be asked for the rest,
        // and starting again from byte 0 would fetch the file twice to end at the same byte.
        let (origin, url) = try serve(OriginFaults(ignoresRange: true, contentLengthError: 4096))
        let recorder = fetcher.record(RangeRequest(url: url))
        expectDelivered(recorder, body)
        #expect(recorder.head?.totalLength == 104_096, "the head's claim, before the body showed otherwise")
        #expect(recorder.statuses == [.endedShort(length: 100_000)])
        #expect(try origin.settledRequests().count == 1, "nothing fetched twice")
    }

    @Test func anOverstatedContentLengthWithRangesEndsAtTheDeclaredRange() throws {
        // With ranges the Content-Range says where the body ends: nothing is corrected or asked again.
        let (origin, url) = try serve(OriginFaults(contentLengthError: 4096))
        let recorder = fetcher.record(RangeRequest(url: url, start: 1000))
        expectDelivered(recorder, body[1000...], from: 1000)
        #expect(recorder.head?.totalLength == 100_000)
        #expect(recorder.statuses.isEmpty)
        #expect(try origin.settledRequests().map(\.range) == ["bytes=1000-"])
    }

    @Test func aContentLengthShortOfTheRangeIsContinuedAtTheFirstMissingByte() throws {
        let (origin, url) = try serve(OriginFaults(contentLengthError: -500))
        // The origin behaves once the first response is under way.
        let recorder = TransferRecorder { event in
            if event.isData { origin.setFaults(OriginFaults(), for: "/a.mp3") }
        }
        expectDelivered(fetcher.record(RangeRequest(url: url), into: recorder), body)
        // Logged as each response ends: the short second one may be logged before the first.
        #expect(try origin.requests(atLeast: 2).compactMap(\.range).sorted() == ["bytes=0-", "bytes=99500-99999"])
    }

    @Test func aFileReplacedDuringAResponseIsReportedAndNeverSpliced() throws {
        let replacement = OriginResource(Data(patternedBody(80_000).reversed()), etag: "\"v2\"")
        let (origin, url) = try serve(OriginFaults(replacement: .init(afterBodyBytes: 30_000, resource: replacement)))
        let recorder = fetcher.record(RangeRequest(url: url))
        // After the change the new version is delivered from 0, whole.
        expectDelivered(recorder, replacement.body)
        #expect(recorder.changes.map(\.etag) == ["\"v2\""])
        #expect(recorder.changes.first?.totalLength == 80_000)
        let log = try origin.requests(atLeast: 2)
        #expect(log.map(\.range) == ["bytes=0-", "bytes=80000-99999"])
        #expect(log.last?.ifRange == "\"v1\"")
        #expect(log.last?.status == 200)
    }

    @Test func aFileReplacedBetweenRequestsIsReportedAndDeliveredFromZero() throws {
        let (origin, url) = try serve(OriginFaults())
        let first = fetcher.record(RangeRequest(url: url, end: 50_000))
        expectDelivered(first, body[0..<50_000])
        let version = try #require(first.head?.validator)
        let newBody = Data(patternedBody(120_000).reversed())
        origin.replace("/a.mp3", with: OriginResource(newBody, etag: "\"v2\""))
        let second = fetcher.record(
            RangeRequest(url: url, start: 50_000, knownLength: 100_000, condition: .ifRange(version)))
        expectDelivered(second, newBody)
        #expect(second.head == nil)
        #expect(second.changes.first?.totalLength == 120_000)
        let log = try origin.requests(atLeast: 2)
        #expect(log.last?.range == "bytes=50000-99999")
        #expect(log.last?.ifRange == "\"v1\"")
    }

    @Test func redirectsAreFollowedAndTheLogShowsBoth() throws {
        let (origin, _) = try serve(OriginFaults())
        origin.redirect("/old.mp3", to: "/a.mp3", status: 301)
        let recorder = fetcher.record(RangeRequest(url: origin.url(for: "/old.mp3"), start: 4_000))
        expectDelivered(recorder, body[4_000...], from: 4_000)
        let log = try origin.requests(atLeast: 2)
        #expect(log.map(\.path) == ["/old.mp3", "/a.mp3"])
        #expect(log.map(\.status) == [301, 206])
        #expect(log.map(\.range) == ["bytes=4000-", "bytes=4000-"])
    }

    @Test func aRedirectLoopFailsAfterFiveRedirects() throws {
        let origin = try FaultOrigin()
        origin.redirect("/loop", to: "/loop")
        let recorder = fetcher.record(RangeRequest(url: origin.url(for: "/loop")))
        expectFailure(recorder) { $0 == .tooManyRedirects(5) }
        #expect(try origin.requests(atLeast: 6).count == 6)
    }

    @Test func aStalledBodyReconnectsFromTheNextByte() throws {
        let (origin, url) = try serve(OriginFaults(stall: .init(afterBodyBytes: 70_000)))
        let recorder = fetcher.record(RangeRequest(url: url))
        expectDelivered(recorder, body)
        let statuses = recorder.statuses
        #expect(statuses.count == 2)
        if case .stalled(let seconds)? = statuses.first {
            // The configured 1 s, not the 15-s default, which the delivery's deadline would not reach.
            #expect(seconds >= 1)
        } else {
            Issue.record("expected a stall first: \(statuses)")
        }
        #expect(statuses.last == .reconnecting(from: 70_000))
        // The stalled request is logged when its connection closes, which may come after the second.
        #expect(try origin.requests(atLeast: 2).compactMap(\.range).sorted() == ["bytes=0-", "bytes=70000-99999"])
    }

    @Test func anExpiredURLIsReResolvedAndContinuedAtTheSameOffset() throws {
        let (origin, url) = try serve(OriginFaults(closeAfterBodyBytes: 40_000))
        origin.serve(OriginResource(body, etag: "\"v1\""), at: "/fresh.mp3")
        let fresh = origin.url(for: "/fresh.mp3")
        // After the first cut the old URL answers 403 (an expired signature).
        let recorder = TransferRecorder { event in
            if event.isData {
                origin.setFaults(OriginFaults(errorResponses: .init(count: 10, status: 403)), for: "/a.mp3")
            }
        }
        let asked = Mutex<[URL]>([])
        fetcher.record(
            RangeRequest(url: url),
            reresolve: { old in
                asked.withLock { $0.append(old) }
                return fresh
            }, into: recorder)
        expectDelivered(recorder, body)
        #expect(asked.withLock { $0 } == [url])
        #expect(
            recorder.statuses == [.reconnecting(from: 40_000), .reresolving(status: 403), .reconnecting(from: 40_000)])
        let log = try origin.requests(atLeast: 3)
        #expect(log.map(\.path) == ["/a.mp3", "/a.mp3", "/fresh.mp3"])
        #expect(log.map(\.range) == ["bytes=0-", "bytes=40000-99999", "bytes=40000-99999"])
        #expect(log.map(\.status) == [206, 403, 206])
    }

    @Test func aForbiddenURLWithNoNewURLFailsAfterTheReResolves() throws {
        let (origin, url) = try serve(OriginFaults(errorResponses: .init(count: 10, status: 410)))
        let recorder = fetcher.record(RangeRequest(url: url))
        expectFailure(recorder) { $0 == .httpStatus(410) }
        // The first answer plus the default hook's two retries of the original URL.
        #expect(try origin.requests(atLeast: 3).count == 3)
    }
}
