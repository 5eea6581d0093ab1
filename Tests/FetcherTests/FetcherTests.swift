import Fetcher
import Foundation
import Synchronization
import TestSupport
import Testing

@Suite("Fetcher basics: ranges, connections, cancel, priorities", .serialized)
struct FetcherTests {
    let fetcher = Fetcher(configuration: .forTests)

    @Test func aRangeRequestDeliversExactlyThoseBytesWithTheTotal() throws {
        let origin = try FaultOrigin()
        let body = patternedBody(300_000)
        origin.serve(OriginResource(body, etag: "\"v1\""), at: "/a.mp3")
        let recorder = fetcher.record(RangeRequest(url: origin.url(for: "/a.mp3"), start: 1000, end: 5000))
        expectDelivered(recorder, body[1000..<5000], from: 1000)
        #expect(recorder.head?.status == 206)
        #expect(recorder.head?.totalLength == 300_000)
        #expect(recorder.head?.etag == "\"v1\"")
        #expect(try origin.requests(atLeast: 1).map(\.range) == ["bytes=1000-4999"])
    }

    /// The last bytes of a resource whose length is not known: the response says where they start.
    @Test func theLastBytesArriveAtTheOffsetTheResponseNames() throws {
        let origin = try FaultOrigin()
        let body = patternedBody(300_000)
        origin.serve(OriginResource(body, etag: "\"v1\""), at: "/a.ogg")
        let recorder = fetcher.record(.lastBytes(8500, of: origin.url(for: "/a.ogg")))
        let start: Int64 = 300_000 - 8500
        expectDelivered(recorder, body.suffix(8500), from: start)
        #expect(recorder.head?.status == 206)
        #expect(recorder.head?.bodyStart == start)
        #expect(recorder.head?.totalLength == 300_000)
        #expect(try origin.requests(atLeast: 1).map(\.range) == ["bytes=-8500"])
    }

    /// An origin without ranges answers the last bytes with the whole body: the head is told
    /// (it says there are no ranges), and not a byte is read, as the opening's own request reads it.
    @Test func theLastBytesOfAnOriginWithoutRangesReadNothing() throws {
        let origin = try FaultOrigin()
        origin.serve(
            OriginResource(patternedBody(3_000_000), etag: "\"v1\""), at: "/a.ogg",
            faults: OriginFaults(ignoresRange: true))
        let recorder = fetcher.record(.lastBytes(8500, of: origin.url(for: "/a.ogg")))
        #expect(recorder.waitForEnd())
        #expect(recorder.contractViolation == nil, "\(recorder.contractViolation ?? "")")
        #expect(recorder.finished, "ended with \(String(describing: recorder.end))")
        #expect(recorder.head?.status == 200)
        #expect(recorder.head?.honoursRange == false)
        #expect(!recorder.all.contains { if case .data = $0 { true } else { false } })
    }

    @Test func aMissingResourceFailsWithoutRetrying() throws {
        let origin = try FaultOrigin()
        let recorder = fetcher.record(RangeRequest(url: origin.url(for: "/missing.mp3")))
        expectFailure(recorder) { $0 == .httpStatus(404) }
        #expect(recorder.body == nil)
        #expect(recorder.statuses.isEmpty)
        #expect(try origin.requests(atLeast: 1).count == 1)
    }

    @Test func rangeHopsReuseOneConnection() throws {
        let origin = try FaultOrigin()
        let body = patternedBody(200_000)
        origin.serve(OriginResource(body, etag: "\"v1\""), at: "/a.mp3")
        for start in [0, 150_000, 40_000] as [Int64] {
            let recorder = fetcher.record(
                RangeRequest(url: origin.url(for: "/a.mp3"), start: start, end: start + 10_000))
            expectDelivered(recorder, body[Int(start)..<Int(start) + 10_000], from: start)
        }
        #expect(origin.acceptedConnections == 1)
    }

