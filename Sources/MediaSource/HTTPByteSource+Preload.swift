import Fetcher
import FoundationEssentials

// A preload is this source with nobody reading: the planner's scope keeps its downloads to the
// head, and the one handler of transfer events tells when it is over.

extension HTTPByteSource {
    /// Fetches the resource's first `prefix` and last `tail` bytes into its cache entry at
    /// preload priority with nobody reading, each missing range once (with If-Range once bytes
    /// are cached), bound to the version the origin serves as a playing source's bytes are.
    /// Calls `onEnd` once: with nil when those bytes are held, otherwise with why not (the origin
    /// forbids storing it, ignores Range, or failed). ``close()`` stops it; fetched bytes stay.
    public func preload(prefix: Int64, tail: Int64, onEnd: @escaping @Sendable (String?) -> Void) {
        state.withLock { state in
            state.preloadEnd = onEnd
            state.planner.limitToHead(prefix: prefix, tail: tail)
            _ = state.planner.setBackground(true, cached: held(state), now: .now)
        }
        open { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error): self.endPreload(.stopped(error.description))
            case .success: self.endPreloadIfOver()
            }
        }
    }

    /// How a preload ended.
    enum PreloadEnd {
        /// Its head is held.
        case headHeld
        /// It stopped short, for this reason.
        case stopped(String)

        /// What the preload's caller is told: nil when the head is held, else why not.
        var reason: String? {
            switch self {
            case .headHeld: nil
            case .stopped(let why): why
            }
        }
    }

    /// Whether the preload is over after an event, decided under the lock: nil while it goes on
    /// (or when this is no preload). `failure` is the event's, if it was one.
    func preloadEnd(failure: FetchError?, _ state: State) -> PreloadEnd? {
        guard state.preloadEnd != nil else { return nil }
        if state.keepsOffDisk { return .stopped("not preloaded: the origin forbids storing it") }
        if let failure { return .stopped(failure.description) }
        if let failure = state.failure { return .stopped(failure.description) }
        guard state.info != nil, state.planner.transfers.isEmpty else { return nil }
        if state.planner.holdsScope(cached: held(state)) { return .headHeld }
        if state.planner.resource?.rangesSupported == false {
            return .stopped("the origin ignores Range requests: the rest comes when it plays")
        }
        return .stopped("the download stopped before the head was fetched")
    }

    /// Ends the preload when it is over (its head is held from the cache, or the opening's
    /// answer settled it).
    private func endPreloadIfOver() {
        if let end = state.withLock({ preloadEnd(failure: nil, $0) }) { endPreload(end) }
    }

    /// Stops the preload's downloads and reports its end, once.
    private func endPreload(_ outcome: PreloadEnd) {
        let (end, actions) = state.withLock { state -> ((@Sendable (String?) -> Void)?, [DownloadPlanner.Action]) in
            guard let end = state.preloadEnd else { return (nil, []) }
            state.preloadEnd = nil
            return (end, state.planner.stopAll())
        }
        execute(actions)
        end?(outcome.reason)
    }
}
