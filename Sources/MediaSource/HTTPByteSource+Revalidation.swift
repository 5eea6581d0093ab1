import Basics
import ByteSourceAPI
import Dispatch
import Fetcher
import FoundationEssentials
import RangeCache
import Synchronization

// The check of a complete cached copy against the origin (see ``RevalidationGate``), and what
// clients are told of the download.

extension HTTPByteSource {
    /// What the download is doing, in words for a client: complete, fetching,
    /// retrying in N s (with the reason), stalled, paused, failed (with the reason), or idle.
    public var downloadState: String {
        state.withLock { state in
            if let length = state.info?.length, held(state).contiguousLength(from: 0) >= length { return "complete" }
            if let failure = state.failure { return "failed: \(failure)" }
            if let status = state.transferStatus { return status }
            return state.planner.isDownloading ? "fetching" : "idle"
        }
    }

    static func describe(_ status: TransferStatus) -> String? {
        switch status {
        case .retrying(let seconds, _, let reason):
            return "retrying in \(cFormat("%.0f", seconds.rounded(.up))) s: \(reason.description)"
        case .reresolving(let code): return "renewing the URL (HTTP \(code))"
        case .stalled(let seconds): return cFormat("stalled for %.0f s, reconnecting", seconds)
        case .tooSlow(let rate): return cFormat("too slow (%.0f bytes/s), reconnecting", rate)
        case .reconnecting: return "reconnecting"
        case .paused: return "waiting for the playing track's download"
        case .resumed, .endedShort: return nil
        }
    }

    /// Whether a download for this resource is running (not counting revalidation).
    public var isDownloading: Bool { state.withLock { $0.planner.isDownloading } }

    /// Whether the background check of a complete entry is still out, or its answer not yet
    /// carried out (an entry it empties is empty once this is false).
    public var isRevalidating: Bool { state.withLock { $0.revalidation != nil } }

    /// Whether the check, still out, can no longer change this play: its deadline passed (or
    /// the open went on without it), so a new version it finds waits for the next play.
    public var isCheckingForTheNextPlay: Bool {
        state.withLock { $0.revalidation != nil && $0.revalidationGate?.phase == .background }
    }

    /// Whether the background check found a new version (it replaces the entry at close).
    public var foundNewVersion: Bool { state.withLock { $0.replaceOnClose } }

    /// A conditional request for the first byte (If-None-Match and If-Modified-Since, so an
    /// origin with only a date can answer 304 too). Returns whether the open is held
    /// (`completion` is then called later); see ``RevalidationGate``.
    /// - With the revalidator's `wait`, the request goes out at the open's priority and the play
    ///   starts from the cache beside it: the pipeline is built and starts while the answer
    ///   travels, and a new version answered within `wait` starts the play again on it.
    /// - A source prepared ahead (background) is held instead, until the answer or the deadline:
    ///   nobody waits for it, and a new version then plays from its first byte.
    /// - `beforeUse`: the open waits for the answer however long it takes (only an unreachable
    ///   origin or a failure opens from the cache).
    /// - Without a wait the request runs off the critical path; a new version waits for the next play.
    ///
    /// The request is returned, for the caller to start with ``startCheck(_:)`` once the lock is
    /// released.
    func revalidateLocked(
        _ state: inout State, against validator: ResourceVersion, opening info: ResourceInfo, rangesSupported: Bool,
        beforeUse: Bool, _ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void
    ) -> (holds: Bool, check: RangeRequest) {
        let wait = revalidator?.wait ?? .zero
        let holds = beforeUse || (wait > .zero && state.planner.background)
        let provisional = !holds && wait > .zero
        let priority: FetchPriority =
            holds || provisional ? (state.planner.background ? .preload : .playback) : .fillHoles
        // Held, a new version's answer becomes the download that plays it, so it asks for the whole
        // body (a 304 costs the same); otherwise only a byte, as the answer alone matters.
        let request = RangeRequest(
            url: url, start: 0, end: holds ? nil : 1, condition: .ifNoneMatch(validator), priority: priority)
        state.revalidationGate =
            provisional ? .provisional : RevalidationGate(holdsOpen: holds, untilAnswered: beforeUse)
        state.revalidationStarted = .now
        state.revalidation = Self.checkKey
        if holds {
            state.heldOpen = HeldOpen(
                info: info, rangesSupported: rangesSupported, completion: completion, since: .now)
        }
        guard !beforeUse, holds || provisional else { return (holds, request) }
        let nanoseconds =
            Int(wait.components.seconds) * 1_000_000_000 + Int(wait.components.attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
            self?.advanceRevalidation(.deadline)
        }
        return (holds, request)
    }

    /// The key of the check among the source's transfers: one the planner never gives, so that
    /// the check's response can become the planner's download under it (``DownloadPlanner/adopt(at:as:)``).
    static let checkKey = 0