    @Test func aSecondRequestToAnOriginNotAnsweredYetDoesNotWaitForTheFirst() throws {
        // The first request is held unanswered by the origin until the second has been delivered.
        let origin = try FaultOrigin()
        let long = patternedBody(100_000)
        let short = Data(patternedBody(1000).reversed())
        let firstAnswer = ResponseHold()
        origin.serve(OriginResource(long), at: "/long", faults: OriginFaults(hold: firstAnswer))
        origin.serve(OriginResource(short), at: "/short")
        let longRecorder = fetcher.record(RangeRequest(url: origin.url(for: "/long")))
        #expect(firstAnswer.awaitArrivals(1), "the first request reached the origin")
        let shortRecorder = fetcher.record(RangeRequest(url: origin.url(for: "/short")))
        expectDelivered(shortRecorder, short)
        #expect(!longRecorder.all.contains { $0.isEnd }, "the first is still unanswered")
        firstAnswer.release()
        expectDelivered(longRecorder, long)
    }

    @Test func aCancelledTransferReportsNothingMoreAndCancelsPromptly() throws {
        let origin = try FaultOrigin()
        var faults = OriginFaults()
        faults.stall = .init(afterBodyBytes: 10_000)
        origin.serve(OriginResource(patternedBody(100_000), etag: "\"v1\""), at: "/slow.mp3", faults: faults)
        var configuration = FetcherConfiguration.forTests
        configuration.stallTimeout = 30  // the stall must not end the transfer first
        let fetcher = Fetcher(configuration: configuration)
        let recorder = TransferRecorder()
        let id = fetcher.start(RangeRequest(url: origin.url(for: "/slow.mp3"))) { _, event in recorder.record(event) }
        #expect(recorder.waitFor { $0.isData })
        let cancelled = DispatchSemaphore(value: 0)
        fetcher.cancel(id) { cancelled.signal() }
        // A deadline far above the ~0.1 ms the benchmark measures.
        #expect(cancelled.wait(timeout: .now() + 5) == .success)
        let count = recorder.all.count
        #expect(!recorder.all.contains { $0.isEnd })
        // The origin sees the connection close.
        #expect(try origin.requests(atLeast: 1).first?.bodyBytesSent == 10_000)
        #expect(recorder.all.count == count)
    }

    @Test func aLowerPriorityTransferPausesWhileAHigherOneRunsAndResumesAfter() throws {
        let origin = try FaultOrigin()
        let low = patternedBody(150_000)
        let high = Data(patternedBody(60_000).reversed())
        var capped = OriginFaults()
        capped.bytesPerSecond = 150_000
        origin.serve(OriginResource(low, etag: "\"low\""), at: "/low", faults: capped)
        origin.serve(OriginResource(high, etag: "\"high\""), at: "/high", faults: capped)
        let lowRecorder = fetcher.record(RangeRequest(url: origin.url(for: "/low"), priority: .fillHoles))
        #expect(lowRecorder.waitFor { $0.isData })
        let highRecorder = fetcher.record(RangeRequest(url: origin.url(for: "/high"), priority: .playback))
        expectDelivered(highRecorder, high)
        expectDelivered(lowRecorder, low)
        #expect(highRecorder.statuses.isEmpty)
        #expect(lowRecorder.statuses == [.paused, .resumed])
        // Nothing of the low transfer arrived while it was paused, and it resumed only after the high one ended.
        let events = lowRecorder.all
        let paused = events.firstIndex { $0 == .paused }
        let resumed = events.firstIndex { $0 == .resumed }
        if let paused, let resumed {
            #expect(!events[paused..<resumed].contains { $0.isData })
            #expect(lowRecorder.time { $0 == .resumed }! >= highRecorder.time(of: \.isEnd)!)
        }
        #expect(lowRecorder.time { $0 == .paused }! <= highRecorder.time(of: \.isData)!)
        // Paused, not cancelled: the low resource was requested once.
        #expect(try origin.requests(atLeast: 2).filter { $0.path == "/low" }.count == 1)
    }

