/// What a ``HTTPByteSource`` does with the conditional request that checks a complete cached
/// entry against its origin. Pure: the source feeds it what happened and carries out the actions.
///
/// Usually the open does not wait for the answer: the play starts from the cached copy while the
/// request is out (provisional), and a new version answered before the deadline (the `wait` of
/// ``Revalidator``) restarts the play on it. Where the origin asked that the copy be checked
/// before use (no-cache, must-revalidate) the open is held for the answer instead, and a new
/// version in it is played from its first byte, the answer's body being its download. After the
/// deadline, or once a held open is done, a new version only replaces the entry for the next
/// play (it must not be spliced with, or written over, the copy being played).
struct RevalidationGate: Equatable {
    /// How far the check has come.
    enum Phase: Equatable {
        /// The open waits for the answer or the deadline, whichever comes first.
        case holding
        /// The open went on from the cache; until the deadline a new version restarts the play.
        case provisional
        /// The open completed from the cache; the answer only decides about the next play.
        case background
        /// Answered or given up: nothing more to do.
        case settled
    }

    /// What happened to the conditional request, or the time that passed.
    enum Event: Equatable {
        /// 304: the cached copy is current.
        case notModified
        /// A response with a body: `sameVersion` when its validators name the cached version
        /// (an origin ignoring the condition), false for a new one.
        case answered(sameVersion: Bool)
        /// No connection could be made (refused, no route, unknown host): the request keeps
        /// retrying in the background, but nobody waits for it.
        case unreachable
        /// The request failed for good.
        case failed
        /// The request ended.
        case finished
        /// The wait for the answer is over.
        case deadline
    }

    /// What the source does next.
    enum Action: Equatable {
        /// Nothing.
        case none
        /// Complete the open from the cache. `stopRequest`: cancel the request (its answer is
        /// known and its body unwanted); else it goes on, at the lowest priority.
        case openFromCache(stopRequest: Bool)
        /// A new version answered in time: empty the entry and open as if uncached, with the
        /// answer (the new version's body from its first byte) as the download.
        case playNewVersion
        /// A new version answered too late for this play: cancel, replace the entry at close.
        case replaceOnClose
        /// A new version answered just after the play began from the cached copy: drop the copy
        /// and cancel the request; the play fails as ``MediaSourceError/versionChanged(_:)``, which
        /// starts it again at once on the new version.
        case restartWithNewVersion
        /// Cancel the request: its answer is known.
        case stopRequest
    }

    /// Where the check stands.
    private(set) var phase: Phase
    /// The open waits for the answer itself, not for a deadline (the origin asked that the
    /// copy be checked before use: no-cache, must-revalidate).
    let untilAnswered: Bool

    /// A check that holds the open (`holdsOpen`) or runs in the background from the start;
    /// `untilAnswered` holds it past any deadline.
    init(holdsOpen: Bool, untilAnswered: Bool = false) {
        phase = holdsOpen ? .holding : .background
        self.untilAnswered = untilAnswered && holdsOpen
    }

    /// A check of a play that went on from the cache at once: a new version answered before the
    /// deadline restarts the play; after it, the new version waits for the next play.
    static var provisional: RevalidationGate {
        var gate = RevalidationGate(holdsOpen: false)
        gate.phase = .provisional
        return gate
    }

    /// Moves on with `event`; returns what to do.
    mutating func handle(_ event: Event) -> Action {
        switch (phase, event) {
        case (.settled, _):
            return .none
        case (.holding, .notModified):
            phase = .settled
            return .openFromCache(stopRequest: false)  // a 304 ends by itself, its connection kept
        case (.holding, .answered(let same)):
            phase = .settled
            return same ? .openFromCache(stopRequest: true) : .playNewVersion
        case (.holding, .deadline) where untilAnswered:
            return .none
        case (.holding, .unreachable), (.holding, .deadline):
            // Offline or slow: the cached copy plays now. The request goes on; a new version it
            // finds later replaces the entry at close.
            phase = .background
            return .openFromCache(stopRequest: false)
        case (.holding, .failed), (.holding, .finished):
            phase = .settled
            return .openFromCache(stopRequest: false)
        case (.provisional, .answered(let same)):
            phase = .settled
            return same ? .stopRequest : .restartWithNewVersion
        case (.provisional, .deadline):
            phase = .background
            return .none
        case (.provisional, .unreachable):
            return .none
        case (.provisional, .notModified), (.provisional, .failed), (.provisional, .finished),
            (.background, .notModified), (.background, .failed), (.background, .finished):
            phase = .settled
            return .none
        case (.background, .answered(let same)):
            phase = .settled
            return same ? .stopRequest : .replaceOnClose
        case (.background, .unreachable), (.background, .deadline):
            return .none
        }
    }
}
