import Fetcher
import FoundationEssentials
import MPRIS
import MediaSource
import PlayerCore
import RangeCache
import SpoolLog
import Synchronization

/// Carries out the player's preload plans in the range cache: for every upcoming track the
/// plan names, its prefix and its tail are fetched at preload priority, a few tracks at a
/// time, each missing range once (holes only, with If-Range once bytes are cached). A job
/// that leaves the plan is cancelled at once; its bytes stay cached. The rest of the next
/// track is not fetched here: the engine's source for it does that once the player hands
/// it over (``PreloadPlan/handOverNext``).
final class CachePreloader: Preloader {
    private struct State {
        var plan = PreloadPlan()
        var jobs: [String: HeadJob] = [:]
        /// Why a job failed, by URL, while the URL stays in the window (it is not retried).
        var failures: [String: String] = [:]
        /// Open cache handles, so what a download holds is read live (the index lags).
        var handles: [String: (entry: CacheEntry, used: ContinuousClock.Instant)] = [:]
        var onChange: (@Sendable () -> Void)?
    }

    private let cache: RangeCache
    private let fetcher: Fetcher
    private let namespace: String
    private let playback: PlaybackSources
    private let revalidator: Revalidator
    private let concurrency: Int
    private let companions: @Sendable (URL) -> Void
    private let state = Mutex(State())
    private let log = Logger(label: "preload")

    /// Creates a preloader writing into `cache` (in `namespace`) through `fetcher`, running at
    /// most `concurrency` jobs at once; `playback` tells whether a playing track downloads; an
    /// origin's answer counts as a check of the entry for `revalidator`. `companions` is told of
    /// every track the plan prepares (its head fetched or already here), so what goes with a track (its lyrics) is fetched
    /// with it and a change to it sends no request; it must return at once.
    init(
        cache: RangeCache, fetcher: Fetcher, namespace: String, playback: PlaybackSources, revalidator: Revalidator,
        concurrency: Int, companions: @escaping @Sendable (URL) -> Void = { _ in }
    ) {
        self.companions = companions
        self.revalidator = revalidator
        self.cache = cache
        self.fetcher = fetcher
        self.namespace = namespace
        self.playback = playback
        self.concurrency = max(1, concurrency)
    }

