import Basics
import Fetcher
import FoundationEssentials
import MediaSource
import RangeCache
import Synchronization

/// Fills whole cache entries a user asked for ahead of play: a ``HTTPByteSource`` opened in
/// the background, whose read-ahead fills every hole, closed once the entry is complete or
/// failed. Not limited on metered networks (it was asked for).
public final class Prefetcher: Sendable {
    /// Where one prefetch stands.
    public struct Progress: Sendable, Equatable {
        /// The URL asked for.
        public var url: URL
        /// While it runs, the ranges written so far (the index holds only what is synced, in
        /// batches, so a progress bar drawn from it jumps); nil once it ended.
        public var writtenRanges: [Range<Int64>]?
        /// While it runs, the resource's length once the origin said it.
        public var length: Int64?
        /// Why it failed, once it did.
        public var error: String?
    }

    private struct Running {
        var source: HTTPByteSource?
        var entry: CacheEntry?
        var error: String?
    }

    private let cache: RangeCache
    private let fetcher: Fetcher
    private let namespace: String
    private let log = Logger(label: "prefetch")
    /// Prefetches by URL: the source and its entry while it runs, the last error once it failed.
    private let running = Mutex<[String: Running]>([:])

    /// How often a running prefetch checks whether its entry is complete.
    public static let pollInterval: Duration = .milliseconds(100)

    /// Prefetches into `cache` (entries in `namespace`) through `fetcher`.
    public init(cache: RangeCache, fetcher: Fetcher, namespace: String) {
        self.cache = cache
        self.fetcher = fetcher
        self.namespace = namespace
    }

    /// Starts fetching every missing byte of `url`; nothing when it already runs. Throws when
    /// the cache cannot give it an entry.
    public func start(_ url: URL) throws(CacheError) {
        let entry = try cache.entry(for: url, namespace: namespace)
        let key = url.absoluteString
        let source = HTTPByteSource(url: url, entry: entry, fetcher: fetcher)
        let started = running.withLock { running -> Bool in
            guard running[key]?.source == nil else { return false }
            running[key] = Running(source: source, entry: entry)
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

    /// What the prefetch of `url` is doing, in words for a client ("failed: …" once it
    /// failed); nil when none ran in this daemon or it ended well.
    public func downloadState(of url: URL) -> String? {
        guard let prefetch = running.withLock({ $0[url.absoluteString] }) else { return nil }
        if let error = prefetch.error { return "failed: \(error)" }
        return prefetch.source?.downloadState
    }

    /// Every prefetch of this daemon run, by URL.
    public func progress() -> [Progress] {
        let snapshot = running.withLock { $0 }
        return snapshot.keys.sorted().compactMap { key in
            guard let url = URL(string: key), let prefetch = snapshot[key] else { return nil }
            return Progress(
                url: url, writtenRanges: prefetch.entry?.cachedRanges.ranges,
                length: prefetch.entry?.metadata.validator.length, error: prefetch.error)
        }
    }

    /// Closes every running prefetch.
    public func stop() {
        let sources = running.withLock { running in running.values.compactMap(\.source) }
        sources.forEach { $0.close() }
    }

    /// Waits until the entry is complete, then closes the source (which makes the bytes durable).
    private func watch(_ key: String, entry: CacheEntry, source: HTTPByteSource, length: Int64?) async {
        while let length, !entry.cachedRanges.contains(0..<length) {
            try? await Task.sleep(for: Self.pollInterval)
            if running.withLock({ $0[key]?.source }) !== source { return }
        }
        finish(key, source: source, error: length == nil ? "the server did not say how long the file is" : nil)
    }

    private func finish(_ key: String, source: HTTPByteSource, error: String?) {
        source.close()
        running.withLock { $0[key] = Running(error: error) }
        if let error { log.warning("prefetch of \(URL(string: key).map(loggable) ?? "?") failed: \(error)") }
    }
}
