import Fetcher
import Foundation
import Synchronization
import TestSupport
import Testing

/// Collects a transfer's events (with the time each arrived) and lets a test await any of them.
final class TransferRecorder: Sendable {
    private struct State {
        var events: [(event: TransferEvent, at: Double)] = []
        var waiters: [(predicate: @Sendable (TransferEvent) -> Bool, signal: DispatchSemaphore)] = []
    }
    private let state = Mutex(State())
    /// Runs on the fetcher thread after each event is recorded (e.g. to change the origin's faults).
    let onEvent: (@Sendable (TransferEvent) -> Void)?

    init(onEvent: (@Sendable (TransferEvent) -> Void)? = nil) {
        self.onEvent = onEvent
    }

    func record(_ event: TransferEvent) {
        let now = Date().timeIntervalSinceReferenceDate
        let ready = state.withLock { state in
            state.events.append((event, now))
            let ready = state.waiters.filter { $0.predicate(event) }.map(\.signal)
            state.waiters.removeAll { $0.predicate(event) }
            return ready
        }
        onEvent?(event)
        ready.forEach { $0.signal() }
    }

    /// Waits until an event satisfying `predicate` has been recorded (before or during the wait).
    func waitFor(timeout: Double = 10, _ predicate: @escaping @Sendable (TransferEvent) -> Bool) -> Bool {
        let signal = DispatchSemaphore(value: 0)
        let seen = state.withLock { state in
            if state.events.contains(where: { predicate($0.event) }) { return true }
            state.waiters.append((predicate, signal))
            return false
        }
        return seen || signal.wait(timeout: .now() + timeout) == .success
    }

    /// Waits for `finished` or `failed`.
    func waitForEnd(timeout: Double = 10) -> Bool { waitFor(timeout: timeout, \.isEnd) }

    var all: [TransferEvent] { state.withLock { $0.events.map(\.event) } }

    /// When the first event satisfying `predicate` arrived (reference-date seconds).
    func time(of predicate: (TransferEvent) -> Bool) -> Double? {
        state.withLock { $0.events.first { predicate($0.event) }?.at }
    }

    var head: ResponseHead? {
        all.lazy.compactMap { if case .response(let head) = $0 { head } else { nil } }.first
    }
    var changes: [ResponseHead] { all.compactMap { if case .changed(let head) = $0 { head } else { nil } } }
    var statuses: [TransferStatus] { all.compactMap { if case .status(let status) = $0 { status } else { nil } } }
    var end: TransferEvent? { all.last { $0.isEnd } }
    var finished: Bool { if case .finished? = end { true } else { false } }

    /// The bytes delivered since the last `changed` (or from the start), checked contiguous.
    var body: (start: Int64, bytes: Data)? {
        var start: Int64?
        var bytes = Data()
        for event in all {
            switch event {
            case .changed:
                start = nil
                bytes = Data()
            case .data(let chunk, let offset):
                if start == nil { start = offset }
                guard offset == start! + Int64(bytes.count) else { return nil }
                bytes.append(chunk)
            default:
                break
            }
        }
        return start.map { ($0, bytes) }
    }

    /// Where the events break the fetcher's contract, or nil: first a head event, data
    /// contiguous (restarting at 0 after a change), exactly one end event, last.
    var contractViolation: String? {
        let events = all
        let heads = events.filter(\.isHead)
        guard let first = events.firstIndex(where: { !$0.isStatus }) else { return "no event" }
        if !events[first].isHead && !events[first].isEnd { return "first event is \(events[first])" }
        if heads.count > 1 && heads.dropFirst().contains(where: { if case .changed = $0 { false } else { true } }) {
            return "a second head that is not a change"
        }
        let ends = events.filter(\.isEnd)
        if ends.count != 1 || !(events.last?.isEnd ?? false) {
            return "\(ends.count) end events, last \(String(describing: events.last))"
        }
        var expected: Int64?
        for event in events {
            switch event {
            case .response(let head): expected = head.bodyStart
            case .changed: expected = 0
            case .data(let chunk, let offset):
                if let wanted = expected, offset != wanted { return "data at \(offset), expected \(wanted)" }
                expected = offset + Int64(chunk.count)
            default: break
            }
        }
        return nil
    }
}

extension TransferEvent {
    var isEnd: Bool {
        switch self {
        case .finished, .failed: true
        default: false
        }
    }
    var isHead: Bool {
        switch self {
        case .response, .changed, .notModified: true
        default: false
        }
    }
    var isStatus: Bool { if case .status = self { true } else { false } }
    var isData: Bool { if case .data = self { true } else { false } }
}

extension FetcherConfiguration {
    /// Short timers so fault tests take seconds: a 1 s stall timeout, 50 ms first backoff.
    static var forTests: FetcherConfiguration {
        var configuration = FetcherConfiguration(userAgent: "Spool/test")
        configuration.stallTimeout = 1
        configuration.retryBaseDelay = 0.05
        configuration.retryMaxDelay = 0.2
        return configuration
    }
}

extension Fetcher {
    /// Starts `request` and returns the recorder of its events.
    @discardableResult
    func record(
        _ request: RangeRequest, reresolve: URLResolver? = nil, into recorder: TransferRecorder = TransferRecorder()
    ) -> TransferRecorder {
        start(request, reresolve: reresolve) { _, event in recorder.record(event) }
        return recorder
    }
}

/// Checks what every fault test checks: the contract held, the transfer finished, and the
/// bytes delivered (since the last change) are exactly `expected` from `start`.
func expectDelivered(
    _ recorder: TransferRecorder, _ expected: Data, from start: Int64 = 0,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(recorder.waitForEnd(), "no end event", sourceLocation: sourceLocation)
    #expect(recorder.contractViolation == nil, "\(recorder.contractViolation ?? "")", sourceLocation: sourceLocation)
    #expect(recorder.finished, "ended with \(String(describing: recorder.end))", sourceLocation: sourceLocation)
    guard let body = recorder.body else {
        Issue.record("no contiguous body", sourceLocation: sourceLocation)
        return
    }
    #expect(body.start == start, sourceLocation: sourceLocation)
    #expect(
        firstDifference(body.bytes, expected) == nil, "\(describeDifference(body.bytes, expected))",
        sourceLocation: sourceLocation)
}

/// Checks that the transfer ended (keeping the contract) with an error `matches` accepts.
func expectFailure(
    _ recorder: TransferRecorder, sourceLocation: SourceLocation = #_sourceLocation,
    _ matches: (FetchError) -> Bool
) {
    #expect(recorder.waitForEnd(), "no end event", sourceLocation: sourceLocation)
    #expect(recorder.contractViolation == nil, "\(recorder.contractViolation ?? "")", sourceLocation: sourceLocation)
    guard case .failed(let error)? = recorder.end, matches(error) else {
        Issue.record("unexpected end: \(recorder.all)", sourceLocation: sourceLocation)
        return
    }
}
