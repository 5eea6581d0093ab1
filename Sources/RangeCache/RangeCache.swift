import Basics
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// A disk cache of byte ranges of remote resources. Each resource (entry) has a
/// sparse data file and a row in a SQLite index recording exactly which byte
/// ranges are durably on disk. The fetcher writes into entries, the media
/// source reads from them; the cache itself never touches the network.
///
/// Guarantees: the index never claims a byte that is not durably on disk
/// (data is fdatasync'ed in batches before its ranges are committed); an entry
/// is bound to one version of its resource; damage found at open is dropped
/// with a warning; disk failures are thrown as ``CacheError`` values and never
/// stop reads of what is cached. One process may open a directory for writing
/// (others are refused with ``CacheError/inUseByAnotherProcess(directory:pid:)``);
/// any number may open it ``AccessMode/readOnly``.
///
/// Thread safety: every method may be called from any thread. One lock guards
/// the in-memory index; file I/O and fdatasync run outside it.
public final class RangeCache: Sendable {
    /// How a process opens the cache directory.
    public enum AccessMode: Sendable {
        /// The daemon: writes, evicts and repairs. Only one process at a time.
        case readWrite
        /// A reader such as the CLI: sees the index as it was at open, never writes.
        case readOnly
    }

    /// Tunables; every one has a sensible default.
    public struct Configuration: Sendable {
        /// Disk space all entries together may occupy (default 2 GiB).
        public var budgetBytes: Int64 = 2 << 30
        /// Free space to leave on the file system, in bytes (default 1 GiB)…
        public var minimumFreeBytes: Int64 = 1 << 30
        /// …or as a fraction of its size (default 5 %), whichever is larger.
        public var minimumFreeFraction: Double = 0.05
        /// Query parameters left out of keys and recorded URLs (signed-URL tokens).
        public var ignoredQueryParameters: [String] = CacheKey.defaultIgnoredParameters
        /// Unsynced bytes of an entry that start a sync + commit (default 256 KiB). While one
        /// sync runs, writers go on; what piles up meanwhile is the next batch.
        public var syncBatchBytes: Int64 = 256 << 10
        /// Unsynced bytes of an entry at which a writer waits for the running sync
        /// (default 4 MiB). A crash loses at most the batch being synced and the
        /// one being filled: each below this cap plus one write. At network rates
        /// batches stay near ``syncBatchBytes``; set both equal for the tightest bound.
        public var maximumUnsyncedBytes: Int64 = 4 << 20
        /// Time after a write by which it is synced and committed (default 2 s).
        public var syncInterval: Duration = .seconds(2)
        /// Once the index's write-ahead log holds this many pages, it is copied into the index
        /// (and synced) on the sync queue: never inside a commit, which runs under the lock
        /// that reads take.
        public var checkpointPages: Int = 1000
        /// Read-write (the daemon) or read-only (the CLI).
        public var mode: AccessMode = .readWrite
        /// Where the data files live (the file system; tests put a simulated disk here).
        public var storage: any CacheStorage = FileSystemStorage()

        /// The defaults.
        public init() {}
    }

    /// The namespace used when a caller names none.
    public static let defaultNamespace = "default"

    /// The cache directory.
    public let directory: URL
    /// The configuration it was opened with.
    public let configuration: Configuration

    let logger: Logger
    let dataDirectory: String
    /// The data files' storage (``Configuration/storage``).
    var storage: any CacheStorage { configuration.storage }
    let state: Mutex<CacheState>
    /// Held while doomed files are removed: a caller returns once every file doomed before its
    /// call is gone, even those another thread took to remove first (a clear, then a listing of
    /// the directory, sees none of them).
    let fileRemoval = Mutex(())
    /// Runs fdatasync + commit jobs, so writers (the fetcher's thread) never wait for the disk.
    let syncQueue = DispatchQueue(label: "spool.range-cache.sync")
    /// Marks `syncQueue`, so work already on it never waits for it (a deadlock).
    private let onSyncQueueKey = DispatchSpecificKey<Bool>()

    /// Runs `body` on the sync queue and waits for it (directly when already there).
    func onSyncQueue(_ body: () -> Void) {
        if DispatchQueue.getSpecific(key: onSyncQueueKey) == true {
            body()
        } else {
            syncQueue.sync(execute: body)
        }
    }

