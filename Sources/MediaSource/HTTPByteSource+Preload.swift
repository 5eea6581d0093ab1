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
            case .failure(let error): self.endPreload(because: error.description)
            case .success: self.endPreloadIfOver()
            }
        }
    }

    /// Why the preload is over after an event, decided under the lock: `.none` while it goes
    /// on (or when this is no preload), `.some(nil)` when the head is held. `failure` is the
    /// event's, if it was one.
    func preloadOutcome(failure: FetchError?, _ state: State) -> String?? {
        guard state.preloadEnd != nil else { return .none }
        if state.keepsOffDisk { return "not preloaded: the origin forbids storing it" }
        if let failure { return .some(failure.description) }
        if let failure = state.failure { return .some(failure.description) }
        guard state.info != nil, state.planner.transfers.isEmpty else { return .none }
        if state.planner.holdsScope(cached: held(state)) { return .some(nil) }
        if state.planner.resource?.rangesSupported == false {
            return "the origin ignores Range requests: the rest comes when it plays"
        }
        return "the download stopped before the head was fetched"
    }

    /// Ends the preload when it is over (its head is held from the cache, or the opening's
    /// answer settled it).
    private func endPreloadIfOver() {
        let outcome = state.withLock { preloadOutcome(failure: nil, $0) }
        if let outcome { endPreload(because: outcome) }
    }

    /// Stops the preload's downloads and reports its end, once.
    private func endPreload(because reason: String?) {
        let (end, actions) = state.withLock { state -> ((@Sendable (String?) -> Void)?, [DownloadPlanner.Action]) in
            guard let end = state.preloadEnd else { return (nil, []) }
            state.preloadEnd = nil
            return (end, state.planner.stopAll())
        }
        execute(actions)
        end?(reason)
    }
}
