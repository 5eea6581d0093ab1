import Dispatch
import FoundationEssentials
import Synchronization

/// Making written bytes durable: each entry's unsynced bytes are synced, then their ranges
/// committed to the index (data first, claim second), on the cache's sync queue.
extension RangeCache {
    /// Makes the entry's unsynced bytes durable, then commits their ranges to
    /// the index: data first, claim second. Runs on `syncQueue`.
    func sync(_ id: Int64, counted: Bool = false, timed: Bool = false) {
        let job = state.withLock { state -> (file: DataFile, ranges: RangeSet, generation: Int, directory: Bool)? in
            guard var record = state.records[id] else { return nil }
            if timed { record.timerScheduled = false }
            defer { state.records[id] = record }
            guard !record.unsynced.isEmpty, let file = record.file else {
                if counted { record.syncJobs -= 1 }
                return nil
            }
            let ranges = record.unsynced
            record.unsynced = RangeSet()
            record.unsyncedBytes = 0
            let directory = !state.dataDirectorySynced
            state.dataDirectorySynced = true
            return (file, ranges, record.generation, directory)
        }
        guard let job else { return }
        var failure: CacheError?
        do throws(CacheError) {
            try job.file.sync()
            if job.directory {
                // A new file's name must be durable too before the index names it.
                storage.syncDirectory(dataDirectory)
            }
        } catch {
            failure = error
        }
        let allocated = job.file.allocatedBytes()
        let shortfall = freeSpaceShortfall(extra: 0)
        var walPages = 0
        defer {
            // This is the sync queue.
            removeDoomedFiles()
            if walPages >= configuration.checkpointPages { checkpointIndex() }
        }
        state.withLock { state in
            guard var record = state.records[id] else { return }
            if counted { record.syncJobs -= 1 }
            defer { state.records[id] = record }
            guard record.generation == job.generation else { return }
            if let failure {
                // The kernel may have dropped these pages: never serve or claim them.
                state.stats.writeFailures += 1
                record.syncError = failure
                record.available.subtract(job.ranges)
                state.dataDirectorySynced = false
                logger.warning("sync failed: \(failure)")
                return
            }
            var committed = record.committed
            committed.formUnion(job.ranges)
            do throws(CacheError) {
                try state.index?.updateRanges(
                    id: id, ranges: committed, allocated: allocated, lastAccess: record.lastAccess)
                record.committed = committed
                record.accessDirty = false
                state.totalAllocated += allocated - record.allocated
                record.allocated = allocated
            } catch {
                // Durable but unclaimed: keep the bytes, retry the claim with the next batch.
                indexFailed(&state, error)
                record.syncError = error
                record.unsynced.formUnion(job.ranges)
            }
            if counted, record.syncJobs == 0, record.unsyncedBytes >= configuration.syncBatchBytes {
                // What piled up during this sync is the next batch: chain it.
                record.syncJobs += 1
                syncQueue.async { self.sync(id, counted: true) }
            }
            state.records[id] = record
            state.deletePendingRows()
            _ = evict(&state, shortfall: shortfall)
            walPages = state.index?.database.walPages ?? 0
        }
    }

    func flush(_ id: Int64) throws(CacheError) {
        guard configuration.mode == .readWrite else { return }
        onSyncQueue { sync(id) }
        try state.withLock { (state) throws(CacheError) in try state.reportSyncError(id) }
    }

    /// Syncs entry `id` on the sync queue (after the syncs queued before), then calls `body`.
    func syncInBackground(_ id: Int64, then body: @escaping @Sendable () -> Void) {
        syncQueue.async { [weak self] in
            self?.sync(id)
            body()
        }
    }

    func syncInBackground(_ id: Int64) {
        guard configuration.mode == .readWrite else { return }
        syncQueue.async { [weak self] in self?.sync(id) }
    }
}
