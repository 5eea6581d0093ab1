import Basics
import Dispatch
import Fetcher
import FoundationEssentials
import RangeCache
import Synchronization

// One file though past 500 lines: opening, revalidation and the fetcher's events all change
// the one locked `State`, whose invariants are easier to keep when every change is in sight.

/// Bytes of an http(s) resource, read from the range cache when they are there
/// and fetched when they are not; everything fetched is written to the cache.
///
/// - A complete entry opens from the cache with no network at all.
/// - A partial entry opens at once from what the cache knows (it plays offline
///   as far as it goes) and continues from its first missing byte with If-Range.
/// - Which transfers run is decided by a ``DownloadPlanner`` (its rules: sequential
///   playback on one request, probes on short parallel ones, seeks parking the running
///   download, no byte asked twice); this class carries its actions out with the
///   fetcher, outside its lock, and writes what arrives to the cache.
/// - A resource that changed on the server is never spliced with the old copy:
///   the entry is emptied, and a track already playing fails so it is reopened.
public final class CachedByteSource: ByteSource {
    private struct State {
        var info: ResourceInfo?
        var validator: ResourceVersion?
        var openCompletion: (@Sendable (Result<ResourceInfo, MediaSourceError>) -> Void)?
        /// The download decisions; this class carries them out.
        var planner: DownloadPlanner
        /// How to wake the reader the planner has waiting.
        var wake: (@Sendable () -> Void)?
        /// When each transfer's request was started, and from where: its measured rate.
        var meters: [Int: (start: ContinuousClock.Instant, offset: Int64)] = [:]
        var failure: MediaSourceError?
        var closed = false
        /// Bytes the cache could not store (disk full): kept so playback goes on, within
        /// the memory window around the play head.
        var overflow = ByteRuns()
        /// The disk has refused bytes, or the origin forbids storing them: the reason is logged
        /// and the download kept to the window.
        var streamingFromMemory = false
        /// The origin forbids storing the resource (`no-store`, `Vary: *`): no byte of it goes to
        /// the disk; every byte is kept in memory, within the window.
        var keepsOffDisk = false
        /// What the download is doing, for clients ("retrying in 2 s: HTTP status 503").
        var transferStatus: String?
        /// The background check of a complete entry, and whether it found a new version.
        var revalidation: TransferID?
        var replaceOnClose = false
        /// The origin could not be reached (refused, no route, unknown host) while a reader
        /// waited: reads of missing bytes fail with it until bytes arrive again, and each such
        /// read tries the origin once more at once. Retries go on in the background.
        var unreachable: MediaSourceError?
        /// The answer for the next read of missing bytes: the origin was unreachable while it waited.
        var readerError: MediaSourceError?
        /// Where the check of a complete entry stands (see ``RevalidationGate``), and since when.
        var revalidationGate: RevalidationGate?
        var revalidationStarted: ContinuousClock.Instant?
        /// An open held for the check's answer: the cached entry's facts and the caller.
        var heldOpen: HeldOpen?
        /// The check whose answer was a new version in time: its response streams the new body,
        /// so it became the planner's download under this key.
        var adopted: (id: TransferID, key: Int)?
        /// Metered rules are in force: the read-ahead keeps its metered window.
        var metered = false
        /// Who learns of a failure no read asked for (``whenFailed(_:)``).
        var failureHandler: (@Sendable (MediaSourceError) -> Void)?
    }

    /// An open waiting for the answer of the check of its complete entry.
    private struct HeldOpen {
        let info: ResourceInfo
        let rangesSupported: Bool
        let completion: @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void
        let since: ContinuousClock.Instant
    }

    private let url: URL
    private let entry: CacheEntry
    private let fetcher: Fetcher
    private let resource: String
    private let revalidator: Revalidator?
    private let memoryWindow: MemoryWindow
    private let readAhead: ReadAheadPolicy?
    private let state: Mutex<State>
    private let transfers: FetcherTransfers
    private let log = Logger(label: "cached-source")

