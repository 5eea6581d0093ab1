import Dispatch
import Fetcher
import FoundationEssentials
import RangeCache
import SpoolLog
import Synchronization

/// Bytes of an http(s) resource, read from the range cache when they are there
/// and fetched when they are not; everything fetched is written to the cache.
///
/// - A complete entry opens from the cache with no network at all.
/// - A partial entry opens at once from what the cache knows (it plays offline
///   as far as it goes) and continues from its first missing byte with If-Range.
/// - Sequential playback uses one open-ended request; holes between cached
///   ranges get requests that stop where the cache resumes, so no byte is
///   fetched twice. After the reader is served, the rest of the resource is
///   fetched in the background (read-ahead) until the entry is complete.
/// - A read far ahead of the running transfer (a seek) starts a request there at
///   once; a small read near the end (tags, a trailing `moov`) gets its own short
///   request without stopping the main one.
/// - A resource that changed on the server is never spliced with the old copy:
///   the entry is emptied, and a track already playing fails so it is reopened.
public final class CachedByteSource: ByteSource {
    /// How far ahead of a running transfer a read may be and still wait for it.
    public static let waitAheadLimit: Int64 = 512 * 1024
    /// The smallest request made for a far, small read near the end.
    public static let tailRequestSize: Int64 = 64 * 1024
    /// Reads in the last this-many bytes count as tail reads (tags, `moov`), not seeks.
    public static let tailRegion: Int64 = 1024 * 1024
    /// A seek storm opens at most one connection per this interval; only the latest target counts.
    public static let seekConnectionInterval: Duration = .milliseconds(100)

    /// How much to fetch ahead of the play head in large resources (long podcasts,
    /// audiobooks), instead of downloading them to the end.
    public struct ReadAheadPolicy: Sendable {
        /// Resources larger than this keep a window instead of downloading whole.
        public var threshold: Int64
        /// How far ahead of the play head to fetch.
        public var window: Int64
        /// Creates a policy.
        public init(threshold: Int64, window: Int64) {
            self.threshold = threshold
            self.window = window
        }
    }

    private struct Waiter {
        let offset: Int64
        let wake: @Sendable () -> Void
    }

    private struct Transfer {
        let id: TransferID
        var next: Int64
        let end: Int64?
    }

    private struct State {
        var info: ResourceInfo?
        var validator: HTTPValidator?
        var openCompletion: (@Sendable (Result<ResourceInfo, MediaSourceError>) -> Void)?
        var main: Transfer?
        var side: Transfer?
        var waiter: Waiter?
        var failure: MediaSourceError?
        var closed = false
        /// Bytes the cache could not store (disk full): kept so playback goes on.
        var overflow = ByteRuns()
        var writeFailureLogged = false
        /// Prepared ahead of need: downloads run at preload priority.
        var background = false
        /// What the download is doing, for clients ("retrying in 2 s: HTTP status 503").
        var transferStatus: String?
        /// The background check of a complete entry, and whether it found a new version.
        var playHead: Int64 = 0
        var revalidation: TransferID?
        var replaceOnClose = false
        /// When the last transfer for a seek started, and whether a delayed one is due.
        var lastSeekStart: ContinuousClock.Instant?
        var seekScheduled = false
    }

    private let url: URL
    private let entry: CacheEntry
    private let fetcher: Fetcher
    private let resource: String
    private let revalidator: Revalidator?
    private let readAhead: ReadAheadPolicy?
    private let state = Mutex(State())
    private let log = Logger(label: "cached-source")

    /// Creates a source for `url` over its cache entry; transfers run on `fetcher`.
    /// With a `revalidator`, a complete entry is checked against the origin in the
    /// background when due: a changed resource replaces the entry for the next play.
    /// With `readAhead`, resources above its threshold are fetched only a window ahead.
    public init(
        url: URL, entry: CacheEntry, fetcher: Fetcher, revalidator: Revalidator? = nil,
        readAhead: ReadAheadPolicy? = nil
    ) {
        self.readAhead = readAhead
        self.url = url
        self.entry = entry
        self.fetcher = fetcher
        self.revalidator = revalidator
        resource = "\(entry.namespace)\u{0}\(entry.key.value)"
    }

