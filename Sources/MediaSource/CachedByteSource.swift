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
    /// How far ahead of a running transfer a read may be and still wait for it, at least;
    /// with a known byte rate the limit is 3 s of audio when that is more
    /// (``waitAheadSeconds``, ``setByteRate(_:)``).
    public static let waitAheadLimit: Int64 = 512 * 1024
    /// Seconds of audio ahead of a running transfer a read may be and still wait for it.
    public static let waitAheadSeconds: Double = 3
    /// The smallest request made for a far, small read near the end.
    public static let tailRequestSize: Int64 = 64 * 1024
    /// Reads in the last this-many bytes count as tail reads (tags, `moov`), not seeks.
    public static let tailRegion: Int64 = 1024 * 1024
    /// How many transfers set aside by seeks stay paused (each holds a connection); beyond
    /// that the oldest is cancelled. With the main and the tail transfer, six connections per
    /// resource at most, the per-host limit browsers keep.
    public static let maxParkedTransfers = 4
    /// A transfer is set aside for a seek only if no held byte (cached, or about to be fetched)
    /// lies less than this far ahead of it: while paused, its connection fills with up to the
    /// kernel buffers' worth of bytes (0.3–0.6 MB measured on loopback), which past such a byte
    /// would be sent for nothing. Closer, it is cancelled, losing only what is in flight now.
    public static let parkReach: Int64 = 2 * 1024 * 1024
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
        /// Transfers seeks set aside, oldest first: paused at the lowest priority with their
        /// connections and the bytes already in flight kept, each resumed (as `main`) when the
        /// reader comes back to it or the transfers before it are done. Cancelling them instead
        /// would throw away whatever the origin had already sent.
        var parked: [Transfer] = []
        /// Where the last read ended: a read continuing there is playback, not a jump.
        var lastReadEnd: Int64?
        /// The stream's bytes per second, when the player knows it (duration and length).
        var byteRate: Double?
        /// The origin could not be reached (refused, no route, unknown host) while a reader
        /// waited: reads of missing bytes fail with it until bytes arrive again, and each such
        /// read tries the origin once more at once. Retries go on in the background.
        var unreachable: MediaSourceError?
        /// The answer for the next read of missing bytes: the origin was unreachable while it waited.
        var readerError: MediaSourceError?
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
        resource = Revalidator.key(of: entry)
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
            let continuesPlayback = state.lastReadEnd == offset
            state.lastReadEnd = offset
            let held = Int(min(Int64(wanted), entry.contiguousLength(from: offset)))
            if held == wanted, let bytes = entry.read(at: offset, maxLength: wanted), bytes.count == wanted {
                state.lastReadEnd = offset + Int64(wanted)
                if state.main == nil, windowEnd(state) != nil { refillWindowLocked(&state) }
                return .data(bytes)
            }
            if let bytes = state.overflow.read(at: offset, maxLength: wanted), bytes.count == wanted {
                state.lastReadEnd = offset + Int64(wanted)
                return .data(bytes)
            }
            if info.length == nil, held > 0, let bytes = entry.read(at: offset, maxLength: held) {
                state.lastReadEnd = offset + Int64(bytes.count)
                return .data(bytes)  // a stream of unknown length: partial reads are fine
            }
            if let failure = state.failure { return .failed(failure) }
            if let error = state.readerError {
                state.readerError = nil
                return .failed(error)
            }
            let missing = offset + Int64(held)
            state.waiter = Waiter(offset: missing, wake: wake)
            if state.unreachable != nil, info.randomAccess {
                // The last attempt found the origin unreachable and the transfer is backing off:
                // try once more now, so a reader learns at once whether the network is back.
                state.unreachable = nil
                startLocked(&state, at: missing, priority: .playback)
                return .pending
            }
            arrangeLocked(&state, for: missing, length: Int64(wanted - held), continuesPlayback: continuesPlayback || held > 0)
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
        state.withLock { state in
            state.waiter = nil
            state.readerError = nil
        }
    }

    /// The stream's average bytes per second (the player knows it from the duration and the
    /// length): a seek ahead of the running transfer waits for it when it is within 3 s of
    /// audio, if that is more than ``waitAheadLimit``. Zero or less forgets it.
    public func setByteRate(_ bytesPerSecond: Double) {
        state.withLock { $0.byteRate = bytesPerSecond > 0 ? bytesPerSecond : nil }
    }

    /// How far ahead of a running transfer a read waits for it rather than starting a request:
    /// about 512 KiB or 3 s of audio, whichever is more (a slow stream's 3 s are below 512 KiB
    /// and waiting for them costs little; a fast one's 3 s arrive as quickly as a new connection would).
    private func waitAhead(_ state: State) -> Int64 {
        guard let rate = state.byteRate else { return Self.waitAheadLimit }
        return max(Self.waitAheadLimit, Int64(rate * Self.waitAheadSeconds))
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
            defer { state.parked = [] }
            return [state.main?.id, state.side?.id, state.revalidation].compactMap { $0 } + state.parked.map(\.id)
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
            return state.main != nil || state.side != nil || !state.parked.isEmpty ? "fetching" : "idle"
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
    public var isDownloading: Bool { state.withLock { $0.main != nil || $0.side != nil || !$0.parked.isEmpty } }

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

    /// Whether `transfer` will deliver `offset` after at most `limit` more bytes.
    private static func reaches(_ transfer: Transfer?, _ offset: Int64, within limit: Int64) -> Bool {
        guard let transfer else { return false }
        return transfer.next <= offset && offset - transfer.next <= limit && transfer.end.map { offset < $0 } ?? true
    }

    /// Makes sure some transfer will deliver `offset` soon.
    /// `continuesPlayback`: the read follows the last one (playback reached a hole), so it is
    /// never a far tail read even near the end.
    private func arrangeLocked(_ state: inout State, for offset: Int64, length: Int64, continuesPlayback: Bool) {
        if Self.reaches(state.main, offset, within: waitAhead(state)), let main = state.main {
            if !state.background { fetcher.setPriority(main.id, .playback) }
            return  // the running transfer gets there soon
        }
        let total = state.info?.length
        if let side = state.side, Self.reaches(side, offset, within: .max) {
            if continuesPlayback, let end = side.end, let total, end < total, !isHeld(end, state),
                !Self.reaches(state.main, end, within: waitAhead(state))
            {
                // Reads go on from a short far request: it was a seek after all, so a transfer
                // follows on from its end now rather than when the reader gets there.
                if !resumeParkedLocked(&state, for: end) {
                    state.lastSeekStart = .now
                    parkLocked(&state, for: end)
                    startLocked(&state, at: end, priority: .playback)
                }
            }
            return
        }
        guard state.info?.randomAccess != false else { return }  // only the one stream from 0 can bring it
        if resumeParkedLocked(&state, for: offset) { return }  // back where a seek left off
        if let total, offset >= total - Self.tailRegion || length <= Self.tailRequestSize, !continuesPlayback,
            state.main != nil, state.side == nil
        {
            // A small far read (tags or moov at the end, a type finder's probe of the middle): its
            // own short request; the main one goes on, and stops if it reaches these bytes (see
            // `stopIfAtHeldBytesLocked`). Reads that go on from it make it a seek (above).
            // At the download's own priority, so the fetcher does not pause it meanwhile: a paused
            // connection keeps filling its socket, bytes lost if that transfer is later cancelled.
            let end = min(total, offset + Self.tailRequestSize, nextHeld(after: offset, state) ?? total)
            let priority: FetchPriority = state.background ? .preload : .playback
            let id = fetcher.start(request(offset, end: end, priority: priority, state)) { [weak self] id, event in
                self?.handle(event, of: id)
            }
            state.side = Transfer(id: id, next: offset, end: end)
            return
        }
        // A seek: go there now, unless a connection for a seek opened within the last
        // 100 ms — then once that interval is over, for whatever the reader wants by then.
        let now = ContinuousClock.now
        if let last = state.lastSeekStart, now - last < Self.seekConnectionInterval {
            // The last seek's transfer is already left behind: stop it now, so it wastes nothing
            // while the storm settles (what the first seek set aside stays parked).
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
        parkLocked(&state, for: offset)
        startLocked(&state, at: offset, priority: .playback)
    }

    /// The end of a seek storm: one connection, at the offset the reader waits for now.
    private func startDelayedSeek() {
        state.withLock { state in
            state.seekScheduled = false
            guard !state.closed, let waiter = state.waiter else { return }
            if Self.reaches(state.main, waiter.offset, within: waitAhead(state)) { return }
            if resumeParkedLocked(&state, for: waiter.offset) { return }
            state.lastSeekStart = .now
            parkLocked(&state, for: waiter.offset)
            startLocked(&state, at: waiter.offset, priority: .playback)
        }
    }

    /// Sets the main transfer aside for a seek instead of cancelling it: at the lowest priority
    /// the fetcher pauses it (`curl_easy_pause`) while the seek's transfer receives, so what the
    /// origin already sent waits in the socket and is used when it resumes, instead of being
    /// thrown away with the connection. Beyond ``maxParkedTransfers`` the oldest is cancelled.
    /// A transfer that would reach a held byte or `target` (a new transfer's start) within
    /// ``parkReach`` is cancelled instead, and so are parked ones `target` lies just ahead of.
    private func parkLocked(_ state: inout State, for target: Int64? = nil) {
        func collides(_ transfer: Transfer) -> Bool {
            let ahead = [nextHeld(after: transfer.next, state), target].compactMap { $0 }
                .filter { $0 > transfer.next && $0 < (transfer.end ?? .max) }.min()
            return ahead.map { $0 - transfer.next < Self.parkReach } ?? false
        }
        if target != nil {
            let colliding = state.parked.filter(collides).map(\.id)
            for id in colliding { fetcher.cancel(id) }
            state.parked.removeAll { colliding.contains($0.id) }
        }
        guard let main = state.main else { return }
        state.main = nil
        if collides(main) { return fetcher.cancel(main.id) }
        state.parked.append(main)
        fetcher.setPriority(main.id, .fillHoles)
        if state.parked.count > Self.maxParkedTransfers { fetcher.cancel(state.parked.removeFirst().id) }
    }

    /// Makes a parked transfer the main one again if it reaches `offset` soon (the current
    /// main one is parked in its place); false when none does.
    private func resumeParkedLocked(_ state: inout State, for offset: Int64) -> Bool {
        let limit = waitAhead(state)
        guard let index = state.parked.firstIndex(where: { Self.reaches($0, offset, within: limit) }) else { return false }
        let parked = state.parked.remove(at: index)
        parkLocked(&state)
        state.main = parked
        fetcher.setPriority(parked.id, state.background ? .preload : .playback)
        return true
    }

    private func startLocked(_ state: inout State, at offset: Int64, priority wanted: FetchPriority) {
        if let old = state.main { fetcher.cancel(old.id) }
        let priority = state.background ? FetchPriority.preload : wanted
        // Bounded by the next byte held or being fetched, so nothing is asked twice.
        var end = state.info?.length.flatMap { _ in nextHeld(after: offset, state) }
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

    /// The first byte after `offset` that is cached or that another transfer of this source
    /// will deliver next: where a new request should stop.
    private func nextHeld(after offset: Int64, _ state: State) -> Int64? {
        ([nextCached(after: offset), state.side?.next] + state.parked.map(\.next)).compactMap { $0 }.filter { $0 > offset }.min()
    }

    /// Whether `offset` is cached or is the side transfer's to deliver.
    private func isHeld(_ offset: Int64, _ state: State) -> Bool {
        entry.contiguousLength(from: offset) > 0 || Self.reaches(state.side, offset, within: .max)
    }

    private func firstMissing(length: Int64) -> Int64? {
        entry.missing(in: 0..<length).first?.lowerBound
    }

    /// The first missing byte that no running side transfer is about to deliver.
    private func nextToFetch(length: Int64, _ state: State) -> Int64? {
        for range in entry.missing(in: 0..<length) {
            var start = range.lowerBound
            if let side = state.side, let sideEnd = side.end, side.next <= start, start < sideEnd { start = sideEnd }
            if start < range.upperBound { return start }
        }
        return nil
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
            let parkedIndex = state.parked.firstIndex { $0.id == id }
            let isParked = parkedIndex != nil
            guard isMain || isParked || state.side?.id == id else { return }  // a replaced transfer
            switch event {
            case .response(let head):
                state.unreachable = nil
                accept(head, &state, &callbacks)
            case .changed(let head):
                // The file changed on the server: never splice it with what was cached.
                let wasOpen = state.info != nil && state.openCompletion == nil
                _ = try? entry.setMetadata(EntryMetadata())  // empties the entry
                state.overflow = ByteRuns()
                if wasOpen {
                    log.warning("\(loggable(url)) changed on the server while playing: reopening it")
                    state.failure = .readFailed("the resource changed on the server")
                    stopAllLocked(&state)
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
                state.unreachable = nil
                store(bytes, at: offset, &state)
                let next = offset + Int64(bytes.count)
                if isMain { state.main?.next = next } else if let parkedIndex { state.parked[parkedIndex].next = next } else { state.side?.next = next }
                if isMain, let limit = windowEnd(state), let main = state.main, main.next >= limit,
                    state.waiter.map({ $0.offset < limit }) ?? true
                {
                    // Far enough ahead of the play head in a large resource: stop here for now.
                    fetcher.cancel(main.id)
                    state.main = nil
                    try? entry.flush()
                }
                stopIfAtHeldBytesLocked(&state, &callbacks)
                if let waiter = state.waiter, entry.contiguousLength(from: waiter.offset) > 0
                    || state.overflow.contains(waiter.offset)
                {
                    state.waiter = nil
                    callbacks.append(waiter.wake)
                }
            case .status(let status):
                state.transferStatus = Self.describe(status)
                if case .retrying(_, _, let reason) = status, !isParked, let error = Self.unreachable(reason) {
                    // No connection at all: a reader waiting for bytes learns it now, while the
                    // transfer keeps retrying in the background (its next read tries at once).
                    state.unreachable = error
                    if isMain, let completion = state.openCompletion, let main = state.main {
                        // Nothing cached to play and no server to ask: say so now, not after the
                        // retry budget; the player's own retry and skip take it from here.
                        state.openCompletion = nil
                        fetcher.cancel(main.id)
                        state.main = nil
                        let failure = MediaSourceError.unavailable(error.description)
                        state.failure = failure
                        callbacks.append { completion(.failure(failure)) }
                    }
                    if let waiter = state.waiter {
                        state.waiter = nil
                        state.readerError = error
                        callbacks.append(waiter.wake)
                    }
                }
            case .finished:
                if isMain { state.main = nil } else if let parkedIndex { state.parked.remove(at: parkedIndex) } else { state.side = nil }
                try? entry.flush()
                continueLocked(&state, &callbacks)
            case .failed(let error):
                if let parkedIndex {
                    // Set aside by a seek; nobody waits for it.
                    state.parked.remove(at: parkedIndex)
                    if case .resourceChanged = error {
                        _ = try? entry.setMetadata(EntryMetadata())
                        state.failure = .readFailed("the resource changed on the server")
                        stopAllLocked(&state)
                    } else {
                        return
                    }
                }
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

    /// The clear error for a reader when `reason` means the origin cannot be reached at all
    /// (unknown host, refused, no route), nil for other failures, which are retried silently.
    private static func unreachable(_ reason: FetchError) -> MediaSourceError? {
        reason.unreachableServer.map { .readFailed("\($0); still retrying") }
    }

    /// Cancels every transfer of this source (the resource changed under them).
    private func stopAllLocked(_ state: inout State) {
        for transfer in [state.main, state.side].compactMap({ $0 }) + state.parked { fetcher.cancel(transfer.id) }
        state.main = nil
        state.side = nil
        state.parked = []
    }

    /// Stops the main or parked transfer when its next byte is already cached or is the side
    /// transfer's to deliver (a tail read fetched it after the main request was made): past
    /// that point it would only fetch bytes a second time. The main one continues elsewhere.
    private func stopIfAtHeldBytesLocked(_ state: inout State, _ callbacks: inout [@Sendable () -> Void]) {
        let reachedHeld = state.parked.filter { parked in
            parked.end.map { parked.next < $0 } ?? true
        }.filter { isHeld($0.next, state) }.map(\.id)
        for id in reachedHeld { fetcher.cancel(id) }
        state.parked.removeAll { reachedHeld.contains($0.id) }
        if let main = state.main, main.end.map({ main.next < $0 }) ?? true, isHeld(main.next, state) {
            fetcher.cancel(main.id)
            state.main = nil
            continueLocked(&state, &callbacks)
        }
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
        if let waiter = state.waiter, waiter.offset < length, !isHeld(waiter.offset, state) {
            if !resumeParkedLocked(&state, for: waiter.offset) {
                startLocked(&state, at: waiter.offset, priority: .playback)
            }
        } else if windowEnd(state) != nil {
            refillWindowLocked(&state)
            if state.main == nil, let waiter = state.waiter {
                state.waiter = nil
                callbacks.append(waiter.wake)
            }
        } else if let index = state.parked.firstIndex(where: { !isHeld($0.next, state) }) {
            // The seek's transfer is done: the one it set aside goes on as the read-ahead.
            let parked = state.parked.remove(at: index)
            state.main = parked
            fetcher.setPriority(parked.id, state.background ? .preload : .readAhead)
        } else if let missing = nextToFetch(length: length, state), state.info?.randomAccess != false {
            startLocked(&state, at: missing, priority: .readAhead)
        } else if state.side == nil, let waiter = state.waiter {
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
