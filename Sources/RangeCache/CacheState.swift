import FoundationEssentials
import Glibc

/// One entry in memory. `committed` is what the index claims (durable);
/// `available` adds bytes written but not yet synced, which are in the page
/// cache and safe to read back; `unsynced` is what the next sync will commit.
struct Record {
    let id: Int64
    let namespace: String
    let key: String
    var metadata: EntryMetadata
    var fileName: String
    /// Open while the entry has handles (or a sync or read holds a reference).
    var file: DataFile?
    var committed: RangeSet
    var available: RangeSet
    var unsynced = RangeSet()
    var unsyncedBytes: Int64 = 0
    /// Sync jobs queued by writers and not yet finished.
    var syncJobs = 0
    /// Whether a timed sync is scheduled for the current batch.
    var timerScheduled = false
    /// Bumped whenever the entry is emptied; I/O started under an older generation is discarded.
    var generation = 0
    let created: Int64
    var lastAccess: Int64
    var accessDirty = false
    var allocated: Int64
    var handles = 0
    /// Whether the entry was read from the index when the cache opened (not made since).
    var loadedAtOpen = false
    /// A sync or index failure not yet reported to a writer.
    var syncError: CacheError?

    init(row: IndexRow) {
        id = row.id
        namespace = row.namespace
        key = row.key
        metadata = row.metadata
        fileName = row.fileName
        committed = row.ranges
        available = row.ranges
        created = row.created
        lastAccess = row.lastAccess
        allocated = row.allocated
    }
}

/// Everything the cache's lock protects.
struct CacheState {
    /// Nil for a reader without an index, and after close.
    var index: Index?
    var records: [Int64: Record] = [:]
    /// Entry ids by ``slot(_:_:)``.
    var ids: [Slot: Int64] = [:]
    /// Pin counts by slot; a slot may be pinned before its entry exists.
    var pins: [Slot: Int] = [:]
    /// Resources whose sidecar was found missing before any version of theirs was bound: the
    /// first version bound (if named) takes the mark. In memory only.
    var sidecarMissesAhead: Set<Slot> = []
    var totalAllocated: Int64 = 0
    var stats = CacheStats()
    var lastTick: Int64 = 0
    var closed = false
    var lockDescriptor: Int32
    /// Removed entries whose index rows could not be deleted yet (disk full).
    var pendingDeletes: [Int64] = []
    /// Whether the data directory was fsync'ed since a file was created in it.
    var dataDirectorySynced = false
    /// Data files of forgotten or emptied entries, removed once the lock is released (an
    /// unlink on a slow disk must not hold up a read): see `RangeCache.removeDoomedFiles()`.
    var doomedFiles: [String] = []

    init(index: Index?, rows: [IndexRow], lockDescriptor: Int32, damaged: Int) {
        self.index = index
        self.lockDescriptor = lockDescriptor
        stats.damagedEntries = damaged
        records.reserveCapacity(rows.count)
        ids.reserveCapacity(rows.count)
        for row in rows {
            var record = Record(row: row)
            record.loadedAtOpen = true
            add(record)
            lastTick = max(lastTick, row.lastAccess)
        }
    }

    /// The dictionary key of an entry: its namespace and key.
    struct Slot: Hashable {
        let namespace: String
        let key: String
    }

    /// The slot of `key` in `namespace`.
    static func slot(_ namespace: String, _ key: String) -> Slot { Slot(namespace: namespace, key: key) }

    /// Now in milliseconds since 1970, strictly increasing (access order stays exact).
    mutating func tick() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        lastTick = max(Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000, lastTick + 1)
        return lastTick
    }

    /// Whether eviction must skip the entry: it has open handles or is pinned.
    func isInUse(_ record: Record) -> Bool {
        record.handles > 0 || pins[CacheState.slot(record.namespace, record.key)] != nil
    }

    mutating func add(_ record: Record) {
        records[record.id] = record
        ids[CacheState.slot(record.namespace, record.key)] = record.id
        totalAllocated += record.allocated
    }

    /// Forgets entries and deletes their index rows; their files join ``doomedFiles``. A row
    /// whose delete fails (a full disk) is retried later; a crash before the files are gone
    /// leaves files no row names, which the next open removes.
    mutating func remove(_ chosen: [Int64], dataDirectory: String) {
        guard !chosen.isEmpty else { return }
        for id in chosen {
            guard let record = records.removeValue(forKey: id) else { continue }
            ids[CacheState.slot(record.namespace, record.key)] = nil
            totalAllocated -= record.allocated
            doomedFiles.append(dataDirectory + "/" + record.fileName)
        }
        pendingDeletes += chosen
        deletePendingRows()
    }

    /// Deletes the index rows of removed entries, if the index lets us now.
    mutating func deletePendingRows() {
        guard !pendingDeletes.isEmpty, let index else { return }
        do throws(CacheError) {
            try index.delete(ids: pendingDeletes)
            pendingDeletes = []
        } catch {
            stats.writeFailures += 1
        }
    }

    func info(_ record: Record) -> EntryInfo {
        EntryInfo(
            key: CacheKey(stable: record.key), namespace: record.namespace, metadata: record.metadata,
            durableRanges: record.committed, allocatedBytes: record.allocated,
            created: Date(timeIntervalSince1970: Double(record.created) / 1000),
            lastAccess: Date(timeIntervalSince1970: Double(record.lastAccess) / 1000),
            inUse: isInUse(record))
    }

    /// Throws (once) a sync or index failure of entry `id` that no writer has heard of yet.
    mutating func reportSyncError(_ id: Int64) throws(CacheError) {
        if let failure = records[id]?.syncError {
            records[id]!.syncError = nil
            throw failure
        }
    }

    func requireOpen() throws(CacheError) {
        if closed { throw CacheError.closed }
    }

    func requireWritable(_ configuration: RangeCache.Configuration) throws(CacheError) {
        try requireOpen()
        if configuration.mode == .readOnly || index == nil { throw CacheError.readOnly }
    }

    /// Closes the index, every data file and the directory lock.
    mutating func close() {
        index?.database.close()
        index = nil
        for id in Array(records.keys) { records[id]!.file = nil }
        RangeCache.unlockDirectory(lockDescriptor)
        lockDescriptor = -1
        closed = true
    }
}