    /// libcurl 7.88 holds back the lines of a head that arrive while the transfer is paused and,
    /// on resuming, may hand over body bytes before them: the head then looked as if it lacked its
    /// Content-Range. A transfer is paused only once its head was read and judged.
    @Test func aTransferIsPausedOnlyOnceItsResponseHeadWasJudged() throws {
        let origin = try FaultOrigin()
        let low = patternedBody(100_000)
        let high = Data(patternedBody(100_000).reversed())
        origin.serve(
            OriginResource(low), at: "/low", faults: OriginFaults(firstByteLatency: 0.3, bytesPerSecond: 100_000))
        origin.serve(OriginResource(high), at: "/high", faults: OriginFaults(bytesPerSecond: 200_000))
        let highRecorder = fetcher.record(RangeRequest(url: origin.url(for: "/high"), priority: .playback))
        #expect(highRecorder.waitFor { $0.isData })
        // Its head comes 0.3 s later, while the higher one still receives for about 0.5 s.
        let lowRecorder = fetcher.record(RangeRequest(url: origin.url(for: "/low"), start: 1000, priority: .fillHoles))
        expectDelivered(highRecorder, high)
        expectDelivered(lowRecorder, low[1000...], from: 1000)
        let events = lowRecorder.all
        let head = events.firstIndex { $0.isHead }
        let paused = events.firstIndex { $0 == .paused }
        #expect(paused != nil, "the lower transfer was paused at all: \(lowRecorder.statuses)")
        if let head, let paused { #expect(head < paused, "paused before its head: \(lowRecorder.statuses)") }
    }

    @Test func raisingAPausedTransfersPriorityResumesIt() throws {
        // Two origins: on one origin not yet answered, libcurl holds the second request back until
        // the first connection is free (CURLOPT_PIPEWAIT), so there would be nothing to pause.
        let origin = try FaultOrigin()
        let other = try FaultOrigin()
        var capped = OriginFaults()
        capped.bytesPerSecond = 100_000
        origin.serve(OriginResource(patternedBody(60_000)), at: "/low", faults: capped)
        other.serve(OriginResource(patternedBody(150_000)), at: "/high", faults: capped)
        let lowRecorder = TransferRecorder()
        let lowID = fetcher.start(RangeRequest(url: origin.url(for: "/low"), priority: .preload)) { _, event in
            lowRecorder.record(event)
        }
        let highRecorder = fetcher.record(RangeRequest(url: other.url(for: "/high"), priority: .readAhead))
        #expect(lowRecorder.waitFor { $0 == .paused })
        fetcher.setPriority(lowID, .playback)
        #expect(lowRecorder.waitFor { $0 == .resumed })
        #expect(highRecorder.waitFor { $0 == .paused })
        #expect(lowRecorder.waitForEnd())
        #expect(highRecorder.waitForEnd())
        #expect(lowRecorder.finished, "low: \(lowRecorder.all.filter { !$0.isData })")
        #expect(highRecorder.finished, "high: \(highRecorder.all.filter { !$0.isData })")
    }

    @Test func aSecondTransferOfTheSameResourceSupersedesTheFirst() throws {
        let origin = try FaultOrigin()
        let body = patternedBody(100_000)
        var faults = OriginFaults()
        faults.bytesPerSecond = 100_000
        origin.serve(OriginResource(body), at: "/a", faults: faults)
        let first = fetcher.record(RangeRequest(url: origin.url(for: "/a"), resource: "track-1"))
        #expect(first.waitFor { $0.isData })
        let second = fetcher.record(RangeRequest(url: origin.url(for: "/a"), start: 90_000, resource: "track-1"))
        expectDelivered(second, body[90_000...], from: 90_000)
        expectFailure(first) { $0 == .superseded }
    }
}

extension TransferEvent {
    /// Compares a status event (tests only need that).
    static func == (event: TransferEvent, status: TransferStatus) -> Bool {
        if case .status(let value) = event { value == status } else { false }
    }
}