    /// Opens (creating if needed) the cache at `directory`.
    /// - Throws: ``CacheError/inUseByAnotherProcess(directory:pid:)`` when another
    ///   process has it open for writing; other errors when the directory cannot
    ///   be created or the index cannot be opened at all. A damaged index or
    ///   data file is not an error: it is dropped with a warning.
    public init(
        directory: URL, configuration: Configuration = Configuration(), logger: Logger = Logger(label: "cache")
    ) throws(CacheError) {
        self.directory = directory
        self.configuration = configuration
        self.logger = logger
        dataDirectory = directory.appendingPathComponent("data").path
        let readOnly = configuration.mode == .readOnly
        var lock: Int32 = -1
        if !readOnly {
            try RangeCache.prepareDirectories(directory.path, dataDirectory)
            lock = try RangeCache.lockDirectory(directory.path)
        }
        do throws(CacheError) {
            let loaded = try RangeCache.openIndex(
                directory: directory.path, dataDirectory: dataDirectory, readOnly: readOnly, logger: logger)
            var initial = CacheState(
                index: loaded.index, rows: loaded.rows, lockDescriptor: lock, damaged: loaded.damaged)
            initial.stats.indexRebuilds = loaded.rebuilt ? 1 : 0
            state = Mutex(initial)
        } catch {
            RangeCache.unlockDirectory(lock)
            throw error
        }
        syncQueue.setSpecific(key: onSyncQueueKey, value: true)
        if !readOnly {
            // Off the opening path: these checks cost ~20 ms per 10,000 entries.
            syncQueue.async { [weak self] in self?.checkConsistency() }
        }
    }

    /// The index file.
    var indexPath: String { directory.appendingPathComponent("index.sqlite").path }

    /// The checks that would slow opening down, run on the sync queue right
    /// after it: every page of the index (through a second connection; a
    /// damaged index is rebuilt from memory), and the data files (entries whose
    /// file vanished are dropped; files no entry names are removed). Until it
    /// has run, opening a handle checks that entry's file anyway.
    func checkConsistency() {
        do throws(CacheError) {
            let reader = try Index.open(path: indexPath, readOnly: true)
            defer { reader.database.close() }
            try reader.check()
        } catch {
            if case .index(let why) = error { state.withLock { state in rebuildIndex(&state, because: why) } }
        }
        let files = storage.fileNames(in: dataDirectory)
        defer { removeDoomedFiles() }
        state.withLock { state in
            guard !state.closed else { return }
            var referenced = Set<String>()
            var vanished: [Int64] = []
            for record in state.records.values {
                if files.contains(record.fileName) {
                    referenced.insert(record.fileName)
                } else if record.loadedAtOpen, record.generation == 0, record.file == nil, !record.committed.isEmpty {
                    // (Entries made or emptied since opening have files the listing may predate.)
                    vanished.append(record.id)
                }
            }
            if !vanished.isEmpty {
                logger.warning("dropped \(vanished.count) entries whose data file is missing")
                state.stats.damagedEntries += vanished.count
                state.remove(vanished, dataDirectory: dataDirectory)
            }
            // A file no entry names: a crash between creating or removing a file and the index.
            for file in files where !referenced.contains(file) { state.doomedFiles.append(dataDirectory + "/" + file) }
        }
    }

    /// Replaces a damaged index with a fresh one holding what memory knows:
    /// every entry's durable ranges, which were synced before they were claimed.
    func rebuildIndex(_ state: inout CacheState, because why: String) {
        guard !state.closed, state.index != nil else { return }
        logger.warning("cache index damaged (\(why)); rebuilding it from memory")
        state.index?.database.close()
        state.index = nil
        state.stats.indexRebuilds += 1
        do throws(CacheError) {
            let index = try Index.recreate(path: indexPath)
            try index.insert(
                state.records.values.map { record in
                    IndexRow(
                        id: record.id, namespace: record.namespace, key: record.key, fileName: record.fileName,
                        metadata: record.metadata, created: record.created, lastAccess: record.lastAccess,
                        allocated: record.allocated, ranges: record.committed)
                })
            state.index = index
        } catch {
            state.stats.writeFailures += 1
            logger.error("cache index cannot be rebuilt (\(error)); the cache works read-only until restart")
        }
    }

    /// Counts an index failure; a damaged database (not a full or read-only disk) is rebuilt.
    func indexFailed(_ state: inout CacheState, _ error: CacheError) {
        state.stats.writeFailures += 1
        if case .index(let why) = error, why.contains("malformed") || why.contains("not a database") {
            rebuildIndex(&state, because: why)
        }
    }