    func setChangeHandler(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.onChange = handler }
    }

    func download(of url: URL) -> TrackDownload {
        guard Self.isRemote(url) else { return .localFile }
        let key = url.absoluteString
        let entry = state.withLock { state -> CacheEntry? in
            if let held = state.handles[key] {
                state.handles[key]?.used = .now
                return held.entry
            }
            guard let entry = try? cache.entry(for: cache.key(for: url), namespace: namespace, create: false) else {
                return nil
            }
            state.handles[key] = (entry, .now)
            return entry
        }
        let running = state.withLock { $0.jobs[key] != nil }
        let downloading = running || playback.source(for: url)?.isDownloading == true
        guard let entry else { return TrackDownload(downloading: downloading) }
        return TrackDownload(
            length: entry.metadata.validator.length, ranges: entry.cachedRanges.ranges, downloading: downloading)
    }

    func apply(_ plan: PreloadPlan) {
        let (cancelled, started, released) = state.withLock { state -> ([HeadJob], [HeadJob], [CacheEntry]) in
            state.plan = plan
            let window = Set(plan.items.map(\.url.absoluteString))
            state.failures = state.failures.filter { window.contains($0.key) }
            let wanted = plan.paused ? [] : plan.jobs.filter { state.failures[$0.url.absoluteString] == nil }
            let wantedKeys = Set(wanted.map(\.url.absoluteString))
            let cancelled = state.jobs.filter { !wantedKeys.contains($0.key) }
            for key in cancelled.keys { state.jobs[key] = nil }
            var started: [HeadJob] = []
            for item in wanted where state.jobs.count < concurrency {
                let key = item.url.absoluteString
                guard state.jobs[key] == nil,
                    let entry = try? cache.entry(for: item.url, namespace: namespace)
                else { continue }
                let job = HeadJob(
                    url: item.url, entry: entry, fetcher: fetcher, revalidator: revalidator, prefix: item.prefix,
                    tail: item.tail
                ) {
                    [weak self] job, error in self?.ended(job, key: key, error: error)
                }
                guard job.hasWork else {
                    // The head is in (the plan predates it): nothing to start.
                    entry.close()
                    continue
                }
                state.jobs[key] = job
                started.append(job)
            }
            // Handles of tracks neither in the window nor asked about lately go back to the cache.
            let now = ContinuousClock.now
            let stale = state.handles.filter { !window.contains($0.key) && now - $0.value.used > .seconds(5) }
            for key in stale.keys { state.handles[key] = nil }
            return (Array(cancelled.values), started, stale.values.map(\.entry))
        }
        if plan.triggered && !plan.paused {
            for item in plan.items where item.stage != .waiting { companions(item.url) }
        }
        for job in cancelled {
            log.debug("preload of \(loggable(job.url)) cancelled: it left the window or preloading paused")
            job.cancel()
        }
        for job in started {
            log.debug("preloading the head of \(loggable(job.url))")
            job.start()
        }
        for entry in released { entry.close() }
    }

    /// Where every track of the current window stands, for clients.
    func preparedTracks() -> [PreparedTrack] {
        let (plan, failures) = state.withLock { ($0.plan, $0.failures) }
        return plan.items.map { item in
            let download = download(of: item.url)
            let length = download.length
            let headReady =
                download.complete
                || length.map { download.contains(0..<item.prefix) && download.contains(max(0, $0 - item.tail)..<$0) }
                    == true
            return PreparedTrack(
                url: item.url.absoluteString, stage: item.stage.rawValue, headBytes: item.prefix + item.tail,
                headReady: headReady, cachedBytes: download.cachedBytes, length: download.local ? nil : length,
                complete: download.complete, error: failures[item.url.absoluteString])
        }
    }

    /// Stops every job and returns the handles (shutdown).
    func stop() {
        let (jobs, handles) = state.withLock { state in
            defer {
                state.jobs.removeAll()
                state.handles.removeAll()
            }
            return (Array(state.jobs.values), state.handles.values.map(\.entry))
        }
        jobs.forEach { $0.cancel() }
        handles.forEach { $0.close() }
    }

    private func ended(_ job: HeadJob, key: String, error: String?) {
        let (plan, onChange) = state.withLock { state -> (PreloadPlan?, (@Sendable () -> Void)?) in
            guard state.jobs[key] === job else { return (nil, nil) }
            state.jobs[key] = nil
            if let error { state.failures[key] = error }
            return (state.plan, state.onChange)
        }
        guard let plan else { return }
        if let error { log.warning("preload of \(loggable(job.url)) failed: \(error)") }
        apply(plan)  // the next waiting job starts
        onChange?()  // the player plans again: the hand-over may be due now
    }

    private static func isRemote(_ url: URL) -> Bool {
        ["http", "https"].contains(url.scheme?.lowercased() ?? "")
    }
}

/// Fetches the prefix and the tail of one resource into its cache entry, one missing range
/// at a time, at preload priority. Binds the entry to the version the origin serves, like a
/// playing source would, so the bytes are the ones playback reads later.
final class HeadJob: Sendable {
    private struct State {
        var transfer: TransferID?
        var over = false
        /// The origin ignores Range: what the first answer brought is all there is to take.
        var noRanges = false
    }

    let url: URL
    private let entry: CacheEntry
    private let fetcher: Fetcher
    private let pacer: SyncPacer
    private let revalidator: Revalidator
    private let prefix: Int64
    private let tail: Int64
    private let onEnd: @Sendable (HeadJob, String?) -> Void
    private let state = Mutex(State())

