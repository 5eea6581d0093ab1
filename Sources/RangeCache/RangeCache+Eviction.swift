import Dispatch
import FoundationEssentials
import Glibc

/// Eviction, and the disk work that follows it off the cache's lock: removing the files of
/// forgotten entries and checkpointing the index.
extension RangeCache {
    /// Removes least recently used entries that are not in use until the cache
    /// is within its budget and the file system keeps its free-space floor.
    /// Returns how many entries were removed.
    @discardableResult
    public func evict() -> Int {
        let shortfall = freeSpaceShortfall(extra: 0)
        defer { removeDoomedFiles() }
        return state.withLock { state in evict(&state, shortfall: shortfall) }
    }

    /// Checkpoints the index through a connection of its own; on the sync queue.
    func checkpointIndex() {
        do throws(CacheError) {
            try Index.checkpoint(path: indexPath)
        } catch {
            logger.debug("index checkpoint failed: \(error)")
        }
    }

    /// Removes the files in `CacheState.doomedFiles`, with the state lock released; returns once
    /// they, and those another caller is removing, are gone (``fileRemoval``).
    func removeDoomedFiles() {
        fileRemoval.withLock { _ in
            let paths = state.withLock { state in
                defer { state.doomedFiles = [] }
                return state.doomedFiles
            }
            for path in paths { storage.remove(path) }
        }
    }

    /// ``removeDoomedFiles()`` on the sync queue: for callers on the fetcher's thread or
    /// GStreamer's, which must not wait for the disk.
    func removeDoomedFilesInBackground() {
        syncQueue.async { [weak self] in self?.removeDoomedFiles() }
    }

    /// How many bytes the file system lacks to keep its free-space floor (the larger of the
    /// two floors) plus `extra`. A statvfs, so asked with the lock released.
    func freeSpaceShortfall(extra: Int64) -> Int64 {
        var info = statvfs()
        guard statvfs(directory.path, &info) == 0 else { return 0 }
        let blockSize = Int64(info.f_frsize)
        let free = Int64(info.f_bavail) * blockSize
        let total = Int64(info.f_blocks) * blockSize
        let floor =
            max(configuration.minimumFreeBytes, Int64(Double(total) * configuration.minimumFreeFraction)) + extra
        return max(0, floor - free)
    }

    /// Forgets least recently used entries not in use until the cache is within its budget and
    /// `shortfall` bytes are freed; their files are doomed. Returns how many.
    func evict(_ state: inout CacheState, shortfall: Int64) -> Int {
        guard state.index != nil, configuration.mode == .readWrite else { return 0 }
        var overBudget = state.totalAllocated - configuration.budgetBytes
        var shortfall = shortfall
        guard overBudget > 0 || shortfall > 0 else { return 0 }
        let candidates = state.records.values.filter { !state.isInUse($0) }
            .sorted { ($0.lastAccess, $0.id) < ($1.lastAccess, $1.id) }
        var chosen: [Int64] = []
        for record in candidates where overBudget > 0 || shortfall > 0 {
            chosen.append(record.id)
            overBudget -= record.allocated
            shortfall -= max(record.allocated, 1)
        }
        state.remove(chosen, dataDirectory: dataDirectory)
        state.stats.evictions += chosen.count
        if !chosen.isEmpty { logger.debug("evicted \(chosen.count) entries") }
        return chosen.count
    }
}
