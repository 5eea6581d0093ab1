/// Whether an attempt delivers fast enough to be worth keeping. A stall check alone misses a
/// server that trickles a byte every few seconds: each byte resets the stall clock, so the
/// track neither plays nor fails. This check measures the body bytes of fixed windows and
/// reports a window slower than the minimum rate. Pure: the caller feeds it times and counts.
struct SpeedCheck: Equatable {
    /// Bytes per second below which a window counts as too slow; zero or less disables the check.
    let minimumRate: Double
    /// The length of one measuring window, in seconds.
    let window: Double
    /// When the current window began.
    private(set) var windowStart: Double
    /// Bytes received in the current window.
    private(set) var windowBytes: Int64 = 0

    init(minimumRate: Double, window: Double, now: Double) {
        self.minimumRate = minimumRate
        self.window = window
        windowStart = now
    }

    /// Whether the check is on.
    var isEnabled: Bool { minimumRate > 0 && window > 0 }

    /// When the current window ends and is judged; nil when the check is off.
    var deadline: Double? { isEnabled ? windowStart + window : nil }

    /// Starts a new window: a new attempt, or receiving again after a pause (time spent
    /// paused is not the server's fault).
    mutating func restart(now: Double) {
        windowStart = now
        windowBytes = 0
    }

    /// Counts `count` bytes received.
    mutating func received(_ count: Int) { windowBytes += Int64(count) }

    /// The judgement of a window.
    enum Verdict: Equatable {
        /// The window is not over yet (or the check is off).
        case pending
        /// The window is over and reached the minimum rate.
        case fastEnough
        /// The window is over and measured this rate, below the minimum.
        case tooSlow(Double)
    }

    /// Judges the window once it is over; a judged window starts the next.
    mutating func judge(now: Double) -> Verdict {
        guard isEnabled, now >= windowStart + window else { return .pending }
        let rate = Double(windowBytes) / max(now - windowStart, window)
        restart(now: now)
        return rate < minimumRate ? .tooSlow(rate) : .fastEnough
    }
}
