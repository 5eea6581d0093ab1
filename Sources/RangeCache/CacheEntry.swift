import Basics
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// A handle on one cached resource: the fetcher writes bytes into it, the media
/// source reads them back. While any handle on an entry is open the entry is
/// never evicted. Handles may be used from any thread; close them when done
/// (deinit closes too).
public final class CacheEntry: Sendable {
    /// The cache the entry lives in.
    public let cache: RangeCache
    /// The entry's key.
    public let key: CacheKey
    /// The namespace it belongs to.
    public let namespace: String
    let id: Int64
    private let closed = Atomic<Bool>(false)

    init(cache: RangeCache, id: Int64, key: CacheKey, namespace: String) {
        self.cache = cache
        self.id = id
        self.key = key
        self.namespace = namespace
    }

    deinit { close() }

    /// The entry's metadata (URL, validator and length, content type, Range support).
    public var metadata: EntryMetadata {
        cache.state.withLock { $0.records[id]?.metadata ?? EntryMetadata() }
    }

    /// Records what the origin said about the resource. When the entry holds
    /// bytes of another version (see ``ResourceVersion/isSameVersion(as:)``) it is
    /// emptied first, so versions never mix. Empty metadata (`EntryMetadata()`,
    /// which names no URL and no version) says the bytes held are of no known
    /// version: it always empties the entry, also one whose origin named no
    /// version either. A sidecar marked missing stays marked while the version is the same.
    /// Returns whether it was emptied.
    @discardableResult
    public func setMetadata(_ metadata: EntryMetadata) throws(CacheError) -> Bool {
        try cache.setMetadata(id, metadata)
    }

    /// Records that the resource's sidecar is missing, if the entry still holds `version` (a
    /// version the origin named): checked and written in one step, so a version bound in the
    /// meantime is never overwritten. Returns whether it was recorded.
    public func markSidecarMissing(ofVersion version: ResourceVersion) throws(CacheError) -> Bool {
        try cache.markSidecarMissing(id, ofVersion: version)
    }

    /// The resource turned out shorter than its recorded length (an origin that overstated
    /// its Content-Length): records `length`, keeping the version and the bytes before it, so a
    /// replay knows where it ends. An entry holding a byte at or past `length` is emptied
    /// instead: such bytes cannot be of this version, and the entry never claims bytes past
    /// the end.
    public func correctLength(_ length: Int64) throws(CacheError) {
        try cache.correctLength(id, length)
    }

    /// Every byte range the entry holds and can serve now, including bytes
    /// written but not yet committed to the index.
    public var cachedRanges: RangeSet { cache.state.withLock { $0.records[id]?.available ?? RangeSet() } }

    /// The ranges the index claims: durably on disk, surviving a crash.
    public var durableRanges: RangeSet { cache.state.withLock { $0.records[id]?.committed ?? RangeSet() } }

    /// The sub-ranges of `range` the entry does not hold (O(log n) in its ranges).
    public func missing(in range: Range<Int64>) -> [Range<Int64>] {
        cache.state.withLock { $0.records[id]?.available.missing(in: range) ?? [range] }
    }

    /// How many bytes from `offset` on the entry holds without a gap.
    public func contiguousLength(from offset: Int64) -> Int64 {
        cache.state.withLock { $0.records[id]?.available.contiguousLength(from: offset) ?? 0 }
    }

