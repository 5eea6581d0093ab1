/// When to reload a live media playlist (RFC 8216 §6.3.4). It reads no clock: the caller says
/// when each load began or failed, and gets back when to begin the next one.
///
/// - After a load that changed the playlist (or the first load): the target duration after that
///   load *began*, as the RFC says.
/// - After a load that found it unchanged: half the target duration after that load began.
/// - After a failed load: half the target duration after the failure, doubling with each
///   consecutive failure, capped at ``Policy/maximumFailureBackoff`` (but never below half the
///   target duration). Before any playlist has loaded, ``Policy/firstFailureBackoff`` stands in
///   for half the target duration. A success resets the count.
/// - Once the playlist stops changing for more than ``Policy/staleAfterTargetDurations`` target
///   durations, counted from the beginning of the load that last changed it, the decision is
///   ``LiveReloadDecision/stale(reloadAt:unchangedFor:)``. A live server adds a segment about every
///   target duration, and one late segment leaves the playlist unchanged for up to about two; three
///   tells an encoder that stopped from one that ran late, and is still short enough to notice it
///   before the listener's buffer runs dry.
/// - A playlist that can no longer change (``MediaPlaylist/isLive`` false) needs no reload:
///   ``LiveReloadDecision/ended``.
public struct LiveReloadSchedule: Sendable, Equatable {
    /// The rule's tunable numbers.
    public struct Policy: Sendable, Equatable {
        /// Unchanged for more than this many target durations is stale.
        public var staleAfterTargetDurations: Double
        /// The longest wait after a failure.
        public var maximumFailureBackoff: Duration
        /// The first wait after a failure when no playlist has loaded yet (the target duration is
        /// unknown).
        public var firstFailureBackoff: Duration

        /// Creates a policy; the defaults are the documented rule's.
        public init(
            staleAfterTargetDurations: Double = 3, maximumFailureBackoff: Duration = .seconds(30),
            firstFailureBackoff: Duration = .seconds(1)
        ) {
            self.staleAfterTargetDurations = staleAfterTargetDurations
            self.maximumFailureBackoff = maximumFailureBackoff
            self.firstFailureBackoff = firstFailureBackoff
        }
    }

    /// The numbers in use.
    public var policy: Policy
    /// The last playlist loaded, to tell whether the next one changed.
    public private(set) var lastPlaylist: MediaPlaylist?
    /// When the load that last changed the playlist began.
    public private(set) var lastChangeBegan: ContinuousClock.Instant?
    /// Failed loads since the last successful one.
    public private(set) var consecutiveFailures = 0

    /// A schedule before the first load.
    public init(policy: Policy = Policy()) {
        self.policy = policy
    }

    /// Records a successful load that began at `began` and gave `playlist`; answers when to load
    /// it again. It changed when ``MediaPlaylist/hasSameContent(as:)`` says so against the last
    /// playlist.
    public mutating func loaded(_ playlist: MediaPlaylist, began: ContinuousClock.Instant) -> LiveReloadDecision {
        let changed = lastPlaylist.map { !playlist.hasSameContent(as: $0) } ?? true
        lastPlaylist = playlist
        consecutiveFailures = 0
        guard playlist.isLive else { return .ended }
        let target = playlist.targetDuration
        guard !changed, let lastChangeBegan else {
            lastChangeBegan = began
            return .reload(at: began + target)
        }
        let unchangedFor = began - lastChangeBegan
        let reloadAt = began + target / 2
        if unchangedFor > target * policy.staleAfterTargetDurations {
            return .stale(reloadAt: reloadAt, unchangedFor: unchangedFor)
        }
        return .reload(at: reloadAt)
    }

    /// Records a failed load (a network error, an HTTP error, or text that did not parse) that
    /// ended at `ended`; answers when to try again.
    public mutating func failed(ended: ContinuousClock.Instant) -> LiveReloadDecision {
        consecutiveFailures += 1
        return .reload(at: ended + failureBackoff(afterFailures: consecutiveFailures))
    }

    /// The wait after `failures` consecutive failures.
    public func failureBackoff(afterFailures failures: Int) -> Duration {
        let base = lastPlaylist.map { $0.targetDuration / 2 } ?? policy.firstFailureBackoff
        let cap = max(policy.maximumFailureBackoff, base)
        var wait = base
        for _ in 1..<max(1, failures) {
            wait *= 2
            if wait >= cap { return cap }
        }
        return min(wait, cap)
    }
}

/// What to do after a playlist load.
public enum LiveReloadDecision: Sendable, Equatable {
    /// Load the playlist again at this instant.
    case reload(at: ContinuousClock.Instant)
    /// The playlist has not changed for `unchangedFor`, longer than the stale limit: the server
    /// may have stopped. Reloading at `reloadAt` follows the RFC; the caller may give up instead.
    case stale(reloadAt: ContinuousClock.Instant, unchangedFor: Duration)
    /// The playlist can no longer change (`EXT-X-ENDLIST`, or type VOD): no more reloads.
    case ended

    /// When to reload; nil for ``ended``.
    public var reloadAt: ContinuousClock.Instant? {
        switch self {
        case .reload(let at): at
        case .stale(let reloadAt, _): reloadAt
        case .ended: nil
        }
    }
}
