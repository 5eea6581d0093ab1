import CacheFilling
import FoundationEssentials
import MPRIS
import MediaSource
import PlayerCore
import RangeCache

/// Answers `org.spool.Spool1`'s cache questions from the daemon's range cache, its playing
/// sources, its preloader and its prefetcher.
final class CacheStatus: SpoolStatusProvider {
    private let cache: RangeCache?
    private let namespace: String
    private let playback: PlaybackSources
    private let preloader: CachePreloader?
    private let prefetcher: Prefetcher?
    private let presentations: PresentationCache?

    /// Answers from `cache` (nil when it could not be opened; `namespace` is the daemon's),
    /// the sources `playback` registered, `preloader`, `prefetcher`, and the HLS presentations
    /// read (`presentations`).
    init(
        cache: RangeCache?, namespace: String, playback: PlaybackSources, preloader: CachePreloader?,
        prefetcher: Prefetcher?, presentations: PresentationCache? = nil
    ) {
        self.presentations = presentations
        self.playback = playback
        self.preloader = preloader
        self.prefetcher = prefetcher
        self.cache = cache
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

    /// What the cache holds of `url`: its byte ranges and length; for an on-demand HLS
    /// presentation, the milliseconds of its time whose segments are stored, and its length in
    /// milliseconds (the playlist's own bytes would say nothing of the track).
    func cacheState(of url: URL) -> CachedResource? {
        guard let cache, !url.isFileURL else { return nil }
        if url.pathExtension.lowercased() == "m3u8" {
            guard let time = presentations?.timeRanges(of: url, in: cache, namespace: namespace) else { return nil }
            return CachedResource(
                url: url.absoluteString, namespace: namespace, ranges: time.ranges, length: time.length)
        }
        return cache.info(for: cache.key(for: url), namespace: namespace).map(Self.resource)
    }

    func clearCache(namespace: String?) throws {
        guard let cache else { throw DaemonError("the cache is not open") }
        try cache.clear(namespace: namespace)
    }

    func prefetch(_ url: URL) throws {
        guard let prefetcher else { throw DaemonError("the cache is not open") }
        try prefetcher.start(url)
    }

    func downloadState(of url: URL) -> String {
        guard !url.isFileURL else { return "" }
        if let source = playback.source(for: url) { return source.downloadState }
        if let state = prefetcher?.downloadState(of: url) { return state }
        guard let state = cacheState(of: url) else { return "" }
        return state.length.map { length in state.ranges.reduce(0) { $0 + $1.count } >= length } == true
            ? "complete" : "idle"
    }

    func preparedTracks() -> [PreparedTrack] {
        (preloader?.preparedTracks() ?? []).map { state in
            PreparedTrack(
                url: state.item.url.absoluteString, stage: state.item.stage.rawValue,
                headBytes: state.item.prefix + state.item.tail, headReady: state.headReady,
                cachedBytes: state.download.cachedBytes, length: state.download.local ? nil : state.download.length,
                complete: state.download.complete, error: state.error)
        }
    }

    func prefetches() -> [CachedResource] {
        (prefetcher?.progress() ?? []).map { prefetch in
            let key = prefetch.url.absoluteString
            var resource =
                cacheState(of: prefetch.url)
                ?? CachedResource(url: key, namespace: namespace, ranges: [], length: nil)
            // The index holds only what is synced, in batches: a progress bar drawn from it
            // jumped from 0 to 42 to 100 %. A running prefetch shows the bytes written so far.
            if let written = prefetch.writtenRanges {
                resource.ranges = written
                resource.length = prefetch.length ?? resource.length
            }
            resource.error = prefetch.error
            return resource
        }
    }

    /// Closes every running prefetch.
    func shutdown() {
        prefetcher?.stop()
    }

    private static func resource(_ info: EntryInfo) -> CachedResource {
        CachedResource(
            url: info.metadata.url?.absoluteString ?? info.key.value, namespace: info.namespace,
            ranges: info.durableRanges.ranges, length: info.metadata.validator.length, lastAccess: info.lastAccess)
    }
}
