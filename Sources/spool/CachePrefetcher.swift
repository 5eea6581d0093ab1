import Fetcher
import FoundationEssentials
import MediaSource
import PlayerCore
import RangeCache
import SpoolLog
import Synchronization

/// Downloads upcoming tracks into the cache at preload priority, so they start
/// with no network: each is a background media source that nobody reads, whose
/// read-ahead fills the entry. Tracks that leave the window are cancelled at once
/// (their bytes stay cached); the total size being prefetched stays under a budget.
final class CachePrefetcher: Prefetcher {
    private let cache: RangeCache
    private let fetcher: Fetcher
    private let namespace: String
    private let budget: Int64
    private let jobs = Mutex<[URL: CachedByteSource]>([:])
    private let log = Logger(label: "prefetch")

    init(cache: RangeCache, fetcher: Fetcher, namespace: String, budget: Int64) {
        self.cache = cache
        self.fetcher = fetcher
        self.namespace = namespace
        self.budget = budget
    }

    /// Keeps prefetch jobs for `urls` (http(s) only), in order, within the budget.
    func prefetch(_ urls: [URL]) {
        let wanted = urls.filter { ["http", "https"].contains($0.scheme?.lowercased() ?? "") }
        let (stale, missing) = jobs.withLock { jobs -> ([CachedByteSource], [URL]) in
            let stale = jobs.filter { !wanted.contains($0.key) }
            for url in stale.keys { jobs[url] = nil }
            return (Array(stale.values), wanted.filter { jobs[$0] == nil })
        }
        for job in stale { job.close() }
        var committed = jobs.withLock { jobs in
            jobs.keys.reduce(Int64(0)) { total, url in total + (self.length(of: url) ?? 0) }
        }
        for url in missing {
            let known = length(of: url)
            if let known, committed + known > budget {
                log.debug("preload budget reached; not prefetching \(loggable(url))")
                break
            }
            guard let entry = try? cache.entry(for: url, namespace: namespace) else { continue }
            if let known, entry.contiguousLength(from: 0) >= known { continue }  // already complete
            let source = CachedByteSource(url: url, entry: entry, fetcher: fetcher)
            source.setBackground(true)
            source.open { [log] result in
                if case .failure(let error) = result { log.debug("prefetch of \(loggable(url)) failed: \(error)") }
            }
            committed += known ?? 0
            jobs.withLock { $0[url] = source }
            log.debug("prefetching \(loggable(url))")
        }
    }

    /// Stops every job (shutdown).
    func stop() {
        let all = jobs.withLock { jobs in
            defer { jobs.removeAll() }
            return Array(jobs.values)
        }
        for job in all { job.close() }
    }

    private func length(of url: URL) -> Int64? {
        cache.info(for: cache.key(for: url), namespace: namespace)?.metadata.validator.length
    }
}