    /// Stores `bytes` at `offset`. The bytes can be read back at once; they are
    /// synced and committed in batches (``RangeCache/Configuration/syncBatchBytes``,
    /// ``RangeCache/Configuration/syncInterval``, ``flush()``), never per write.
    /// A write never waits for a sync: when the writer outruns the disk, ``isBehindOnSyncs``
    /// turns true and the writer should take no more bytes until ``whenSyncsCatchUp(_:)``
    /// calls back, so that a crash loses no more than about two batches.
    /// - Throws: ``CacheError`` when the disk refuses (full, read-only,
    ///   permissions): the caller keeps streaming from memory.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(CacheError) {
        try cache.write(id, bytes, at: offset)
    }

    /// Stores `data` at `offset`; see ``write(_:at:)-(UnsafeRawBufferPointer,_)``.
    public func write(_ data: Data, at offset: Int64) throws(CacheError) {
        // `withUnsafeBytes` rethrows untyped errors: carry the typed one out by hand.
        let failure = data.withUnsafeBytes { raw -> CacheError? in
            do throws(CacheError) { try cache.write(id, raw, at: offset) } catch { return error }
            return nil
        }
        if let failure { throw failure }
    }

    /// Copies cached bytes starting exactly at `offset` into `buffer`; returns
    /// how many (0 when the byte at `offset` is not cached: a miss).
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int {
        cache.read(id, into: buffer, at: offset)
    }

    /// Up to `maxLength` cached bytes starting exactly at `offset`, or nil on a miss.
    public func read(at offset: Int64, maxLength: Int) -> Data? {
        let available = Int(min(Int64(maxLength), contiguousLength(from: offset)))
        guard available > 0 else {
            _ = cache.read(id, into: UnsafeMutableRawBufferPointer(start: nil, count: 0), at: offset)
            return nil
        }
        var data = Data(count: available)
        let count = data.withUnsafeMutableBytes { cache.read(id, into: $0, at: offset) }
        guard count > 0 else { return nil }
        if count < available { data.count = count }
        return data
    }

    /// Counts a miss for a reader that found bytes missing and starts a download for them
    /// without reading here: a reader that checks before it reads never reaches
    /// ``read(into:at:)`` with a miss, so the counter would stay at zero beside megabytes
    /// fetched.
    public func countMiss() {
        cache.countMiss()
    }

    /// Whether ``RangeCache/Configuration/maximumUnsyncedBytes`` or more of this entry's bytes
    /// wait for a sync: the writer is ahead of the disk.
    public var isBehindOnSyncs: Bool {
        cache.state.withLock {
            $0.records[id].map { $0.unsyncedBytes >= cache.configuration.maximumUnsyncedBytes } ?? false
        }
    }

    /// Calls `body` (on the cache's sync queue) once everything written so far is synced and
    /// committed, or failed to be: when a writer ahead of the disk may go on.
    public func whenSyncsCatchUp(_ body: @escaping @Sendable () -> Void) {
        cache.syncInBackground(id, then: body)
    }

    /// Syncs and commits everything written so far: call when a transfer ends.
    /// Throws a sync or index failure that happened since the last report.
    public func flush() throws(CacheError) {
        try cache.flush(id)
    }

    /// Starts syncing and committing everything written so far without waiting for it: for a
    /// caller that must not wait for the disk (the fetcher's thread, a track change). A failure
    /// is reported by the next ``flush()``.
    public func flushInBackground() {
        cache.syncInBackground(id)
    }

    /// The decoder rejected cached bytes: the entry is emptied, so they are fetched again.
    public func markDecodeError() {
        cache.logger.warning("decode error reported on cached bytes of an entry in '\(namespace)'; dropping them")
        try? cache.drop(id)
    }

    /// Empties the entry: every byte and all metadata are forgotten.
    public func drop() throws(CacheError) {
        try cache.drop(id)
    }

    /// Like ``close()``, without waiting for the disk (a track change must not wait for a slow
    /// one): the flush runs on the cache's sync queue and the handle is released after it, so
    /// the entry counts as open until its bytes are synced and committed.
    public func closeInBackground() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        cache.releaseInBackground(id)
    }

    /// Flushes and releases the handle; an entry left without bytes is removed unless it
    /// remembers that its resource's sidecar is missing.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        cache.release(id)
    }
}

extension RangeCache {
    /// What a writer does after registering its bytes.
    private enum SyncAction { case none, sync }

