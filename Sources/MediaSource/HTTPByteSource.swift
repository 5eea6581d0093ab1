import Basics
import ByteSourceAPI
import Dispatch
import Fetcher
import FoundationEssentials
import RangeCache
import Synchronization

/// Bytes of an http(s) resource: every byte Spool reads over http comes through one of these.
/// Its bytes go to one of two byte stores: the resource's range-cache entry (the disk store),
/// or, when there is no cache, the origin forbids storing (`no-store`, `Vary: *`) or the disk
/// refuses them, a ``MemoryStore`` bounded by a ``MemoryWindow``. The source chooses, from the
/// cache's state and the response; its callers never do.
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
/// - With bytes in memory only, a download runs at most half the window ahead of the reader
///   and bytes the window dropped are fetched again if a seek goes back to them (from byte 0
///   for an origin without ranges): no stream, and no length of terabytes in a header, holds
///   more than the window.
///
/// Revalidation of a cached copy is in `HTTPByteSource+Revalidation.swift`, the transfers'
/// events in `HTTPByteSource+Transfers.swift`, the preload of a head in `HTTPByteSource+Preload.swift`.
public final class HTTPByteSource: ByteSource {
    struct State {
        var info: ResourceInfo?
        var validator: ResourceVersion?
        var openCompletion: (@Sendable (Result<ResourceInfo, MediaSourceError>) -> Void)?
        /// The download decisions; this class carries them out.
        var planner: DownloadPlanner
        /// How to wake the reader the planner has waiting.
        var wake: (@Sendable () -> Void)?
        /// When each transfer's request was started, and from where: its measured rate.
        var meters: [Int: (start: ContinuousClock.Instant, offset: Int64)] = [:]
        /// The bytes each metered transfer brought so far (for ``whenTransferred(_:)``).
        var received: [Int: Int64] = [:]
        /// The stored copy is dropped at close (``discardOnClose()``).
        var discardOnClose = false
        /// Who learns of each transfer's end (``whenTransferred(_:)``).
        var transferHandler: (@Sendable (TransferSample) -> Void)?
        var failure: MediaSourceError?
        var closed = false
        /// The memory store: bytes the disk store could not take (disk full), or every byte when
        /// the resource is kept off the disk; within the memory window around the play head.
        var memory: MemoryStore
        /// The disk has refused bytes, or the origin forbids storing them: the reason is logged
        /// and the download kept to the window.
        var streamingFromMemory = false
        /// No byte of the resource goes to the disk: there is no cache entry, or the origin
        /// forbids storing it (`no-store`, `Vary: *`). Every byte is kept in the memory store.
        var keepsOffDisk: Bool
        /// What the download is doing, for clients ("retrying in 2 s: HTTP status 503").
        var transferStatus: String?
        /// The background check of a complete entry (its key among the transfers, while it runs),
        /// and whether it found a new version.
        var revalidation: Int?
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
        /// The check's answer was a new version in time: its response streams the new body, so
        /// it became the planner's download (under ``checkKey``).
        var adoptedCheck = false
        /// Counts the changes of the entry's version (emptied, dropped, bound anew), bumped under
        /// the lock before the change is made outside it: a read of the disk, made outside the
        /// lock, is used only if no change came in between.
        var generation = 0
        /// Metered rules are in force: the read-ahead keeps its metered window.
        var metered = false
        /// Who learns of a failure no read asked for (``whenFailed(_:)``).
        var failureHandler: (@Sendable (MediaSourceError) -> Void)?
        /// A preload of the head (``preload(prefix:tail:onEnd:)``): told once of its end.
        var preloadEnd: (@Sendable (String?) -> Void)?
        /// Who learns of a live stream's titles (``whenStreamTitle(_:)``), and the latest one,
        /// for a handler set after it came.
        var titleHandler: (@Sendable (StreamTitle, Int64) -> Void)?
        var latestTitle: (title: StreamTitle, offset: Int64)?
    }

    /// An open waiting for the answer of the check of its complete entry.
    struct HeldOpen {
        let info: ResourceInfo
        let rangesSupported: Bool
        let completion: @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void
        let since: ContinuousClock.Instant
    }

    /// The resource this source reads.
    public let url: URL
    /// The disk store; nil when there is no cache (or no entry could be had).
    let entry: CacheEntry?
    let fetcher: Fetcher
    private let resource: String
    let revalidator: Revalidator?
    private let readAhead: ReadAheadPolicy?
    let state: Mutex<State>
    let transfers: FetcherTransfers
    let log = Logger(label: "http-source")