    // MARK: ByteSource

    /// Opens from the cache when it knows the length, else from the first response.
    public func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        let metadata = entry.metadata
        let cachedLength = metadata.validator.length
        var opened: ResourceInfo?
        let failure: MediaSourceError? = state.withLock { state in
            guard !state.closed else { return .closed }
            state.validator = HTTPValidator(etag: metadata.validator.etagHeader, lastModified: metadata.validator.lastModified)
            if let length = cachedLength, entry.contiguousLength(from: 0) > 0 || length == 0 {
                let info = ResourceInfo(
                    length: length, contentType: metadata.contentType, randomAccess: metadata.acceptsRanges ?? true)
                state.info = info
                opened = info
                if let missing = firstMissing(length: length) {
                    startLocked(&state, at: missing, priority: .readAhead)  // continue the download
                } else if let validator = state.validator, revalidator?.claim(resource) == true {
                    revalidateLocked(&state, against: validator)
                }
            } else {
                state.openCompletion = completion
                startLocked(&state, at: 0, priority: .playback)
            }
            return nil
        }
        if let failure { return completion(.failure(failure)) }
        if let opened {
            log.info("opened \(loggable(url)) from the cache (\(entry.contiguousLength(from: 0)) of \(opened.length ?? 0) bytes)")
            completion(.success(opened))
        }
    }

    /// Returns cached bytes at `offset`, or arranges for them to be fetched and the reader woken.
    public func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        state.withLock { state in
            if state.closed { return .failed(.closed) }
            guard let info = state.info else { return .failed(.readFailed("read before open")) }
            let wanted: Int
            if let length = info.length {
                if offset >= length { return .endOfStream }
                wanted = Int(min(Int64(maxLength), length - offset))
            } else {
                wanted = maxLength
            }
            state.playHead = offset
            let held = Int(min(Int64(wanted), entry.contiguousLength(from: offset)))
            if held == wanted, let bytes = entry.read(at: offset, maxLength: wanted), bytes.count == wanted {
                if state.main == nil, windowEnd(state) != nil { refillWindowLocked(&state) }
                return .data(bytes)
            }
            if let bytes = state.overflow.read(at: offset, maxLength: wanted), bytes.count == wanted {
                return .data(bytes)
            }
            if info.length == nil, held > 0, let bytes = entry.read(at: offset, maxLength: held) {
                return .data(bytes)  // a stream of unknown length: partial reads are fine
            }
            if let failure = state.failure { return .failed(failure) }
            let missing = offset + Int64(held)
            state.waiter = Waiter(offset: missing, wake: wake)
            arrangeLocked(&state, for: missing, length: Int64(wanted - held))
            return .pending
        }
    }

    /// Prepared ahead of need (true) or playing (false): sets the priority of its downloads.
    public func setBackground(_ background: Bool) {
        let raise = state.withLock { state -> TransferID? in
            state.background = background
            return background ? nil : state.main?.id
        }
        if let raise { fetcher.setPriority(raise, .readAhead) }
    }

    /// Forgets the pending reader.
    public func cancelPendingReads() {
        state.withLock { $0.waiter = nil }
    }

    /// Cancels the transfers, makes written bytes durable and closes the entry.
    public func close() {
        let transfers = state.withLock { state -> [TransferID] in
            guard !state.closed else { return [] }
            state.closed = true
            state.waiter = nil
            defer {
                state.main = nil
                state.side = nil
            }
            return [state.main?.id, state.side?.id, state.revalidation].compactMap { $0 }
        }
        for id in transfers { fetcher.cancel(id) }
        try? entry.flush()
        if state.withLock({ $0.replaceOnClose }) {
            log.info("\(loggable(url)) changed on the server: the next play fetches the new version")
            try? entry.drop()
        }
        entry.close()
    }

    // MARK: Revalidation

    /// What the download is doing, in words for a client: complete, fetching,
    /// retrying in N s (with the reason), stalled, paused, failed (with the reason), or idle.
    public var downloadState: String {
        state.withLock { state in
            if let length = state.info?.length, entry.contiguousLength(from: 0) >= length { return "complete" }
            if let failure = state.failure { return "failed: \(failure)" }
            if let status = state.transferStatus { return status }
            return state.main != nil || state.side != nil ? "fetching" : "idle"
        }
    }

    private static func describe(_ status: TransferStatus) -> String? {
        switch status {
        case .retrying(let seconds, _, let reason):
            return "retrying in \(cFormat("%.0f", seconds.rounded(.up))) s: \(reason.description)"
        case .reresolving(let code): return "renewing the URL (HTTP \(code))"
        case .stalled(let seconds): return cFormat("stalled for %.0f s, reconnecting", seconds)
        case .reconnecting: return "reconnecting"
        case .paused: return "waiting for the playing track's download"
        case .resumed: return nil
        }
    }

    /// Whether a download for this resource is running (not counting revalidation).
    public var isDownloading: Bool { state.withLock { $0.main != nil || $0.side != nil } }

    /// Whether the background check of a complete entry is still out.
    public var isRevalidating: Bool { state.withLock { $0.revalidation != nil } }

    /// Whether the background check found a new version (it replaces the entry at close).
    public var foundNewVersion: Bool { state.withLock { $0.replaceOnClose } }

    /// A conditional request for the first byte, off the critical path: 304 keeps
    /// the entry; a new version is remembered and replaces the entry at close.
    private func revalidateLocked(_ state: inout State, against validator: HTTPValidator) {
        let request = RangeRequest(
            url: url, start: 0, end: 1, condition: .ifNoneMatch(validator), priority: .fillHoles)
        state.revalidation = fetcher.start(request) { [weak self] id, event in
            self?.revalidationEvent(event, of: id)
        }
    }

    private func revalidationEvent(_ event: TransferEvent, of id: TransferID) {
        let cancel = state.withLock { state -> Bool in
            guard state.revalidation == id else { return false }
            switch event {
            case .notModified:
                return false
            case .changed(let head), .response(let head):
                // Some origins ignore If-None-Match: compare the validators ourselves.
                let same = head.validator.map { $0 == state.validator } ?? false
                if !same { state.replaceOnClose = true }
                state.revalidation = nil
                return true
            case .finished, .failed:
                state.revalidation = nil
                return false
            case .data, .status:
                return false
            }
        }
        if cancel { fetcher.cancel(id) }
    }

    deinit { close() }

    // MARK: Transfers

    /// Makes sure some transfer will deliver `offset` soon.
    private func arrangeLocked(_ state: inout State, for offset: Int64, length: Int64) {
        if let main = state.main, main.next <= offset, offset - main.next <= Self.waitAheadLimit,
            main.end.map({ offset < $0 }) ?? true
        {
            if !state.background { fetcher.setPriority(main.id, .playback) }
            return  // the running transfer gets there soon
        }
        if let side = state.side, side.next <= offset, offset < (side.end ?? .max) { return }
        guard state.info?.randomAccess != false else { return }  // only the one stream from 0 can bring it
        let total = state.info?.length
        if let total, offset >= total - Self.tailRegion, state.main != nil, state.side == nil {
            // A small read near the end (tags, moov): its own short request; the main one goes on.
            // Short on purpose: the main transfer may pass here later, and what both fetch counts twice.
            let end = min(total, offset + Self.tailRequestSize, nextCached(after: offset) ?? total)
            let id = fetcher.start(request(offset, end: end, priority: .seekTarget, state)) { [weak self] id, event in
                self?.handle(event, of: id)
            }
            state.side = Transfer(id: id, next: offset, end: end)
            return
        }
        // A seek: go there now, unless a connection for a seek opened within the last
        // 100 ms — then once that interval is over, for whatever the reader wants by then.
        let now = ContinuousClock.now
        if let last = state.lastSeekStart, now - last < Self.seekConnectionInterval {
            // Stop the old transfer now, so it wastes nothing while the storm settles.
            if let old = state.main {
                fetcher.cancel(old.id)
                state.main = nil
            }
            guard !state.seekScheduled else { return }
            state.seekScheduled = true
            let delay = Self.seekConnectionInterval - (now - last)
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(delay.components.attoseconds / 1_000_000_000))) {
                [weak self] in self?.startDelayedSeek()
            }
            return
        }
        state.lastSeekStart = now
        startLocked(&state, at: offset, priority: .playback)
    }

    /// The end of a seek storm: one connection, at the offset the reader waits for now.
    private func startDelayedSeek() {
        state.withLock { state in
            state.seekScheduled = false
            guard !state.closed, let waiter = state.waiter else { return }
            if let main = state.main, main.next <= waiter.offset, waiter.offset - main.next <= Self.waitAheadLimit {
                return
            }
            state.lastSeekStart = .now
            startLocked(&state, at: waiter.offset, priority: .playback)
        }
    }

    private func startLocked(_ state: inout State, at offset: Int64, priority wanted: FetchPriority) {
        if let old = state.main { fetcher.cancel(old.id) }
        let priority = state.background ? FetchPriority.preload : wanted
        var end = state.info?.length.flatMap { _ in nextCached(after: offset) }
        if let limit = windowEnd(state) {
            // A large resource: a window past the play head (or past this read), no further.
            let windowLimit = max(limit, offset + (readAhead?.window ?? 0) / 4)
            end = min(end ?? windowLimit, windowLimit)
        }
        let id = fetcher.start(request(offset, end: end, priority: priority, state)) { [weak self] id, event in
            self?.handle(event, of: id)
        }
        state.main = Transfer(id: id, next: offset, end: end)
    }

    /// A request for `[start, end)`; with cached bytes it carries If-Range, so a changed
    /// file answers with a whole new body instead of being spliced.
    private func request(_ start: Int64, end: Int64?, priority: FetchPriority, _ state: State) -> RangeRequest {
        let hasBytes = !entry.cachedRanges.isEmpty
        return RangeRequest(
            url: url, start: start, end: end, knownLength: state.info?.length,
            condition: hasBytes ? state.validator.map { .ifRange($0) } : nil, priority: priority, resource: nil)
    }

    /// The first cached byte after `offset`, where a request for a hole should stop.
    private func nextCached(after offset: Int64) -> Int64? {
        entry.cachedRanges.ranges.first { $0.lowerBound > offset }?.lowerBound
    }

    private func firstMissing(length: Int64) -> Int64? {
        entry.missing(in: 0..<length).first?.lowerBound
    }

    /// The end of the read-ahead window in a large resource; nil when it downloads whole.
    private func windowEnd(_ state: State) -> Int64? {
        guard let policy = readAhead, let length = state.info?.length, length > policy.threshold else { return nil }
        return min(length, state.playHead + policy.window)
    }

    /// Fetches what is missing in the window ahead of the play head, if anything.
    private func refillWindowLocked(_ state: inout State) {
        guard let limit = windowEnd(state), state.playHead < limit,
            let missing = entry.missing(in: state.playHead..<limit).first?.lowerBound
        else { return }
        startLocked(&state, at: missing, priority: .readAhead)
    }

    private func handle(_ event: TransferEvent, of id: TransferID) {
        var callbacks: [@Sendable () -> Void] = []
        state.withLock { state in
            guard !state.closed else { return }
            let isMain = state.main?.id == id
            guard isMain || state.side?.id == id else { return }  // a replaced transfer
            switch event {
            case .response(let head):
                accept(head, &state, &callbacks)
            case .changed(let head):
                // The file changed on the server: never splice it with what was cached.
                let wasOpen = state.info != nil && state.openCompletion == nil
                _ = try? entry.setMetadata(EntryMetadata())  // empties the entry
                state.overflow = ByteRuns()
                if wasOpen {
                    log.warning("\(loggable(url)) changed on the server while playing: reopening it")
                    state.failure = .readFailed("the resource changed on the server")
                    if let main = state.main { fetcher.cancel(main.id) }
                    state.main = nil
                    if let waiter = state.waiter {
                        state.waiter = nil
                        callbacks.append(waiter.wake)
                    }
                } else {
                    accept(head, &state, &callbacks)
                }
            case .notModified:
                break
            case .data(let bytes, let offset):
                state.transferStatus = nil
                store(bytes, at: offset, &state)
                if isMain { state.main?.next = offset + Int64(bytes.count) } else { state.side?.next = offset + Int64(bytes.count) }
                if isMain, let limit = windowEnd(state), let main = state.main, main.next >= limit,
                    state.waiter.map({ $0.offset < limit }) ?? true
                {
                    // Far enough ahead of the play head in a large resource: stop here for now.
                    fetcher.cancel(main.id)
                    state.main = nil
                    try? entry.flush()
                }
                if let waiter = state.waiter, entry.contiguousLength(from: waiter.offset) > 0
                    || state.overflow.contains(waiter.offset)
                {
                    state.waiter = nil
                    callbacks.append(waiter.wake)
                }
            case .status(let status):
                state.transferStatus = Self.describe(status)
            case .finished:
                if isMain { state.main = nil } else { state.side = nil }
                try? entry.flush()
                continueLocked(&state, &callbacks)
            case .failed(let error):
                if isMain { state.main = nil } else { state.side = nil }
                log.warning("\(loggable(url)): \(error)")
                if let completion = state.openCompletion {
                    state.openCompletion = nil
                    state.failure = .unavailable(error.description)
                    callbacks.append { completion(.failure(.unavailable(error.description))) }
                } else if case .resourceChanged = error {
                    _ = try? entry.setMetadata(EntryMetadata())
                    state.failure = .readFailed("the resource changed on the server")
                } else if state.waiter != nil {
                    state.failure = .readFailed(error.description)
                }
                if let waiter = state.waiter {
                    state.waiter = nil
                    callbacks.append(waiter.wake)
                }
            }
        }
        for callback in callbacks { callback() }
    }

    /// The first response: bind the entry to this version and finish opening.
    private func accept(_ head: ResponseHead, _ state: inout State, _ callbacks: inout [@Sendable () -> Void]) {
        let validator = CacheValidator(etag: head.etag, lastModified: head.lastModified, length: head.totalLength)
        let metadata = EntryMetadata(
            url: url, validator: validator, contentType: head.contentType, acceptsRanges: head.honoursRange)
        if (try? entry.setMetadata(metadata)) == true { state.overflow = ByteRuns() }
        state.validator = head.validator
        guard state.info == nil else { return }
        let info = ResourceInfo(
            length: head.totalLength, contentType: head.contentType,
            randomAccess: head.honoursRange && head.totalLength != nil)
        state.info = info
        if let completion = state.openCompletion {
            state.openCompletion = nil
            callbacks.append { completion(.success(info)) }
        }
        log.info("opened \(loggable(url)): \(info.length.map(String.init) ?? "unknown") bytes, \(info.randomAccess ? "range requests" : "no range support")")
    }

    /// After a transfer ends: serve the waiting reader, else fill the next hole (read-ahead).
    private func continueLocked(_ state: inout State, _ callbacks: inout [@Sendable () -> Void]) {
        guard state.main == nil, let length = state.info?.length else {
            if let waiter = state.waiter, state.main == nil, state.info?.length == nil {
                state.waiter = nil
                callbacks.append(waiter.wake)  // unknown length: the clean end is the end
                if state.info?.length == nil { state.info?.length = entry.cachedRanges.upperBound }
            }
            return
        }
        if let waiter = state.waiter, waiter.offset < length, entry.contiguousLength(from: waiter.offset) == 0 {
            startLocked(&state, at: waiter.offset, priority: .playback)
        } else if windowEnd(state) != nil {
            refillWindowLocked(&state)
            if state.main == nil, let waiter = state.waiter {
                state.waiter = nil
                callbacks.append(waiter.wake)
            }
        } else if let missing = firstMissing(length: length), state.info?.randomAccess != false {
            startLocked(&state, at: missing, priority: .readAhead)
        } else if let waiter = state.waiter {
            state.waiter = nil
            callbacks.append(waiter.wake)
        }
    }

    private func store(_ bytes: Data, at offset: Int64, _ state: inout State) {
        do {
            try entry.write(bytes, at: offset)
        } catch {
            // The disk is full or gone: keep the bytes in memory so playback goes on.
            if !state.writeFailureLogged {
                log.warning("cannot cache \(loggable(url)) (\(error)); streaming from memory")
                state.writeFailureLogged = true
            }
            state.overflow.write(bytes, at: offset)
        }
    }
}