    /// The entry's open data file, opening (and checking) or creating it. An
    /// existing file that is foreign or too short empties the entry.
    func dataFile(_ state: inout CacheState, _ id: Int64, create: Bool) throws(CacheError) -> DataFile? {
        guard let record = state.records[id] else { throw CacheError.entryRemoved }
        if let file = record.file { return file }
        let readOnly = configuration.mode == .readOnly
        do {
            let file = try DataFile.open(
                in: dataDirectory, name: record.fileName, end: record.committed.upperBound ?? 0, readOnly: readOnly,
                storage: storage)
            state.records[id]!.file = file
            return file
        } catch .missing where record.committed.isEmpty && record.available.isEmpty {
            // Nothing written yet: the file is made on the first write.
        } catch {
            logger.warning("data file of an entry in '\(record.namespace)' is damaged (\(error)); dropping its bytes")
            state.stats.damagedEntries += 1
            if readOnly {
                state.records[id]!.committed = RangeSet()
                state.records[id]!.available = RangeSet()
                return nil
            }
            try reset(&state, id: id, metadata: record.metadata)
        }
        guard create, !readOnly else { return nil }
        let file = try DataFile.create(in: dataDirectory, name: state.records[id]!.fileName, storage: storage)
        state.records[id]!.file = file
        state.dataDirectorySynced = false
        return file
    }

    /// Empties an entry under a new data file name, so I/O still in flight on the
    /// old file can never land in the new version.
    func reset(_ state: inout CacheState, id: Int64, metadata: EntryMetadata) throws(CacheError) {
        guard let index = state.index, var record = state.records[id] else { return }
        let fileName = RangeCache.newFileName(namespace: record.namespace, key: record.key)
        do throws(CacheError) {
            try index.reset(id: id, fileName: fileName, metadata: metadata)
        } catch {
            indexFailed(&state, error)
            throw error
        }
        state.doomedFiles.append(dataDirectory + "/" + record.fileName)
        state.totalAllocated -= record.allocated
        record.allocated = 0
        record.fileName = fileName
        record.file = nil
        record.metadata = metadata
        record.committed = RangeSet()
        record.available = RangeSet()
        record.unsynced = RangeSet()
        record.unsyncedBytes = 0
        record.generation += 1
        state.records[id] = record
    }

    func setMetadata(_ id: Int64, _ metadata: EntryMetadata) throws(CacheError) -> Bool {
        var metadata = metadata
        metadata.url = recordedURL(metadata.url)
        defer { removeDoomedFilesInBackground() }
        return try state.withLock { (state) throws(CacheError) -> Bool in
            try state.requireWritable(configuration)
            guard let record = state.records[id], let index = state.index else { throw CacheError.entryRemoved }
            // A mark made while no version was held goes to the first one bound. Empty metadata
            // (a version forgotten) binds nothing, so the mark waits for the next response.
            if record.metadata.validator.named == nil, metadata != EntryMetadata(),
                state.sidecarMissesAhead.remove(CacheState.slot(record.namespace, record.key)) != nil,
                metadata.validator.named != nil
            {
                metadata.sidecarMissing = true
            }
            // What is known of a version stays known through its later responses, even when the
            // caller read the metadata before the mark was written; a new version starts without.
            if record.metadata.sidecarMissing, let held = record.metadata.validator.named,
                held.isSameVersion(as: metadata.validator)
            {
                metadata.sidecarMissing = true
            }
            let holdsBytes = !record.available.isEmpty || !record.committed.isEmpty
            // Without a tag, a date or a length on either side, isSameVersion cannot tell two
            // versions apart; empty metadata is how a caller says the held bytes are stale.
            if holdsBytes,
                metadata == EntryMetadata() || !record.metadata.validator.isSameVersion(as: metadata.validator)
            {
                logger.info("the resource changed; emptying its entry")
                try reset(&state, id: id, metadata: metadata)
                return true
            }
            try storeMetadata(metadata, of: id, in: &state, index: index)
            return false
        }
    }

