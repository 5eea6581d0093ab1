import Fetcher
import FoundationEssentials
import MPRIS
import MediaSource
import PlayerCore
import RangeCache
import SpoolLog
import Synchronization

/// Answers `org.spool.Spool1`'s cache questions from the daemon's range cache,
/// and prefetches: a `CachedByteSource` opened in the background, whose
/// read-ahead fills the entry, closed once the entry is complete or failed.
/// The cached sources playback opened, so clients can ask how their downloads go.
/// Weak: a source lives as long as the engine holds it.
final class PlaybackSources: Sendable {
    private final class Weak: @unchecked Sendable {
        weak var source: CachedByteSource?
        init(_ source: CachedByteSource) { self.source = source }
    }

    private let sources = Mutex<[String: Weak]>([:])

    /// Remembers `source` as the one playing `url`.
    func register(_ source: CachedByteSource, for url: URL) {
        sources.withLock { sources in
            sources = sources.filter { $0.value.source != nil }
            sources[url.absoluteString] = Weak(source)
        }
    }

    /// The live source for `url`, if any.
    func source(for url: URL) -> CachedByteSource? {
        sources.withLock { $0[url.absoluteString]?.source }
    }
}

final class CacheStatus: SpoolStatusProvider {
    private let cache: RangeCache?
    private let fetcher: Fetcher
    private let namespace: String
    private let playback: PlaybackSources
    private let preloader: CachePreloader?
    private let log = Logger(label: "prefetch")
    /// Prefetches by URL: the source and its entry while it runs, the last error once it failed.
    private let running = Mutex<[String: (source: CachedByteSource?, entry: CacheEntry?, error: String?)]>([:])

    /// How often a running prefetch checks whether its entry is complete.
    static let pollInterval: Duration = .milliseconds(100)

    init(
        cache: RangeCache?, fetcher: Fetcher, namespace: String, playback: PlaybackSources, preloader: CachePreloader?
    ) {
        self.playback = playback
        self.preloader = preloader
        self.cache = cache
        self.fetcher = fetcher
        self.namespace = namespace
    }

    func cacheStats() -> [(name: String, value: Int64)] {
        guard let cache else { return [] }
        let stats = cache.stats
        return [
            ("entries", Int64(stats.entries)), ("bytes", stats.bytes), ("budget", cache.configuration.budgetBytes),
            ("hits", Int64(stats.hits)), ("misses", Int64(stats.misses)),
            ("bytesServedFromCache", stats.bytesServedFromCache), ("bytesFromNetwork", stats.bytesFromNetwork),
            ("evictions", Int64(stats.evictions)), ("writeFailures", Int64(stats.writeFailures)),
            ("namespaces", Int64(stats.namespaces.count)),
        ]
    }

    func cachedResources(namespace: String?) -> [CachedResource] {
        cache?.entries(in: namespace).map(Self.resource) ?? []
    }

    func cacheState(of url: URL) -> CachedResource? {
        guard let cache, !url.isFileURL else { return nil }
        return cache.info(for: cache.key(for: url), namespace: namespace).map(Self.resource)
    }

    func clearCache(namespace: String?) throws {
        guard let cache else { throw DaemonError("the cache is not open") }
        try cache.clear(namespace: namespace)
    }

    func prefetch(_ url: URL) throws {
        guard let cache else { throw DaemonError("the cache is not open") }
        let entry = try cache.entry(for: url, namespace: namespace)
        let key = url.absoluteString
        let source = CachedByteSource(url: url, entry: entry, fetcher: fetcher)
        let started = running.withLock { running -> Bool in
            guard running[key]?.source == nil else { return false }
            running[key] = (source, entry, nil)
            return true
        }
        guard started else {
            entry.close()
            return
        }
        source.setBackground(true)
        log.info("prefetching \(loggable(url))")
        source.open { [weak self] result in
            switch result {
            case .success(let info):
                // One read starts the transfer; read-ahead then fills every hole.
                _ = source.read(at: 0, maxLength: 1) {}
                Task { await self?.watch(key, entry: entry, source: source, length: info.length) }
            case .failure(let error):
                self?.finish(key, source: source, error: "\(error)")
            }
        }
    }

    func downloadState(of url: URL) -> String {
        guard !url.isFileURL else { return "" }
        if let source = playback.source(for: url) { return source.downloadState }
        if let prefetch = running.withLock({ $0[url.absoluteString] }) {
            if let error = prefetch.error { return "failed: \(error)" }
            if let source = prefetch.source { return source.downloadState }
        }
        guard let state = cacheState(of: url) else { return "" }
        return state.length.map { length in state.ranges.reduce(0) { $0 + $1.count } >= length } == true ? "complete" : "idle"
    }

    func preparedTracks() -> [PreparedTrack] {
        preloader?.preparedTracks() ?? []
    }

    func prefetches() -> [CachedResource] {
        let snapshot = running.withLock { $0 }
        return snapshot.keys.sorted().compactMap { key in
            guard let url = URL(string: key) else { return nil }
            var resource = cacheState(of: url)
                ?? CachedResource(url: key, namespace: namespace, ranges: [], length: nil)
            // The index holds only what is synced, in batches: a progress bar drawn from it
            // jumped from 0 to 42 to 100 %. A running prefetch shows the bytes written so far.
            if let entry = snapshot[key]?.entry {
                resource.ranges = entry.cachedRanges.ranges
                resource.length = entry.metadata.validator.length ?? resource.length
            }
            resource.error = snapshot[key]?.error
            return resource
        }
    }

    /// Waits until the entry is complete, then closes the source (which makes the bytes durable).
    private func watch(_ key: String, entry: CacheEntry, source: CachedByteSource, length: Int64?) async {
        while let length, !entry.cachedRanges.contains(0..<length) {
            try? await Task.sleep(for: Self.pollInterval)
            if running.withLock({ $0[key]?.source }) !== source { return }
        }
        finish(key, source: source, error: length == nil ? "the server did not say how long the file is" : nil)
    }

    private func finish(_ key: String, source: CachedByteSource, error: String?) {
        source.close()
        running.withLock { $0[key] = (nil, nil, error) }
        if let error { log.warning("prefetch of \(URL(string: key).map(loggable) ?? "?") failed: \(error)") }
    }

    /// Closes every running prefetch.
    func shutdown() {
        let sources = running.withLock { running in running.values.compactMap(\.source) }
        sources.forEach { $0.close() }
    }

    private static func resource(_ info: EntryInfo) -> CachedResource {
        CachedResource(
            url: info.metadata.url?.absoluteString ?? info.key.value, namespace: info.namespace,
            ranges: info.durableRanges.ranges, length: info.metadata.validator.length, lastAccess: info.lastAccess)
    }
}
