import Basics
import Fetcher
import FoundationEssentials
import MediaSource
import PlayerCore
import RangeCache
import Synchronization

/// Carries out the player's preload plans in the range cache: for every upcoming track the
/// plan names, its prefix and its tail are fetched at preload priority, a few tracks at a
/// time, each missing range once (holes only, with If-Range once bytes are cached). A job
/// that leaves the plan is cancelled at once; its bytes stay cached. The rest of the next
/// track is not fetched here: the engine's source for it does that once the player hands
/// it over (``PreloadPlan/handOverNext``).
public final class CachePreloader: Preloader {
    private struct State {
        var plan = PreloadPlan()
        /// The running preloads of heads, by URL: sources that nobody reads.
        var jobs: [String: HTTPByteSource] = [:]
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
    public init(
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

    /// Sets what to call when a job ends, so the player plans again.
    public func setChangeHandler(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.onChange = handler }
    }

    /// What the cache holds of `url` (read live from an open handle) and whether a preload job
    /// or the playing source downloads it.
    public func download(of url: URL) -> TrackDownload {
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

    /// Makes the running jobs match `plan`: starts the heads it names (at most `concurrency` at
    /// once, in order) and cancels at once every job no longer in it; bytes stay cached.
    public func apply(_ plan: PreloadPlan) {
        let (cancelled, started, released) = state.withLock {
            state -> ([HTTPByteSource], [(HTTPByteSource, PreloadPlan.Item)], [CacheEntry]) in
            state.plan = plan
            let window = Set(plan.items.map(\.url.absoluteString))
            state.failures = state.failures.filter { window.contains($0.key) }
            let wanted = plan.paused ? [] : plan.jobs.filter { state.failures[$0.url.absoluteString] == nil }
            let wantedKeys = Set(wanted.map(\.url.absoluteString))
            let cancelled = state.jobs.filter { !wantedKeys.contains($0.key) }
            for key in cancelled.keys { state.jobs[key] = nil }
            var started: [(HTTPByteSource, PreloadPlan.Item)] = []
            for item in wanted where state.jobs.count < concurrency {
                let key = item.url.absoluteString
                guard state.jobs[key] == nil,
                    let entry = try? cache.entry(for: item.url, namespace: namespace)
                else { continue }
                guard Self.lacksHead(entry, prefix: item.prefix, tail: item.tail) else {
                    // The head is in (the plan predates it): nothing to start.
                    entry.close()
                    continue
                }
                let job = HTTPByteSource(url: item.url, entry: entry, fetcher: fetcher, revalidator: revalidator)
                state.jobs[key] = job
                started.append((job, item))
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
            job.close()
        }
        for (job, item) in started {
            log.debug("preloading the head of \(loggable(job.url))")
            let key = item.url.absoluteString
            job.preload(prefix: item.prefix, tail: item.tail) { [weak self, weak job] error in
                if let self, let job { self.ended(job, key: key, error: error) }
            }
        }
        for entry in released { entry.close() }
    }

    /// Where every track of the current window stands, for clients.
    public func preparedTracks() -> [PreloadState] {
        let (plan, failures) = state.withLock { ($0.plan, $0.failures) }
        return plan.items.map { item in
            let download = download(of: item.url)
            let headReady =
                download.complete
                || download.length.map {
                    download.contains(0..<item.prefix) && download.contains(max(0, $0 - item.tail)..<$0)
                } == true
            return PreloadState(
                item: item, download: download, headReady: headReady, error: failures[item.url.absoluteString])
        }
    }

    /// Stops every job and returns the handles (shutdown).
    public func stop() {
        let (jobs, handles) = state.withLock { state in
            defer {
                state.jobs.removeAll()
                state.handles.removeAll()
            }
            return (Array(state.jobs.values), state.handles.values.map(\.entry))
        }
        jobs.forEach { $0.close() }
        handles.forEach { $0.close() }
    }

    private func ended(_ job: HTTPByteSource, key: String, error: String?) {
        let (plan, onChange) = state.withLock { state -> (PreloadPlan?, (@Sendable () -> Void)?) in
            guard state.jobs[key] === job else { return (nil, nil) }
            state.jobs[key] = nil
            if let error { state.failures[key] = error }
            return (state.plan, state.onChange)
        }
        guard let plan else { return }
        job.close()  // often on the fetcher's thread: the entry closes in the background
        if let error { log.warning("preload of \(loggable(job.url)) failed: \(error)") }
        apply(plan)  // the next waiting job starts
        onChange?()  // the player plans again: the hand-over may be due now
    }

    /// Whether `entry` lacks part of the head a preload fetches: the first `prefix` bytes and
    /// the last `tail` (only the prefix while the length is unknown).
    static func lacksHead(_ entry: CacheEntry, prefix: Int64, tail: Int64) -> Bool {
        guard let length = entry.metadata.validator.length else { return !entry.missing(in: 0..<prefix).isEmpty }
        return !entry.missing(in: 0..<min(prefix, length)).isEmpty
            || !entry.missing(in: max(0, length - tail)..<length).isEmpty
    }

    private static func isRemote(_ url: URL) -> Bool {
        ["http", "https"].contains(url.scheme?.lowercased() ?? "")
    }
}

/// Where one upcoming track of the preload window stands.
public struct PreloadState: Sendable, Equatable {
    /// The track, its stage and the size of its head, as the plan names it.
    public var item: PreloadPlan.Item
    /// What the cache holds of it and whether it downloads.
    public var download: TrackDownload
    /// Whether its head (prefix and tail) is cached, or all of it.
    public var headReady: Bool
    /// Why its preload failed, while it stays in the window (it is not retried).
    public var error: String?
}