    init(
        url: URL, entry: CacheEntry, fetcher: Fetcher, revalidator: Revalidator, prefix: Int64, tail: Int64,
        onEnd: @escaping @Sendable (HeadJob, String?) -> Void
    ) {
        self.revalidator = revalidator
        self.url = url
        self.entry = entry
        self.fetcher = fetcher
        pacer = SyncPacer(fetcher: fetcher)
        self.prefix = prefix
        self.tail = tail
        self.onEnd = onEnd
    }

    /// Whether part of the head is missing.
    var hasWork: Bool { missingRange() != nil }

    /// Starts with the first missing range.
    func start() { next() }

    /// Cancels the transfer; the bytes fetched so far stay cached.
    func cancel() {
        let transfer = state.withLock { state -> TransferID? in
            guard !state.over else { return nil }
            state.over = true
            defer { state.transfer = nil }
            return state.transfer
        }
        if let transfer { fetcher.cancel(transfer) }
        try? entry.flush()
        entry.close()
    }

    /// The first range of the head the entry lacks: the prefix first, then the tail.
    private func missingRange() -> Range<Int64>? {
        guard let length = entry.metadata.validator.length else {
            return entry.missing(in: 0..<prefix).first  // the first answer tells the length
        }
        for range in [0..<min(prefix, length), max(0, length - tail)..<length] {
            if let missing = entry.missing(in: range).first { return missing }
        }
        return nil
    }

    private func next() {
        let range = state.withLock { state -> Range<Int64>?? in
            guard !state.over else { return .none }
            return .some(state.noRanges ? nil : missingRange())
        }
        guard let range else { return }  // cancelled
        guard let range else {
            let noRanges = state.withLock { $0.noRanges }
            return finish(noRanges ? "the origin ignores Range requests: the rest comes when it plays" : nil)
        }
        let metadata = entry.metadata
        let held = HTTPValidator(etag: metadata.validator.etagHeader, lastModified: metadata.validator.lastModified)
        let request = RangeRequest(
            url: url, start: range.lowerBound, end: range.upperBound, knownLength: metadata.validator.length,
            condition: entry.cachedRanges.isEmpty ? nil : held.map { .ifRange($0) }, priority: .preload)
        state.withLock { state in
            guard !state.over else { return }  // cancelled meanwhile
            state.transfer = fetcher.start(request) { [weak self] id, event in self?.handle(event, of: id) }
        }
    }

    private func handle(_ event: TransferEvent, of id: TransferID) {
        guard state.withLock({ $0.transfer == id && !$0.over }) else { return }
        switch event {
        case .response(let head), .changed(let head):
            // A changed version empties the entry (setMetadata never mixes versions); its body follows from 0.
            let validator = CacheValidator(etag: head.etag, lastModified: head.lastModified, length: head.totalLength)
            _ = try? entry.setMetadata(
                EntryMetadata(url: url, validator: validator, contentType: head.contentType, acceptsRanges: head.honoursRange))
            if !head.honoursRange { state.withLock { $0.noRanges = true } }
            revalidator.markChecked(entry)  // the origin just named the version: no check needed soon
        case .data(let bytes, let offset):
            do throws(CacheError) {
                try entry.write(bytes, at: offset)
                pacer.wrote(id, to: entry)
            } catch {
                finish("cannot cache: \(error)")
            }
        case .finished:
            entry.flushInBackground()  // this is the fetcher's thread
            state.withLock { $0.transfer = nil }
            next()
        case .failed(let error):
            if case .resourceChanged = error { _ = try? entry.setMetadata(EntryMetadata()) }
            finish(error.description)
        case .status(.endedShort(let length)):
            // The body ended before its declared length on an origin without ranges: that is the end.
            entry.flushInBackground()
            _ = try? entry.correctLength(length)
        case .notModified, .status:
            break
        }
    }

    private func finish(_ error: String?) {
        let transfer = state.withLock { state -> TransferID?? in
            guard !state.over else { return .none }
            state.over = true
            defer { state.transfer = nil }
            return .some(state.transfer)
        }
        guard let transfer else { return }
        if let transfer { fetcher.cancel(transfer) }
        entry.closeInBackground()  // often on the fetcher's thread, which never waits for the disk
        onEnd(self, error)
    }
}