    /// Creates a source for `url` over its cache `entry`, or over memory only when there is
    /// none; transfers run on `fetcher`.
    /// With a `revalidator`, a complete entry is checked against the origin in the
    /// background when due: a changed resource replaces the entry for the next play.
    /// With `readAhead`, resources above its threshold are fetched only a window ahead (and on
    /// a metered network only its metered window of audio).
    /// Bytes kept in memory (no entry, `no-store`, a full disk) are at most `memoryWindow`.
    public init(
        url: URL, entry: CacheEntry? = nil, fetcher: Fetcher, revalidator: Revalidator? = nil,
        readAhead: ReadAheadPolicy? = nil, memoryWindow: MemoryWindow = .standard
    ) {
        self.url = url
        self.readAhead = readAhead
        self.entry = entry
        self.fetcher = fetcher
        self.revalidator = revalidator
        resource = entry.map(Revalidator.key(of:)) ?? ""
        var planner = DownloadPlanner(readAhead: readAhead.map { ($0.threshold, $0.window) })
        if entry == nil { planner.limitToWindow(memoryWindow.capacity / 2) }
        state = Mutex(State(planner: planner, memory: MemoryStore(window: memoryWindow), keepsOffDisk: entry == nil))
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
        if let entry { prepareToOpen(entry) }
        let metadata = entry?.metadata ?? EntryMetadata()
        let cachedLength = metadata.validator.length
        if let entry, let revalidator, cachedLength.map({ entry.contiguousLength(from: 0) < $0 }) ?? true {
            // A download that continues an incomplete entry (with If-Range) or fetches it fresh
            // validates it: replaying it soon after needs no conditional request.
            revalidator.markChecked(entry)
        }
        var opened: ResourceInfo?
        var actions: [DownloadPlanner.Action] = []
        var check: RangeRequest?
        let failure: MediaSourceError? = state.withLock { state in
            guard !state.closed else { return .closed }
            state.validator = metadata.validator.named
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
                    beforeUse || revalidator.claim(resource)
                {
                    let (holds, request) = revalidateLocked(
                        &state, against: validator, opening: info, rangesSupported: rangesSupported,
                        beforeUse: beforeUse, completion)
                    check = request
                    // Held: opens with the origin's answer, or from the cache at the deadline.
                    if holds { return nil }
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
        if let check { startCheck(check) }
        execute(actions)
        if let opened {
            log.info(
                "opened \(loggable(url)) from the cache (\(entry?.contiguousLength(from: 0) ?? 0) of \(opened.length ?? 0) bytes)"
            )
            completion(.success(opened))
        }
    }

    /// Empties an entry the open must not use: one stored for requests with other headers
    /// (`Vary`), or a partial one whose origin names no version.
    private func prepareToOpen(_ entry: CacheEntry) {
        if !entry.servesRequests(of: fetcher) {
            log.info("\(loggable(url)): the cached copy was selected by other request headers; fetching it again")
            try? entry.drop()
        }
        let length = entry.metadata.validator.length
        if entry.metadata.validator.named == nil, !entry.cachedRanges.isEmpty,
            length.map({ !entry.cachedRanges.contains(0..<$0) }) ?? true
        {
            // Neither ETag nor Last-Modified: nothing can tell whether the origin still has the
            // file these bytes came from, and a changed file of the same length would be spliced
            // with them. A partial entry of such an origin is fetched again from byte 0.
            log.info(
                "\(loggable(url)): the origin names no version (no ETag, no Last-Modified); not resuming, fetching it from the start"
            )
            try? entry.drop()
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
        var redecided = 0
        while true {
            var actions: [DownloadPlanner.Action] = []
            let decision = state.withLock { state in
                decide(at: offset, maxLength: maxLength, minLength: minLength, wake: wake, &state, &actions)
            }
            execute(actions)
            switch decision {
            case .answer(let outcome):
                return outcome
            case .fromDisk(let count, let generation):
                // The disk is read outside the lock: the fetcher's thread, writing what arrives,
                // never waits for a read. Bytes read while the entry changed version are not used.
                let bytes = entry?.read(at: offset, maxLength: count)
                guard state.withLock({ $0.generation == generation }) else { continue }
                if let bytes, !bytes.isEmpty { return .data(bytes) }
                redecided += 1
                if redecided > 3 { return .failed(.readFailed("cached bytes at \(offset) could not be read")) }
            case .vanished:
                redecided += 1
                if redecided > 3 { return .failed(.readFailed("held bytes at \(offset) could not be read")) }
            }
            // The entry is emptied outside the state lock (the fetcher's thread forgets a changed
            // version after deciding the event under it), so the bytes a decision counted on
            // can be gone: decide again on what is held now, which answers the change's failure.
            // Only a new change empties the entry again, so this ends.
        }
    }

    /// What a read gets, decided under the lock.
    private enum ReadDecision {
        case answer(ReadOutcome)
        /// `count` bytes from the disk, if the entry's version is still `generation`.
        case fromDisk(count: Int, generation: Int)
        /// The bytes counted as held left the entry while the decision was made.
        case vanished
    }

    private func decide(
        at offset: Int64, maxLength: Int, minLength: Int, wake: @escaping @Sendable () -> Void, _ state: inout State,
        _ actions: inout [DownloadPlanner.Action]
    ) -> ReadDecision {
        if state.closed { return .answer(.failed(.closed)) }
        guard state.info != nil else { return .answer(.failed(.readFailed("read before open"))) }
        let held = held(state)
        let request = DownloadPlanner.Read(offset: offset, maxLength: maxLength, minLength: minLength)
        let remaining = state.info?.length.map { $0 - offset } ?? .max
        if remaining > 0, held.contiguousLength(from: offset) < min(Int64(request.minLength), remaining) {
            // Missing bytes: a failure or an unreachable origin answers before any new request.
            if let failure = state.failure { return .answer(.failed(failure)) }
            if let error = state.readerError {
                state.readerError = nil
                return .answer(.failed(error))
            }
        }
        let (answer, planned) = state.planner.read(request, cached: held, now: .now)
        actions = planned
        switch answer {
        case .endOfStream:
            return .answer(.endOfStream)
        case .serve(let count):
            state.wake = nil
            if entry?.cachedRanges.contains(offset) == true {
                return .fromDisk(count: count, generation: state.generation)
            }
            if let bytes = state.memory.read(at: offset, maxLength: count), !bytes.isEmpty {
                return .answer(.data(bytes))
            }
            return .vanished
        case .wait:
            state.wake = wake
            if state.unreachable != nil, state.info?.randomAccess == true {
                // The last attempt found the origin unreachable and the transfer is backing
                // off: try once more now, so a reader learns at once whether the network is back.
                state.unreachable = nil
                actions += state.planner.retryNow(at: offset + held.contiguousLength(from: offset), cached: held)
            }
            return .answer(.pending)
        }
    }

    /// Prepared ahead of need (true) or playing (false): sets the priority of its downloads.
    public func setBackground(_ background: Bool) {
        execute(state.withLock { state in state.planner.setBackground(background, cached: held(state), now: .now) })
    }

    /// Whether the cache or the memory store holds every byte of `range`.
    public func holds(_ range: Range<Int64>) -> Bool {
        range.isEmpty || state.withLock { held($0).contains(range) }
    }

    /// Calls `handler` when the source fails with no read to answer (see ``ByteSource``).
    public func whenFailed(_ handler: @escaping @Sendable (MediaSourceError) -> Void) {
        state.withLock { $0.failureHandler = handler }
    }

    /// Calls `handler` with the bytes and time of each transfer that ends (see ``ByteSource``).
    public func whenTransferred(_ handler: @escaping @Sendable (TransferSample) -> Void) {
        state.withLock { $0.transferHandler = handler }
    }

    /// Calls `handler` with each title the live stream announces (the latest one at once, if
    /// one came before).
    public func whenStreamTitle(_ handler: @escaping @Sendable (StreamTitle, _ offset: Int64) -> Void) {
        let latest = state.withLock { state in
            state.titleHandler = handler
            return state.latestTitle
        }
        if let latest { handler(latest.title, latest.offset) }
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

    /// Whether metered rules are in force for this source.
    public var isMetered: Bool { state.withLock { $0.metered } }

    private func applyReadAhead(_ state: inout State) -> [DownloadPlanner.Action] {
        guard let readAhead else { return [] }
        let limits = readAhead.limits(metered: state.metered, byteRate: state.planner.byteRate)
        return state.planner.setReadAhead(limits, cached: held(state))
    }

    /// Cancels the transfers, starts making written bytes durable and closes the entry.
    public func close() {
        let (actions, revalidation) = state.withLock { state -> ([DownloadPlanner.Action], Int?) in
            guard !state.closed else { return ([], nil) }
            state.closed = true
            state.wake = nil
            state.planner.cancelWaiting()
            return (state.planner.stopAll(), state.revalidation)
        }
        execute(actions)
        if let revalidation { transfers.cancel(revalidation) }
        let (replace, discard) = state.withLock { state in
            state.memory.empty()
            return (state.replaceOnClose, state.discardOnClose)
        }
        guard let entry else { return }
        if replace {
            log.info("\(loggable(url)) changed on the server: the next play fetches the new version")
        }
        if replace || discard { try? entry.drop() }
        // Not waited for: a track change must not wait for the disk (a slow or busy one takes a
        // second per sync); the cache commits these bytes once they are synced.
        entry.closeInBackground()
    }

    /// Drops what was stored of the resource when the source closes: its bytes were read, and
    /// it is not to be kept (a live HLS playlist).
    public func discardOnClose() {
        state.withLock { $0.discardOnClose = true }
    }

    deinit { close() }

    /// Bytes held in the memory store (never more than the memory window).
    public var bytesInMemory: Int64 { state.withLock { $0.memory.count } }

    /// What is here: the cached ranges and the bytes of the memory store.
    func held(_ state: State) -> RangeSet {
        var ranges = entry?.cachedRanges ?? RangeSet()
        for range in state.memory.ranges { ranges.insert(range) }
        return ranges
    }

}
