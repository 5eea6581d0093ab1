import DBusKit
import Foundation
import Synchronization
import TestSupport

/// How one call to the daemon ended.
enum CallOutcome: Sendable {
    /// The daemon answered with a method return (or the command exited 0); its results.
    case answered([DBusValue])
    /// The daemon answered with an error (or the command exited non-zero): it is alive and said no.
    case refused(String)
    /// No answer within the timeout, or the daemon left the bus before answering.
    case unanswered(String)

    /// The results of an answered call.
    var values: [DBusValue]? {
        if case .answered(let values) = self { return values }
        return nil
    }
}

/// Every call the bench makes, counted by kind, with the unanswered ones listed in full.
/// Kinds starting with `action:` are the driver's actions, `poll:` the MPRIS clients' reads,
/// anything else the bench's own reads (sampling, finding track ids).
final class Ledger: Sendable {
    /// The counts of one kind of call.
    struct Tally: Sendable {
        var answered = 0
        var refused = 0
        var unanswered = 0
        /// How often each refusal message came back (the daemon's reasons).
        var refusals: [String: Int] = [:]
        /// Seconds each answered or refused call took.
        var latencies: [Double] = []
    }

    /// A call that got no answer.
    struct Unanswered: Sendable {
        /// Seconds since the start of the soak when the call was made.
        let at: Double
        /// The call and its arguments.
        let what: String
        /// Why there is no answer (the timeout, or the bus's error).
        let why: String
    }

    private struct State {
        var tallies: [String: Tally] = [:]
        var unanswered: [Unanswered] = []
        /// Calls that went unanswered while the bench itself had stopped the daemon (gdb).
        var duringCapture = 0
        /// When the bench held the daemon stopped (an open end: it still does).
        var captureWindows: [(start: Double, end: Double?)] = []
    }

    /// The instant the soak started; every `at` is measured from it.
    let start: ContinuousClock.Instant
    private let state = Mutex(State())

    init(start: ContinuousClock.Instant = .now) { self.start = start }

    /// Seconds since the start.
    var elapsed: Double { seconds(from: start) }

    /// Records the outcome of a call of `kind` made at `at` seconds that took `latency` seconds.
    func record(_ kind: String, _ outcome: CallOutcome, what: String, at: Double, latency: Double) {
        state.withLock { state in
            var tally = state.tallies[kind] ?? Tally()
            // A call made while gdb held the daemon stopped says nothing about the daemon:
            // its latency is left out, and so is its not being answered.
            let overlaps = { (window: (start: Double, end: Double?)) in
                at + latency >= window.start && at <= (window.end ?? .infinity)
            }
            let held = state.captureWindows.contains(where: overlaps)
            switch outcome {
            case .answered:
                tally.answered += 1
                if !held { tally.latencies.append(latency) }
            case .refused(let why):
                tally.refused += 1
                tally.refusals[Self.shortened(why), default: 0] += 1
                if !held { tally.latencies.append(latency) }
            case .unanswered(let why):
                if held {
                    state.duringCapture += 1
                } else {
                    tally.unanswered += 1
                    state.unanswered.append(Unanswered(at: at, what: what, why: why))
                }
            }
            state.tallies[kind] = tally
        }
    }

    /// Marks from now on as a time the bench holds the daemon stopped, until `endCapture`.
    func beginCapture() {
        let now = elapsed
        state.withLock { $0.captureWindows.append((now, nil)) }
    }

    /// Ends the window `beginCapture` opened.
    func endCapture() {
        let now = elapsed
        state.withLock { state in
            if let last = state.captureWindows.indices.last { state.captureWindows[last].end = now }
        }
    }

    /// The counts by kind.
    var tallies: [String: Tally] { state.withLock { $0.tallies } }
    /// Every unanswered call, in the order recorded.
    var unanswered: [Unanswered] { state.withLock { $0.unanswered } }
    /// Unanswered calls made while the bench held the daemon stopped for a stack capture.
    var unansweredDuringCapture: Int { state.withLock { $0.duringCapture } }

    /// The sum of answered calls over kinds with `prefix`.
    func count(prefix: String, _ field: (Tally) -> Int) -> Int {
        tallies.filter { $0.key.hasPrefix(prefix) }.values.reduce(0) { $0 + field($1) }
    }

    /// Refusal messages without the parts that differ from call to call (times, track ids),
    /// so identical reasons add up.
    static func shortened(_ text: String) -> String {
        let line = text.split(separator: "\n").first.map(String.init) ?? text
        let withoutNumbers = line.replacing(/\/org\/mpris\/MediaPlayer2\/Track\/\w+/, with: "<track>")
            .replacing(/\d+(\.\d+)?/, with: "N")
        return String(withoutNumbers.prefix(140))
    }
}

/// Percentile `p` (0…1) of sorted `values`; 0 for none.
func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}