    /// Creates a source for `url` over its cache entry; transfers run on `fetcher`.
    /// With a `revalidator`, a complete entry is checked against the origin in the
    /// background when due: a changed resource replaces the entry for the next play.
    /// With `readAhead`, resources above its threshold are fetched only a window ahead.
    /// When the disk refuses bytes, at most `memoryWindow` of them are kept in memory.
    public init(
        url: URL, entry: CacheEntry, fetcher: Fetcher, revalidator: Revalidator? = nil,
        readAhead: ReadAheadPolicy? = nil, memoryWindow: MemoryWindow = .standard
    ) {
        self.url = url
        self.memoryWindow = memoryWindow
        self.readAhead = readAhead
        self.entry = entry
        self.fetcher = fetcher
        self.revalidator = revalidator
        resource = Revalidator.key(of: entry)
        state = Mutex(State(planner: DownloadPlanner(readAhead: readAhead.map { ($0.threshold, $0.window) })))
        transfers = FetcherTransfers(fetcher: fetcher)
    }

    // MARK: ByteSource

    /// Opens from the cache when it knows the length, else from the first response.
    public func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        open(tail: nil, completion)
    }

    /// Opens as ``open(_:)`` does, fetching the last `tail` bytes first when they are missing
    /// (the planner's "tail first").
    public func open(tail: Int64?, _ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        if !entry.servesRequests(of: fetcher) {
            // Stored for requests with other headers (Vary): not this request's response.
            log.info("\(loggable(url)): the cached copy was selected by other request headers; fetching it again")
            try? entry.drop()
        }
        let metadata = entry.metadata
        let cachedLength = metadata.validator.length
        var opened: ResourceInfo?
        var actions: [DownloadPlanner.Action] = []
        let failure: MediaSourceError? = state.withLock { state in
            guard !state.closed else { return .closed }
            state.validator = metadata.validator.named
            if state.validator == nil, !entry.cachedRanges.isEmpty,
                cachedLength.map({ !entry.cachedRanges.contains(0..<$0) }) ?? true
            {
                // Neither ETag nor Last-Modified: nothing can tell whether the origin still has the
                // file these bytes came from, and a changed file of the same length would be spliced
                // with them. A partial entry of such an origin is fetched again from byte 0.
                log.info(
                    "\(loggable(url)): the origin names no version (no ETag, no Last-Modified); not resuming, fetching it from the start"
                )
                try? entry.drop()
            }
            let held = held(state)
            if let length = cachedLength, held.contiguousLength(from: 0) > 0 || length == 0 {
                let complete = held.contains(0..<length)
                let rangesSupported = metadata.acceptsRanges ?? true
                // A complete copy is read at any offset whatever the origin supports.
                let info = ResourceInfo(
                    length: length, contentType: metadata.contentType, randomAccess: rangesSupported || complete)
                // Fresh (RFC 9111): used with no request at all. Otherwise checked when due, and
                // before use where the origin asked for that (no-cache, must-revalidate).
                let now = Date()
                let beforeUse = metadata.freshness.needsAnswerBeforeUse(at: now)
                if complete, let validator = state.validator, let revalidator, !metadata.freshness.isFresh(at: now),
                    beforeUse || revalidator.claim(resource),
                    revalidateLocked(
                        &state, against: validator, opening: info, rangesSupported: rangesSupported,
                        beforeUse: beforeUse, completion)
                {
                    return nil  // opens with the origin's answer, or from the cache at the deadline
                }
                state.info = info
                state.planner.setResource(.init(length: length, rangesSupported: rangesSupported))
                opened = info
                if !complete {
                    actions = state.planner.open(cached: held, tail: tail)  // continue the download
                }
            } else {
                state.openCompletion = completion
                actions = state.planner.open(cached: held, tail: tail)
            }
            return nil
        }
        if let failure { return completion(.failure(failure)) }
        execute(actions)
        if let opened {
            log.info(
                "opened \(loggable(url)) from the cache (\(entry.contiguousLength(from: 0)) of \(opened.length ?? 0) bytes)"
            )
            completion(.success(opened))
        }
    }

    /// Returns cached bytes at `offset`, or arranges for them to be fetched and the reader woken.
    public func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        read(at: offset, maxLength: maxLength, minLength: maxLength, wake: wake)
    }

    /// Returns at least `minLength` bytes at `offset` (fewer only at the end), up to `maxLength`
    /// when more are here, or arranges for them to be fetched and the reader woken.
    public func read(
        at offset: Int64, maxLength: Int, minLength: Int, wake: @escaping @Sendable () -> Void
    ) -> ReadOutcome {
        var actions: [DownloadPlanner.Action] = []
        defer { execute(actions) }
        return state.withLock { state -> ReadOutcome in
            if state.closed { return .failed(.closed) }
            guard state.info != nil else { return .failed(.readFailed("read before open")) }
            let held = held(state)
            let request = DownloadPlanner.Read(offset: offset, maxLength: maxLength, minLength: minLength)
            let remaining = state.info?.length.map { $0 - offset } ?? .max
            if remaining > 0, held.contiguousLength(from: offset) < min(Int64(request.minLength), remaining) {
                // Missing bytes: a failure or an unreachable origin answers before any new request.
                if let failure = state.failure { return .failed(failure) }
                if let error = state.readerError {
                    state.readerError = nil
                    return .failed(error)
                }
            }
            let (answer, planned) = state.planner.read(request, cached: held, now: .now)
            actions = planned
            switch answer {
            case .endOfStream:
                return .endOfStream
            case .serve(let count):
                state.wake = nil
                if let bytes = entry.read(at: offset, maxLength: count), !bytes.isEmpty { return .data(bytes) }
                if let bytes = state.overflow.read(at: offset, maxLength: count), !bytes.isEmpty { return .data(bytes) }
                return .failed(.readFailed("cached bytes at \(offset) could not be read"))
            case .wait:
                state.wake = wake
                if state.unreachable != nil, state.info?.randomAccess == true {
                    // The last attempt found the origin unreachable and the transfer is backing
                    // off: try once more now, so a reader learns at once whether the network is back.
                    state.unreachable = nil
                    actions += state.planner.retryNow(at: offset + held.contiguousLength(from: offset), cached: held)
                }
                return .pending
            }
        }
    }

    /// Prepared ahead of need (true) or playing (false): sets the priority of its downloads.
    public func setBackground(_ background: Bool) {
        execute(state.withLock { state in state.planner.setBackground(background, cached: held(state), now: .now) })
    }

    /// Whether the cache (or the overflow kept in memory) holds every byte of `range`.
    public func holds(_ range: Range<Int64>) -> Bool {
        range.isEmpty || state.withLock { held($0).contains(range) }
    }

    /// Calls `handler` when the source fails with no read to answer (see ``ByteSource``).
    public func whenFailed(_ handler: @escaping @Sendable (MediaSourceError) -> Void) {
        state.withLock { $0.failureHandler = handler }
    }

    /// Forgets the pending reader.
    public func cancelPendingReads() {
        state.withLock { state in
            state.wake = nil
            state.planner.cancelWaiting()
            state.readerError = nil
        }
    }

    /// The stream's average bytes per second (the player knows it from the duration and the
    /// length): a seek a few seconds of audio ahead of a running download may wait for it.
    /// Zero or less forgets it.
    public func setByteRate(_ bytesPerSecond: Double) {
        execute(
            state.withLock { state in
                state.planner.setByteRate(bytesPerSecond)
                return state.metered ? applyReadAhead(&state) : []
            })
    }

    /// Turns metered rules on or off: the read-ahead keeps the policy's metered window of audio
    /// from now on (a download past it stops at its next bytes) or goes back to the large-file
    /// rule (an idle download goes on at once). Without a read-ahead policy nothing changes.
    public func setMetered(_ metered: Bool) {
        execute(
            state.withLock { state in
                guard state.metered != metered, !state.closed else { return [] }
                state.metered = metered
                return applyReadAhead(&state)
            })
    }

    private func applyReadAhead(_ state: inout State) -> [DownloadPlanner.Action] {
        guard let readAhead else { return [] }
        let limits = readAhead.limits(metered: state.metered, byteRate: state.planner.byteRate)
        return state.planner.setReadAhead(limits, cached: held(state))
    }

    /// Cancels the transfers, starts making written bytes durable and closes the entry.
    public func close() {
        let (actions, revalidation) = state.withLock { state -> ([DownloadPlanner.Action], TransferID?) in
            guard !state.closed else { return ([], nil) }
            state.closed = true
            state.wake = nil
            state.planner.cancelWaiting()
            return (state.planner.stopAll(), state.revalidation)
        }
        execute(actions)
        if let revalidation { fetcher.cancel(revalidation) }
        if state.withLock({ $0.replaceOnClose }) {
            log.info("\(loggable(url)) changed on the server: the next play fetches the new version")
            try? entry.drop()
        }
        // Not waited for: a track change must not wait for the disk (a slow or busy one takes a
        // second per sync); the cache commits these bytes once they are synced.
        entry.closeInBackground()
    }

    // MARK: Revalidation

    /// What the download is doing, in words for a client: complete, fetching,
    /// retrying in N s (with the reason), stalled, paused, failed (with the reason), or idle.
    public var downloadState: String {
        state.withLock { state in
            if let length = state.info?.length, entry.contiguousLength(from: 0) >= length { return "complete" }
            if let failure = state.failure { return "failed: \(failure)" }
            if let status = state.transferStatus { return status }
            return state.planner.isDownloading ? "fetching" : "idle"
        }
    }

    private static func describe(_ status: TransferStatus) -> String? {
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

    /// Whether the background check of a complete entry is still out.
    public var isRevalidating: Bool { state.withLock { $0.revalidation != nil } }

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
    private func revalidateLocked(
        _ state: inout State, against validator: ResourceVersion, opening info: ResourceInfo, rangesSupported: Bool,
        beforeUse: Bool, _ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void
    ) -> Bool {
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
        let id = fetcher.start(request) { [weak self] id, event in
            self?.revalidationEvent(event, of: id)
        }
        state.revalidation = id
        if holds {
            state.heldOpen = HeldOpen(
                info: info, rangesSupported: rangesSupported, completion: completion, since: .now)
        }
        guard !beforeUse, holds || provisional else { return holds }
        let nanoseconds =
            Int(wait.components.seconds) * 1_000_000_000 + Int(wait.components.attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
            self?.advanceRevalidation(.deadline, of: id)
        }
        return holds
    }

    private func revalidationEvent(_ event: TransferEvent, of id: TransferID) {
        if let key = state.withLock({ $0.adopted?.id == id ? $0.adopted?.key : nil }) {
            return handle(event, of: key)  // the new version's download
        }
        let step: RevalidationGate.Event
        var answer: ResponseHead?
        switch event {
        case .notModified(let head):
            step = .notModified
            entry.refreshFreshness(from: head)
        case .changed(let head), .response(let head):
            // Some origins ignore If-None-Match: compare the validators (and length) ourselves.
            step = .answered(sameVersion: entry.holdsVersion(of: head))
            answer = head
        case .status(.retrying(_, _, let reason)) where reason.unreachableServer != nil: step = .unreachable
        case .failed: step = .failed
        case .finished: step = .finished
        case .data, .status: return
        }
        advanceRevalidation(step, of: id, answer: answer)
    }

    /// Feeds `step` of the check `id` to the gate and carries out its decision; `answer` is the
    /// head of the response that brought a body, if the step is one.
    private func advanceRevalidation(_ step: RevalidationGate.Event, of id: TransferID, answer: ResponseHead? = nil) {
        var actions: [DownloadPlanner.Action] = []
        var callback: (@Sendable () -> Void)?  // the open's completion, or the woken reader
        var cancel = false
        var adoptedKey: Int?
        state.withLock { state in
            guard !state.closed, state.revalidation == id, var gate = state.revalidationGate else { return }
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
                if gate.phase == .background { fetcher.setPriority(id, .fillHoles) }
            case .playNewVersion:
                // Answered in time: the new version plays from its first byte. The answer is its
                // body from byte 0, so that response becomes the download, as for an uncached
                // resource (the open completes with its head); nothing is asked twice.
                guard let held, let answer else { break }
                log.info("\(loggable(url)) changed on the server (answered in \(waited) ms): playing the new version")
                state.heldOpen = nil
                try? entry.drop()
                state.overflow = ByteRuns()
                state.validator = nil
                state.openCompletion = held.completion
                let (key, stopped) = state.planner.adopt(at: answer.bodyStart)
                actions = stopped
                state.meters[key] = (held.since, answer.bodyStart)
                state.adopted = (id, key)
                transfers.adopt(key, id)
                adoptedKey = key
            case .replaceOnClose:
                state.replaceOnClose = true
                cancel = true
            case .restartWithNewVersion:
                // The play began from the copy: its pipeline has the old bytes. Nothing is spliced;
                // reads fail from here on, and the player starts the track again on the new version.
                let answered = state.revalidationStarted.map { Self.milliseconds(ContinuousClock.now - $0) } ?? 0
                log.info("\(loggable(url)) changed on the server (answered in \(answered) ms): starting it again")
                try? entry.drop()
                state.overflow = ByteRuns()
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
            if gate.phase == .settled || cancel { state.revalidation = nil }
        }
        if cancel { fetcher.cancel(id) }
        execute(actions)
        if let adoptedKey, let answer { handle(.response(answer), of: adoptedKey) }
        callback?()
    }

    /// `duration` in whole milliseconds, for logs.
    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    deinit { close() }

    // MARK: Carrying out the planner's actions

    /// Runs the planner's actions with the fetcher; never called under the state lock.
    private func execute(_ actions: [DownloadPlanner.Action]) {
        for action in actions {
            switch action {
            case .start(let key, let from, let to, let priority):
                start(key, from: from, to: to, priority: priority)
            case .startHead(let key, let to, let priority):
                start(key, from: 0, to: to, priority: priority, wholeBodyUnlessRanged: true)
            case .cancel(let key):
                state.withLock { _ = $0.meters.removeValue(forKey: key) }
                transfers.cancel(key)
            case .setPriority(let key, let priority):
                transfers.setPriority(key, priority)
            case .scheduleSeek(let delay):
                let nanoseconds =
                    Int(delay.components.seconds) * 1_000_000_000
                    + Int(delay.components.attoseconds / 1_000_000_000)
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
                    self?.seekIntervalEnded()
                }
            }
        }
    }

    /// Starts the request of the planner's transfer `key` (with If-Range when bytes are cached).
    private func start(
        _ key: Int, from: Int64, to: Int64?, priority: FetchPriority, wholeBodyUnlessRanged: Bool = false
    ) {
        guard
            var request = state.withLock({ state -> RangeRequest? in
                guard !state.closed else { return nil }
                state.meters[key] = (.now, from)
                return request(from, end: to, priority: priority, state)
            })
        else { return }
        request.wholeBodyUnlessRanged = wholeBodyUnlessRanged
        // Bytes the cache does not hold go to the network: a miss, which the cache cannot
        // see itself, as this source reads it only where the bytes are.
        entry.countMiss()
        transfers.start(key, request) { [weak self] event in self?.handle(event, of: key) }
    }

    /// The end of a seek storm: one connection, at the offset the reader waits for now.
    private func seekIntervalEnded() {
        let actions = state.withLock { state -> [DownloadPlanner.Action] in
            guard !state.closed else { return [] }
            return state.planner.seekIntervalEnded(cached: held(state), now: .now)
        }
        execute(actions)
    }

    /// A request for `[start, end)`, conditional once bytes are cached
    /// (``CacheEntry/continuationCondition(held:)``).
    private func request(_ start: Int64, end: Int64?, priority: FetchPriority, _ state: State) -> RangeRequest {
        RangeRequest(
            url: url, start: start, end: end, knownLength: state.info?.length,
            condition: entry.continuationCondition(held: state.validator), priority: priority, resource: nil)
    }

    /// What is here: the cached ranges and the bytes kept in memory when the disk was full.
    private func held(_ state: State) -> RangeSet {
        var ranges = entry.cachedRanges
        for range in state.overflow.ranges { ranges.insert(range) }
        return ranges
    }

    private func handle(_ event: TransferEvent, of key: Int) {
        var callbacks: [@Sendable () -> Void] = []
        var actions: [DownloadPlanner.Action] = []
        // Bytes go to the disk before the lock is taken: a write may wait for the kernel (its
        // dirty-page limit on a slow disk), and GStreamer's reads take this lock. Every
        // event of a transfer, and every change of version, comes on the fetcher's thread, so
        // no other version can be bound to the entry in between.
        var diskRefused: CacheError?
        if case .data(let bytes, let offset) = event,
            state.withLock({ !$0.closed && !$0.keepsOffDisk && $0.planner.transfers.contains { $0.key == key } })
        {
            do throws(CacheError) {
                try entry.write(bytes, at: offset)
                transfers.wrote(key, to: entry)
            } catch {
                diskRefused = error
            }
        }
        state.withLock { state in
            guard !state.closed, state.planner.transfers.contains(where: { $0.key == key }) else { return }
            var effects = DownloadPlanner.Effects()
            switch event {
            case .response(let head):
                state.unreachable = nil
                accept(head, &state, &callbacks)
                if state.planner.resource == nil, let info = state.info {
                    effects.actions = state.planner.learn(
                        .init(length: info.length, rangesSupported: info.randomAccess), cached: held(state))
                }
            case .changed(let head):
                // The file changed on the server: never splice it with what was cached.
                let wasOpen = state.info != nil && state.openCompletion == nil
                entry.forgetVersion()
                state.overflow = ByteRuns()
                if wasOpen {
                    log.warning("\(loggable(url)) changed on the server while playing: reopening it")
                    state.failure = .readFailed("the resource changed on the server")
                    actions += state.planner.stopAll()
                    effects.wakeReader = true
                } else {
                    accept(head, &state, &callbacks)
                }
            case .notModified:
                break
            case .data(let bytes, let offset):
                state.transferStatus = nil
                state.unreachable = nil
                if state.keepsOffDisk {
                    keepInMemory(bytes, at: offset, because: "the origin forbids storing it", &state)
                } else if let diskRefused {
                    keepInMemory(bytes, at: offset, because: "\(diskRefused)", &state)
                }
                let next = offset + Int64(bytes.count)
                effects = state.planner.received(key, upTo: next, cached: held(state))
                if let rate = measure(key, deliveredUpTo: next, state) {
                    effects.actions += state.planner.setRate(rate, of: key, cached: held(state), now: .now)
                }
            case .status(.endedShort(let length)):
                // The origin overstated the length: the stream ends here, for this play and the next.
                log.info(
                    "\(loggable(url)) ends at byte \(length), before the \(state.info?.length.map(String.init) ?? "?") declared"
                )
                effects = state.planner.resourceEnds(at: length, reportedBy: key, cached: held(state))
                state.info?.length = length
                try? entry.flush()
                try? entry.correctLength(length)
            case .status(.paused) where transfers.isHeldForTheDisk(key):
                state.transferStatus = "waiting for the disk to store what arrived"
            case .status(let status):
                state.transferStatus = Self.describe(status)
                let isParked = state.planner.transfers.first { $0.key == key }?.role == .parked
                if case .retrying(_, _, let reason) = status, !isParked,
                    let error = Self.unreachable(reason, retrying: true)
                {
                    // No connection at all: a reader waiting for bytes learns it now, while the
                    // transfer keeps retrying in the background (its next read tries at once).
                    state.unreachable = error
                    if let completion = state.openCompletion {
                        // Nothing cached to play and no server to ask: say so now, not after the
                        // retry budget; the player's own retry and skip take it from here.
                        state.openCompletion = nil
                        actions += state.planner.stopAll()
                        let failure = Self.unreachable(reason, retrying: false) ?? error
                        state.failure = failure
                        callbacks.append { completion(.failure(failure)) }
                    }
                    if state.planner.waiting != nil {
                        state.readerError = error
                        effects.wakeReader = true
                    }
                }
            case .finished:
                state.meters[key] = nil
                transfers.forget(key)
                // Not waited for: this is the fetcher's thread, under the lock the reader takes.
                entry.flushInBackground()
                effects = state.planner.finished(key, cached: held(state))
                if let length = state.planner.resource?.length, state.info?.length == nil {
                    // A stream of unknown length ended: remember its length for the next play.
                    state.info?.length = length
                    recordLength(length)
                }
            case .failed(let error):
                state.meters[key] = nil
                transfers.forget(key)
                let role = state.planner.transfers.first { $0.key == key }?.role
                state.planner.forget(key)
                if role == .parked, !error.meansResourceChanged { return }  // set aside by a seek; nobody waits for it
                log.warning("\(loggable(url)): \(error)")
                if let completion = state.openCompletion {
                    state.openCompletion = nil
                    let failure = MediaSourceError(downloadFailure: error)
                    state.failure = failure
                    callbacks.append { completion(.failure(failure)) }
                } else if error.meansResourceChanged {
                    entry.forgetVersion()
                    state.failure = .readFailed("the resource changed on the server")
                    actions += state.planner.stopAll()
                } else if state.planner.waiting != nil {
                    state.failure = .readFailed(error.description)
                }
                effects.wakeReader = state.planner.waiting != nil
            }
            actions += effects.actions
            if effects.wakeReader, let wake = state.wake {
                state.wake = nil
                callbacks.append(wake)
            }
        }
        execute(actions)
        for callback in callbacks { callback() }
    }

    /// The transfer's bytes per second since its request was started: a lower bound of its
    /// throughput (the time includes the request's latency), so it never makes a reader wait
    /// for a transfer slower than it is, and it is known from the first bytes on.
    private func measure(_ key: Int, deliveredUpTo next: Int64, _ state: State) -> Double? {
        guard let meter = state.meters[key] else { return nil }
        let elapsed = ContinuousClock.now - meter.start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return seconds > 0 ? Double(next - meter.offset) / seconds : nil
    }

    /// Stores the length of a stream that came without one, so a replay knows it.
    private func recordLength(_ length: Int64) {
        var metadata = entry.metadata
        guard metadata.validator.length == nil else { return }
        metadata.validator.length = length
        _ = try? entry.setMetadata(metadata)
    }

    /// The clear error for a reader when `reason` means the origin cannot be reached at all
    /// (unknown host, refused, no route), nil for other failures, which are retried silently.
    /// "still retrying" only when the transfer goes on (`retrying`): an open that fails here
    /// stops its transfers, and a message saying otherwise sends the user waiting for nothing.
    static func unreachable(_ reason: FetchError, retrying: Bool) -> MediaSourceError? {
        reason.unreachableServer.map { .unreachable(retrying ? "\($0); still retrying" : $0) }
    }

    /// The first response: bind the entry to this version and finish opening.
    private func accept(_ head: ResponseHead, _ state: inout State, _ callbacks: inout [@Sendable () -> Void]) {
        if !head.storesOnDisk, !state.keepsOffDisk {
            // Never on disk: what the entry held of an earlier version goes, and every byte of
            // this one stays in memory.
            state.keepsOffDisk = true
            state.overflow = ByteRuns()
            entry.forgetVersion()
        }
        if state.keepsOffDisk {
            // Bound to nothing: the entry stays empty and is removed at close.
        } else if entry.bind(to: head, from: url, fetcher: fetcher) == true {
            state.overflow = ByteRuns()
        }
        state.validator = head.validator
        guard state.info == nil else { return }
        let info = ResourceInfo(response: head)
        state.info = info
        if let completion = state.openCompletion {
            state.openCompletion = nil
            callbacks.append { completion(.success(info)) }
        }
        log.info("opened \(loggable(url)): \(info.openedDescription)")
    }

    /// The disk is full or gone: the bytes are kept in memory so playback goes on. From then
    /// on the download stays half a window ahead of the play head and bytes the window drops
    /// (furthest behind it first) are fetched again if a seek goes back to them.
    private func keepInMemory(_ bytes: Data, at offset: Int64, because reason: String, _ state: inout State) {
        if !state.streamingFromMemory {
            if state.keepsOffDisk {
                log.info("not caching \(loggable(url)) (\(reason)); streaming from memory")
            } else {
                log.warning("cannot cache \(loggable(url)) (\(reason)); streaming from memory")
            }
            state.streamingFromMemory = true
            state.planner.limitToWindow(memoryWindow.capacity / 2)
        }
        state.overflow.write(bytes, at: offset)
        if state.overflow.count > memoryWindow.capacity {
            state.overflow.retain(memoryWindow.retained(state.overflow.ranges, reader: state.planner.playHead))
        }
    }

    /// Bytes held in memory because the disk refused them (never more than the memory window).
    public var bytesInMemory: Int64 { state.withLock { $0.overflow.count } }
}
