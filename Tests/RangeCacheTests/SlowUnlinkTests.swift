import Dispatch
import Foundation
import RangeCache
import Synchronization
import TestSupport
import Testing

/// The file system, except that removing a file waits until the test opens the gate (or 10 s
/// pass, so a test never hangs): a disk that takes its time to free a large file.
final class GatedRemoveStorage: CacheStorage {
    let disk = FileSystemStorage()
    let gate = DispatchSemaphore(value: 0)
    let removing = DispatchSemaphore(value: 0)
    /// Removals that have returned.
    let removed = Atomic<Int>(0)
    /// Whether removals wait at the gate.
    let armed = Atomic<Bool>(false)

    func create(_ path: String) -> (any StoredFile)? { disk.create(path) }
    func open(_ path: String, writable: Bool) -> (any StoredFile)? { disk.open(path, writable: writable) }
    func remove(_ path: String) {
        if armed.load(ordering: .relaxed) {
            removing.signal()
            if gate.wait(timeout: .now() + 10) == .success { gate.signal() }
        }
        disk.remove(path)
        removed.add(1, ordering: .relaxed)
    }
    func syncDirectory(_ directory: String) { disk.syncDirectory(directory) }
    func fileNames(in directory: String) -> Set<String> { disk.fileNames(in: directory) }
}

@Suite("Eviction on a slow disk", .serialized)
struct SlowUnlinkTests {
    @Test func aReadOfCachedBytesNeverWaitsForAnEvictedFileToBeRemoved() throws {
        let directory = try TemporaryDirectory(prefix: "spool-cache")
        let storage = GatedRemoveStorage()
        defer { storage.gate.signal() }
        var configuration = testConfiguration(budget: 300_000)
        configuration.storage = storage
        let cache = try RangeCache(directory: directory.url, configuration: configuration)
        let old = try cache.entry(for: CacheKey(stable: "old"))!
        try old.write(randomBytes(200_000, seed: 1), at: 0)
        old.close()
        let new = try cache.entry(for: CacheKey(stable: "new"))!
        defer { new.close() }
        let head = randomBytes(50_000, seed: 2)
        try new.write(head, at: 0)
        try new.flush()
        #expect(cache.stats.entries == 2, "both fit the budget")

        // Past the budget: the next sync evicts "old", whose file takes its time to go.
        storage.armed.store(true, ordering: .relaxed)
        try new.write(randomBytes(100_000, seed: 3), at: 50_000)
        new.flushInBackground()
        try #require(storage.removing.wait(timeout: .now() + 10) == .success, "no eviction started")

        let read = readAll(new, 0..<50_000)
        let stats = cache.stats
        #expect(storage.removed.load(ordering: .relaxed) == 0, "the read waited for the file's removal")
        #expect(read == head)
        #expect(stats.entries == 1 && stats.evictions == 1)
        storage.gate.signal()
        try new.flush()  // the removal ran on the queue the flush waits for
        #expect(storage.removed.load(ordering: .relaxed) == 1)
        #expect(dataFiles(directory.url).count == 1)
    }
}