    func markSidecarMissing(_ id: Int64, ofVersion version: ResourceVersion) throws(CacheError) -> Bool {
        try state.withLock { (state) throws(CacheError) -> Bool in
            try state.requireWritable(configuration)
            guard let record = state.records[id], let index = state.index else { throw CacheError.entryRemoved }
            guard let held = record.metadata.validator.named, held.isSameVersion(as: version) else { return false }
            var metadata = record.metadata
            metadata.sidecarMissing = true
            try storeMetadata(metadata, of: id, in: &state, index: index)
            return true
        }
    }

    func correctLength(_ id: Int64, _ length: Int64) throws(CacheError) {
        defer { removeDoomedFilesInBackground() }
        try state.withLock { (state) throws(CacheError) in
            try state.requireWritable(configuration)
            guard let record = state.records[id], let index = state.index else { throw CacheError.entryRemoved }
            var metadata = record.metadata
            metadata.validator.length = length
            let heldEnd = max(record.available.upperBound ?? 0, record.committed.upperBound ?? 0)
            if heldEnd > length {
                logger.info("bytes past the corrected end of an entry; emptying it")
                return try reset(&state, id: id, metadata: metadata)
            }
            try storeMetadata(metadata, of: id, in: &state, index: index)
        }
    }

    /// Writes an entry's new metadata to the index, then to the record; a failed index write
    /// marks the index failed and changes nothing.
    private func storeMetadata(
        _ metadata: EntryMetadata, of id: Int64, in state: inout CacheState, index: Index
    ) throws(CacheError) {
        do throws(CacheError) {
            try index.updateMetadata(id: id, metadata: metadata)
        } catch {
            indexFailed(&state, error)
            throw error
        }
        state.records[id]!.metadata = metadata
    }

    func drop(_ id: Int64) throws(CacheError) {
        defer { removeDoomedFiles() }
        try state.withLock { (state) throws(CacheError) in
            try state.requireWritable(configuration)
            try reset(&state, id: id, metadata: EntryMetadata())
        }
    }

