import Fetcher
import Foundation
import Synchronization
import Testing
import TestSupport

/// Collects a transfer's events and lets a test await its end.
final class TransferRecorder: Sendable {
    private let events = Mutex<[TransferEvent]>([])
    private let ended = DispatchSemaphore(value: 0)

    func record(_ event: TransferEvent) {
        events.withLock { $0.append(event) }
        switch event {
        case .finished, .failed: ended.signal()
        default: break
        }
    }

    func waitForEnd(timeout: Double = 10) -> Bool { ended.wait(timeout: .now() + timeout) == .success }
    var all: [TransferEvent] { events.withLock { $0 } }
    var head: ResponseHead? {
        all.lazy.compactMap { if case .response(let head) = $0 { head } else { nil } }.first
    }
    /// The delivered bytes, checked to be contiguous from the first offset.
    var body: (start: Int64, bytes: Data)? {
        var start: Int64?
        var bytes = Data()
        for case .data(let chunk, let offset) in all {
            if start == nil { start = offset }
            guard offset == start! + Int64(bytes.count) else { return nil }
            bytes.append(chunk)
        }
        return start.map { ($0, bytes) }
    }
}

@Suite("Fetcher against the fault-injecting origin", .serialized)
struct FetcherTests {
    let fetcher = Fetcher(userAgent: "Spool/test")

    @Test func aRangeRequestDeliversExactlyThoseBytesWithTheTotal() throws {
        let origin = try FaultOrigin()
        let body = patternedBody(300_000)
        origin.serve(OriginResource(body, etag: "\"v1\""), at: "/a.mp3")
        let recorder = TransferRecorder()
        fetcher.start(RangeRequest(url: origin.url(for: "/a.mp3"), start: 1000, end: 5000)) { _, event in
            recorder.record(event)
        }
        #expect(recorder.waitForEnd())
        #expect(recorder.head?.status == 206)
        #expect(recorder.head?.totalLength == 300_000)
        #expect(recorder.head?.etag == "\"v1\"")
        let delivered = try #require(recorder.body)
        #expect(delivered.start == 1000)
        #expect(firstDifference(delivered.bytes, body[1000..<5000]) == nil)
        if case .finished? = recorder.all.last {} else { Issue.record("did not finish: \(recorder.all)") }
        let logged = try origin.requests(atLeast: 1)
        #expect(logged.first?.range == "bytes=1000-4999")
    }

    @Test func anOriginIgnoringRangeIsDeliveredFromByteZero() throws {
        let origin = try FaultOrigin()
        let body = patternedBody(50_000)
        var faults = OriginFaults()
        faults.ignoresRange = true
        origin.serve(OriginResource(body, etag: "\"v1\""), at: "/a.mp3", faults: faults)
        let recorder = TransferRecorder()
        fetcher.start(RangeRequest(url: origin.url(for: "/a.mp3"), start: 0)) { _, event in recorder.record(event) }
        #expect(recorder.waitForEnd())
        #expect(recorder.head?.status == 200)
        #expect(recorder.head?.honoursRange == false)
        #expect(recorder.head?.totalLength == 50_000)
        #expect(recorder.body.map { firstDifference($0.bytes, body) == nil } == true)
    }

    @Test func aMissingResourceFailsWithItsStatus() throws {
        let origin = try FaultOrigin()
        let recorder = TransferRecorder()
        fetcher.start(RangeRequest(url: origin.url(for: "/missing.mp3"))) { _, event in recorder.record(event) }
        #expect(recorder.waitForEnd())
        guard case .failed(.httpStatus(404))? = recorder.all.last else {
            Issue.record("expected a 404 failure, got \(recorder.all)")
            return
        }
        #expect(recorder.body == nil)
    }

    @Test func aCancelledTransferReportsNothingMore() throws {
        let origin = try FaultOrigin()
        var faults = OriginFaults()
        faults.stall = .init(afterBodyBytes: 10_000)
        origin.serve(OriginResource(patternedBody(100_000), etag: "\"v1\""), at: "/slow.mp3", faults: faults)
        let recorder = TransferRecorder()
        let firstBytes = DispatchSemaphore(value: 0)
        let id = fetcher.start(RangeRequest(url: origin.url(for: "/slow.mp3"))) { _, event in
            recorder.record(event)
            if case .data = event { firstBytes.signal() }
        }
        #expect(firstBytes.wait(timeout: .now() + 10) == .success)
        fetcher.cancel(id)
        // A second transfer on the same fetcher completing proves the cancel was handled first.
        origin.serve(OriginResource(patternedBody(10), etag: "\"x\""), at: "/tiny")
        let probe = TransferRecorder()
        fetcher.start(RangeRequest(url: origin.url(for: "/tiny"))) { _, event in probe.record(event) }
        #expect(probe.waitForEnd())
        let count = recorder.all.count
        #expect(!recorder.all.contains { if case .finished = $0 { true } else if case .failed = $0 { true } else { false } })
        #expect(recorder.all.count == count)
    }

    @Test func contentRangeIsParsedStrictly() {
        #expect(parseContentRange("bytes 0-99/1000")! == (0, 99, 1000))
        #expect(parseContentRange("bytes 5-9/*")! == (5, 9, nil))
        #expect(parseContentRange("bytes 9-5/1000") == nil)
        #expect(parseContentRange("bytes 0-1000/1000") == nil)
        #expect(parseContentRange("items 0-1/2") == nil)
        #expect(parseContentRange("bytes */1000") == nil)
    }
}