    /// Starts the check ``revalidateLocked`` asked for; never under the state lock.
    func startCheck(_ request: RangeRequest) {
        transfers.start(Self.checkKey, request) { [weak self] event in self?.revalidationEvent(event) }
    }

    private func revalidationEvent(_ event: TransferEvent) {
        if state.withLock({ $0.adoptedCheck }) {
            return handle(event, of: Self.checkKey)  // the new version's download
        }
        let step: RevalidationGate.Event
        var answer: ResponseHead?
        switch event {
        case .notModified(let head):
            step = .notModified
            entry?.refreshFreshness(from: head)
        case .changed(let head), .response(let head):
            // Some origins ignore If-None-Match: compare the validators (and length) ourselves.
            step = .answered(sameVersion: entry?.holdsVersion(of: head) ?? false)
            answer = head
        case .status(.retrying(_, _, let reason)) where reason.unreachableServer != nil: step = .unreachable
        case .failed: step = .failed
        case .finished: step = .finished
        case .data, .status, .streamMetadata: return
        }
        advanceRevalidation(step, answer: answer)
    }

    /// Feeds `step` of the check to the gate and carries out its decision; `answer` is the
    /// head of the response that brought a body, if the step is one. The entry is emptied, and
    /// the fetcher told, once the lock is released.
    private func advanceRevalidation(_ step: RevalidationGate.Event, answer: ResponseHead? = nil) {
        var actions: [DownloadPlanner.Action] = []
        var callback: (@Sendable () -> Void)?  // the open's completion, or the woken reader
        var cancel = false
        var lowerPriority = false
        var dropEntry = false
        var adopted = false
        state.withLock { state in
            guard !state.closed, state.revalidation != nil, var gate = state.revalidationGate else { return }
            let action = gate.handle(step)
            state.revalidationGate = gate
            let held = state.heldOpen
            let waited = held.map { Self.milliseconds(ContinuousClock.now - $0.since) } ?? 0
            switch action {
            case .none:
                break
            case .openFromCache(let stopRequest):
                guard let held else { break }
                state.heldOpen = nil
                state.info = held.info
                state.planner.setResource(.init(length: held.info.length, rangesSupported: held.rangesSupported))
                callback = { held.completion(.success(held.info)) }
                log.info("opened \(loggable(url)) from the cache after \(waited) ms (the check: \(step))")
                cancel = stopRequest
                lowerPriority = gate.phase == .background
            case .playNewVersion:
                // Answered in time: the new version plays from its first byte. The answer is its
                // body from byte 0, so that response becomes the download, as for an uncached
                // resource (the open completes with its head); nothing is asked twice.
                guard let held, let answer else { break }
                log.info("\(loggable(url)) changed on the server (answered in \(waited) ms): playing the new version")
                state.heldOpen = nil
                dropEntry = true
                state.generation &+= 1
                state.memory.empty()
                state.validator = nil
                state.openCompletion = held.completion
                actions = state.planner.adopt(at: answer.bodyStart, as: Self.checkKey)
                state.meters[Self.checkKey] = (held.since, answer.bodyStart)
                state.adoptedCheck = true
                adopted = true
            case .replaceOnClose:
                state.replaceOnClose = true
                cancel = true
            case .restartWithNewVersion:
                // The play began from the copy: its pipeline has the old bytes. Nothing is spliced;
                // reads fail from here on, and the player starts the track again on the new version.
                let answered = state.revalidationStarted.map { Self.milliseconds(ContinuousClock.now - $0) } ?? 0
                log.info("\(loggable(url)) changed on the server (answered in \(answered) ms): starting it again")
                dropEntry = true
                state.generation &+= 1
                state.memory.empty()
                let failure = MediaSourceError.versionChanged(loggable(url))
                state.failure = failure
                actions = state.planner.stopAll()
                cancel = true
                // One report: through the handler when there is one (the reader may be asking for
                // nothing now), else to the waiting reader, whose read then fails.
                if let handler = state.failureHandler {
                    state.failureHandler = nil
                    state.wake = nil
                    callback = { handler(failure) }
                } else if state.planner.waiting != nil, let wake = state.wake {
                    state.wake = nil
                    callback = wake
                }
            case .stopRequest:
                cancel = true
            }
            // A check that empties the entry is over once the entry is empty, not before: who
            // sees it settled may reopen the cache at once and must not find the old copy there.
            if gate.phase == .settled || cancel || adopted, !dropEntry { state.revalidation = nil }
        }
        if dropEntry {
            try? entry?.drop()
            state.withLock { $0.revalidation = nil }
        }
        if cancel { transfers.cancel(Self.checkKey) }
        if lowerPriority { transfers.setPriority(Self.checkKey, .fillHoles) }
        execute(actions)
        if adopted, let answer { handle(.response(answer), of: Self.checkKey) }
        callback?()
    }

    /// `duration` in whole milliseconds, for logs.
    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }
}