    func write(_ id: Int64, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(CacheError) {
        guard !bytes.isEmpty else { return }
        precondition(offset >= 0, "negative cache offset")
        let (file, generation) = try state.withLock { (state) throws(CacheError) -> (DataFile, Int) in
            try state.requireWritable(configuration)
            try state.reportSyncError(id)
            do throws(CacheError) {
                guard let file = try dataFile(&state, id, create: true), file.writable else {
                    throw CacheError.readOnly
                }
                return (file, state.records[id]!.generation)
            } catch {
                state.stats.writeFailures += 1
                throw error
            }
        }
        do throws(CacheError) {
            try file.write(bytes, at: offset)
        } catch {
            let shortfall = error == .diskFull ? freeSpaceShortfall(extra: max(1 << 20, Int64(bytes.count) * 16)) : 0
            state.withLock { state in
                state.stats.writeFailures += 1
                if error == .diskFull { _ = evict(&state, shortfall: shortfall) }
            }
            removeDoomedFilesInBackground()
            throw error
        }
        let range = offset..<(offset + Int64(bytes.count))
        let action = state.withLock { state -> SyncAction in
            guard var record = state.records[id], record.generation == generation else { return .none }
            record.available.insert(range)
            record.unsynced.insert(range)
            record.unsyncedBytes += Int64(bytes.count)
            record.lastAccess = state.tick()
            record.accessDirty = true
            state.stats.bytesFromNetwork += Int64(bytes.count)
            var action = SyncAction.none
            if !record.timerScheduled {
                record.timerScheduled = true
                let deadline = DispatchTime.now() + .nanoseconds(Int(configuration.syncInterval / .nanoseconds(1)))
                syncQueue.asyncAfter(deadline: deadline) { [weak self] in self?.sync(id, timed: true) }
            }
            // With a sync running, its end chains the next batch.
            if record.unsyncedBytes >= configuration.syncBatchBytes, record.syncJobs == 0 {
                record.syncJobs += 1
                action = .sync
            }
            state.records[id] = record
            return action
        }
        switch action {
        case .none: break
        case .sync: syncQueue.async { self.sync(id, counted: true) }
        }
    }

    /// One more miss in the counters.
    func countMiss() {
        state.withLock { $0.stats.misses += 1 }
    }

    func read(_ id: Int64, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int {
        let plan = state.withLock { state -> (file: DataFile, count: Int, generation: Int)? in
            guard !state.closed, state.records[id] != nil else { return nil }
            var count = Int(min(Int64(buffer.count), state.records[id]!.available.contiguousLength(from: offset)))
            var file: DataFile?
            if count > 0 {
                file = try? dataFile(&state, id, create: false)
                count = Int(min(Int64(count), state.records[id]?.available.contiguousLength(from: offset) ?? 0))
            }
            guard let file, count > 0 else {
                state.stats.misses += 1
                return nil
            }
            state.records[id]!.lastAccess = state.tick()
            state.records[id]!.accessDirty = true
            return (file, count, state.records[id]!.generation)
        }
        guard let plan else { return 0 }
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[..<plan.count])
        let count = (try? plan.file.read(into: target, at: offset)) ?? -1
        return state.withLock { state -> Int in
            guard let record = state.records[id], record.generation == plan.generation else {
                state.stats.misses += 1
                return 0
            }
            guard count == plan.count else {
                logger.warning("data file of an entry in '\(record.namespace)' shrank under us; dropping its bytes")
                state.stats.damagedEntries += 1
                state.stats.misses += 1
                if configuration.mode == .readWrite {
                    try? reset(&state, id: id, metadata: record.metadata)
                } else {
                    state.records[id]!.available = RangeSet()
                    state.records[id]!.committed = RangeSet()
                }
                return 0
            }
            state.stats.hits += 1
            state.stats.bytesServedFromCache += Int64(count)
            return count
        }
    }

    /// A handle was closed: flush, then release the file; an entry left without bytes is removed.
    func release(_ id: Int64) {
        if configuration.mode == .readWrite, !state.withLock({ $0.closed }) {
            do { try flush(id) } catch { logger.warning("flush on close failed: \(error)") }
        }
        releaseHandle(id)
    }

    func releaseInBackground(_ id: Int64) {
        let unsynced = state.withLock { state in !state.closed && !(state.records[id]?.unsynced.isEmpty ?? true) }
        guard configuration.mode == .readWrite, unsynced else { return releaseHandle(id) }
        // The handle goes after the sync, which needs the open file. Closing the cache waits for the queue.
        syncQueue.async { [self] in
            sync(id)
            do throws(CacheError) {
                try state.withLock { (state) throws(CacheError) in try state.reportSyncError(id) }
            } catch {
                logger.warning("flush on close failed: \(error)")
            }
            releaseHandle(id)
        }
    }

    private func releaseHandle(_ id: Int64) {
        defer { removeDoomedFilesInBackground() }
        state.withLock { state in
            guard var record = state.records[id] else { return }
            record.handles -= 1
            guard record.handles == 0 else {
                state.records[id] = record
                return
            }
            // An empty entry that knows its resource's sidecar is missing stays (a track replaced
            // or quit before its first byte): the knowledge costs a request otherwise.
            if record.available.isEmpty, record.committed.isEmpty, !record.metadata.sidecarMissing,
                !state.isInUse(record), state.index != nil, configuration.mode == .readWrite
            {
                state.remove([id], dataDirectory: dataDirectory)
                return
            }
            record.file = nil
            if record.accessDirty, let index = state.index, configuration.mode == .readWrite {
                if (try? index.updateAccess(id: id, lastAccess: record.lastAccess)) != nil {
                    record.accessDirty = false
                }
            }
            state.records[id] = record
        }
    }
}