    deinit { close() }

    // MARK: Opening

    /// Creates the directories that are missing, readable by their owner only. A directory
    /// that exists already (one the user chose and shares, say) keeps its mode.
    private static func prepareDirectories(_ paths: String...) throws(CacheError) {
        for path in paths {
            if mkdir(path, 0o700) == 0 {
                chmod(path, 0o700)  // whatever the umask
                continue
            }
            guard errno != EEXIST else { continue }
            // Missing parents too: each one created here is private as well.
            var missing: [String] = []
            var parent = path
            while !parent.isEmpty, parent != "/", access(parent, F_OK) != 0 {
                missing.append(parent)
                parent = String(parent[..<(parent.lastIndex(of: "/") ?? parent.startIndex)])
            }
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            } catch {
                throw CacheError.system("create \(path)", errno: errno == 0 ? EACCES : errno)
            }
            for created in missing { chmod(created, 0o700) }
        }
    }

    /// Creates an empty file readable by its owner only (SQLite gives its -wal and -shm files the same mode).
    static func createPrivateFile(_ path: String) throws(CacheError) {
        Glibc.close(try systemCall("create \(path)") { open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) })
    }

    /// Takes the writer's lock (flock on `lock`, holding our pid) or throws.
    private static func lockDirectory(_ directory: String) throws(CacheError) -> Int32 {
        let path = directory + "/lock"
        let fd = try systemCall("open \(path)") { open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) }
        let deadline = ContinuousClock.now + .seconds(2)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            var text = [UInt8](repeating: 0, count: 32)
            let count = text.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 31, 0) }
            let pid =
                count > 0
                ? Int32(String(decoding: text.prefix(count), as: UTF8.self).trimmingWhitespaceAndNewlines()) : nil
            // Our own pid with no cache of this process holding the directory: a cache of ours
            // closed it a moment ago, and a child that another thread is starting still holds
            // a copy of the descriptor until its exec closes it (a flock belongs to the open
            // file, which the fork shares). That lasts microseconds to milliseconds: wait for it.
            let heldHere = lockedHere.withLock { $0.values.contains(directory) }
            guard pid == getpid(), !heldHere, ContinuousClock.now < deadline else {
                Glibc.close(fd)
                throw CacheError.inUseByAnotherProcess(directory: directory, pid: pid)
            }
            usleep(1000)
        }
        let pid = Array("\(getpid())\n".utf8)
        ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        lockedHere.withLock { $0[fd] = directory }
        return fd
    }

    /// The directories this process's caches hold locked, by lock descriptor.
    private static let lockedHere = Mutex<[Int32: String]>([:])

    /// Releases the lock ``lockDirectory(_:)`` took.
    static func unlockDirectory(_ fd: Int32) {
        guard fd >= 0 else { return }
        // Forgotten before the close: after it, the descriptor's number may name another lock.
        lockedHere.withLock { _ = $0.removeValue(forKey: fd) }
        Glibc.close(fd)
    }

    /// Opens the index, rebuilding it when damaged, and drops entries whose data file is gone.
    private static func openIndex(
        directory: String, dataDirectory: String, readOnly: Bool, logger: Logger
    ) throws(CacheError) -> (index: Index?, rows: [IndexRow], damaged: Int, rebuilt: Bool) {
        let path = directory + "/index.sqlite"
        if readOnly {
            guard FileManager.default.fileExists(atPath: path) else { return (nil, [], 0, false) }
            do throws(CacheError) {
                let index: Index
                do throws(CacheError) {
                    index = try Index.open(path: path, readOnly: true)
                } catch {
                    // A WAL index on a read-only file system cannot get its shared-memory
                    // file: read it as immutable (nobody can be writing it).
                    index = try Index.open(path: path, readOnly: true, immutable: true)
                }
                return (index, try index.load().rows, 0, false)
            } catch {
                logger.warning("cache index \(path) unreadable (\(error)); showing an empty cache")
                return (nil, [], 0, false)
            }
        }
        var index: Index
        var loaded: (rows: [IndexRow], damaged: [Int64])
        var rebuilt = false
        do throws(CacheError) {
            if !FileManager.default.fileExists(atPath: path) {
                try RangeCache.createPrivateFile(path)
            }
            index = try Index.open(path: path, readOnly: false)
            loaded = try index.load()
        } catch let error {
            guard case .index(let why) = error else { throw error }
            logger.warning("cache index damaged (\(why)); starting an empty cache")
            index = try Index.recreate(path: path)
            loaded = ([], [])
            rebuilt = true
        }
        if !loaded.damaged.isEmpty {
            logger.warning("dropped \(loaded.damaged.count) unreadable index rows")
            try? index.delete(ids: loaded.damaged)
        }
        return (index, loaded.rows, loaded.damaged.count, rebuilt)
    }

    // MARK: Keys and entries

    /// The default key of `url` under this cache's ignored parameters.
    public func key(for url: URL) -> CacheKey {
        CacheKey(url: url, ignoring: configuration.ignoredQueryParameters)
    }

    /// A handle on the entry for `key` in `namespace`, created empty when
    /// missing and `create` is true (nil otherwise). While a handle is open
    /// the entry is never evicted. Close it with ``CacheEntry/close()``.
    public func entry(for key: CacheKey, namespace: String = RangeCache.defaultNamespace, create: Bool = true)
        throws(CacheError) -> CacheEntry?
    {
        let id: Int64? = try state.withLock { (state) throws(CacheError) -> Int64? in
            try state.requireOpen()
            if let id = state.ids[CacheState.slot(namespace, key.value)] {
                state.records[id]!.handles += 1
                // Check the data file now, so what the handle reports it holds, it can serve.
                if state.records[id]!.file == nil { _ = try? dataFile(&state, id, create: false) }
                return id
            }
            guard create else { return nil }
            guard let index = state.index, configuration.mode == .readWrite else { throw CacheError.readOnly }
            let fileName = RangeCache.newFileName(namespace: namespace, key: key.value)
            let now = state.tick()
            let id: Int64
            do throws(CacheError) {
                id = try index.insert(namespace: namespace, key: key.value, fileName: fileName, now: now)
            } catch {
                indexFailed(&state, error)
                throw error
            }
            var record = Record(
                row: IndexRow(
                    id: id, namespace: namespace, key: key.value, fileName: fileName, metadata: EntryMetadata(),
                    created: now, lastAccess: now, allocated: 0, ranges: RangeSet()))
            record.handles = 1
            state.add(record)
            return id
        }
        return id.map { CacheEntry(cache: self, id: $0, key: key, namespace: namespace) }
    }

    /// A handle on the entry for `url` (keyed by ``key(for:)``), created when missing.
    public func entry(for url: URL, namespace: String = RangeCache.defaultNamespace) throws(CacheError) -> CacheEntry {
        try entry(for: key(for: url), namespace: namespace, create: true)!
    }

    /// A data file name: a hash of namespace and key (never URL text) and a random part, unique per version.
    static func newFileName(namespace: String, key: String) -> String {
        let hash = SHA256.hex(namespace + "\u{0}" + key).prefix(32)
        return "\(hash)-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
    }

    /// The URL as the index may record it: normalised, without ignored parameters.
    func recordedURL(_ url: URL?) -> URL? {
        url.flatMap { URL(string: CacheKey.normalise($0, ignoring: configuration.ignoredQueryParameters)) }
    }

    // MARK: Listing, namespaces, pins

    /// A snapshot of the entry for `key`, if cached.
    public func info(for key: CacheKey, namespace: String = RangeCache.defaultNamespace) -> EntryInfo? {
        state.withLock { state in
            state.ids[CacheState.slot(namespace, key.value)].map { state.info(state.records[$0]!) }
        }
    }

    /// Records that the sidecar of the resource `key` names is missing: on its entry, for the
    /// version the entry holds (``CacheEntry/markSidecarMissing(ofVersion:)``), or, when no
    /// entry names a version yet (the resource's own response has not come), for the first
    /// version its entry is bound to, if that one has a name. Returns false when neither can
    /// be: an entry of an origin that names no version.
    public func markSidecarMissing(of key: CacheKey, namespace: String = RangeCache.defaultNamespace)
        throws(CacheError) -> Bool
    {
        let slot = CacheState.slot(namespace, key.value)
        let held = state.withLock { state -> (id: Int64, version: ResourceVersion?)? in
            guard let id = state.ids[slot], let record = state.records[id] else {
                state.sidecarMissesAhead.insert(slot)
                return nil
            }
            if record.metadata.validator.named == nil, record.available.isEmpty, record.committed.isEmpty {
                state.sidecarMissesAhead.insert(slot)
                return nil
            }
            return (id, record.metadata.validator.named)
        }
        guard let held else { return true }
        guard let version = held.version else { return false }
        return try markSidecarMissing(held.id, ofVersion: version)
    }

    /// Snapshots of every entry, or of one namespace's.
    public func entries(in namespace: String? = nil) -> [EntryInfo] {
        state.withLock { state in
            state.records.values.filter { namespace == nil || $0.namespace == namespace }.map { state.info($0) }
                .sorted { $0.lastAccess > $1.lastAccess }
        }
    }

    /// The namespaces that hold entries.
    public func namespaces() -> [String] {
        state.withLock { state in Set(state.records.values.map(\.namespace)).sorted() }
    }

    /// Disk space the entries of `namespace` occupy.
    public func size(of namespace: String) -> Int64 {
        state.withLock { state in
            state.records.values.reduce(0) { $0 + ($1.namespace == namespace ? $1.allocated : 0) }
        }
    }

    /// Removes every entry of `namespace` (every entry when nil). Entries in use
    /// (pinned or open) are emptied instead, so their handles stay valid.
    public func clear(namespace: String? = nil) throws(CacheError) {
        defer { removeDoomedFiles() }
        try state.withLock { (state) throws(CacheError) in
            try state.requireWritable(configuration)
            let chosen = state.records.values.filter { namespace == nil || $0.namespace == namespace }
            let idle = chosen.filter { !state.isInUse($0) }.map(\.id)
            state.remove(idle, dataDirectory: dataDirectory)
            for record in chosen where state.isInUse(record) {
                try reset(&state, id: record.id, metadata: EntryMetadata())
            }
        }
    }

    /// Removes the entry for `key` unless it is in use; returns whether it was removed.
    @discardableResult
    public func remove(_ key: CacheKey, namespace: String = RangeCache.defaultNamespace) throws(CacheError) -> Bool {
        defer { removeDoomedFiles() }
        return try state.withLock { (state) throws(CacheError) -> Bool in
            try state.requireWritable(configuration)
            guard let id = state.ids[CacheState.slot(namespace, key.value)], !state.isInUse(state.records[id]!) else {
                return false
            }
            state.remove([id], dataDirectory: dataDirectory)
            return true
        }
    }

    /// Keeps the entry for `key` from eviction until as many ``unpin(_:namespace:)``
    /// calls; works before the entry exists (a queue item about to be preloaded).
    public func pin(_ key: CacheKey, namespace: String = RangeCache.defaultNamespace) {
        state.withLock { $0.pins[CacheState.slot(namespace, key.value), default: 0] += 1 }
    }

    /// Undoes one ``pin(_:namespace:)``.
    public func unpin(_ key: CacheKey, namespace: String = RangeCache.defaultNamespace) {
        state.withLock { state in
            let slot = CacheState.slot(namespace, key.value)
            if let count = state.pins[slot] { state.pins[slot] = count > 1 ? count - 1 : nil }
        }
    }

    // MARK: Stats

    /// The cache's counters and totals now.
    public var stats: CacheStats {
        state.withLock { state in
            var stats = state.stats
            stats.entries = state.records.count
            stats.bytes = state.totalAllocated
            for record in state.records.values {
                stats.namespaces[record.namespace, default: NamespaceStats(entries: 0, bytes: 0)].entries += 1
                stats.namespaces[record.namespace]!.bytes += record.allocated
            }
            return stats
        }
    }

    /// Syncs and commits what every entry has written so far.
    public func flush() throws(CacheError) {
        onSyncQueue {}  // also lets the checks that follow opening finish
        let ids = state.withLock { Array($0.records.keys) }
        var failure: CacheError?
        for id in ids {
            do throws(CacheError) { try flush(id) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Flushes everything, records last-access times and releases the directory.
    /// Handles fail with ``CacheError/closed`` afterwards. Called by deinit.
    public func close() {
        if state.withLock({ $0.closed }) { return }
        try? flush()
        removeDoomedFiles()
        state.withLock { state in
            guard !state.closed else { return }
            if let index = state.index, configuration.mode == .readWrite {
                try? index.updateAccess(
                    state.records.values.filter(\.accessDirty).map { (id: $0.id, lastAccess: $0.lastAccess) })
            }
            state.close()
        }
    }
}
