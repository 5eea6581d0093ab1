import Dispatch
import Foundation
import MediaSource
import RangeCache
import Synchronization
import TestSupport
import Testing

/// The file system, except that every data sync waits until the test opens the gate (or
/// 10 s pass, so a test never hangs): a disk that takes its time to make bytes durable.
final class GatedSyncStorage: CacheStorage {
    let disk = FileSystemStorage()
    let gate = DispatchSemaphore(value: 0)
    /// Syncs that have returned.
    let completed = Atomic<Int>(0)
    /// Syncs that were asked for (waiting at the gate or done).
    let started = Atomic<Int>(0)

    func create(_ path: String) -> (any StoredFile)? { disk.create(path).map { GatedFile($0, self) } }
    func open(_ path: String, writable: Bool) -> (any StoredFile)? {
        disk.open(path, writable: writable).map { GatedFile($0, self) }
    }
    func remove(_ path: String) { disk.remove(path) }
    func syncDirectory(_ directory: String) { disk.syncDirectory(directory) }
    func fileNames(in directory: String) -> Set<String> { disk.fileNames(in: directory) }

    /// Lets every waiting and later sync through.
    func open() { for _ in 0..<64 { gate.signal() } }
}

private final class GatedFile: StoredFile {
    let file: any StoredFile
    let storage: GatedSyncStorage

    init(_ file: any StoredFile, _ storage: GatedSyncStorage) {
        self.file = file
        self.storage = storage
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int { file.write(bytes, at: offset) }
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int {
        file.read(into: buffer, at: offset)
    }
    func sync() -> Int32 {
        storage.started.add(1, ordering: .relaxed)
        if storage.gate.wait(timeout: .now() + 10) == .success { storage.gate.signal() }
        defer { storage.completed.add(1, ordering: .relaxed) }
        return file.sync()
    }
    var length: Int64? { file.length }
    var allocatedBytes: Int64 { file.allocatedBytes }
}

@Suite("A slow disk", .serialized)
struct SlowDiskTests {
    /// The end of a download (on the fetcher's thread), a read of cached bytes (GStreamer's
    /// streaming thread) and a close (a track change) go on while no sync has finished.
    @Test func readsAndACloseNeverWaitForASync() async throws {
        let storage = GatedSyncStorage()
        defer { storage.open() }
        let rig = try CacheRig(size: 600_000, storage: storage)
        let source = try rig.source()
        _ = try open(source).get()
        #expect(firstDifference(try readFully(source, at: 0, length: rig.body.count).get(), rig.body) == nil)
        _ = try rig.origin.requests(atLeast: 1)  // the download's response has ended
        #expect(firstDifference(try readFully(source, at: 1000, length: 50_000).get(), rig.body[1000..<51_000]) == nil)
        source.close()
        #expect(storage.completed.load(ordering: .relaxed) == 0, "a read or the close waited for a sync")
        storage.open()
        let entry = try rig.cache.entry(for: rig.url)
        #expect(
            await eventually(timeout: 5) { entry.durableRanges.count == Int64(rig.body.count) },
            "the bytes are committed once synced")
    }

    /// A download faster than the disk makes its writer wait for the running sync (the cache
    /// bounds what a crash can lose); that wait holds up no read of bytes already here.
    @Test func aDownloadThatOutrunsTheDiskHoldsUpNoReadOfHeldBytes() async throws {
        let storage = GatedSyncStorage()
        defer { storage.open() }
        let rig = try CacheRig(size: 3_000_000, storage: storage, syncBatchBytes: 32 << 10)
        let source = try rig.source()
        defer { source.close() }
        _ = try open(source).get()
        // A batch is in its held sync; the next write past the cap (one batch) waits for it,
        // microseconds later at loopback speed, long before this poll returns.
        #expect(await eventually(timeout: 5) { storage.started.load(ordering: .relaxed) >= 1 })
        // (A batch is only synced once it is written.)
        #expect(source.holds(0..<(32 << 10)))
        #expect(firstDifference(try readFully(source, at: 0, length: 32 << 10).get(), rig.body.prefix(32 << 10)) == nil)
        #expect(storage.completed.load(ordering: .relaxed) == 0, "a read waited for a sync")
    }

    /// A download that outruns its disk is held on the wire until the syncs catch up; the
    /// fetcher's thread never waits for them, so another track's download goes on meanwhile.
    @Test func aDownloadAheadOfItsDiskIsHeldAndAnotherOneGoesOn() async throws {
        let storage = GatedSyncStorage()
        defer { storage.open() }
        // Capped: at full loopback speed one pass of the fetcher's loop takes in more than the
        // whole body, before a hold can take effect.
        let slow = try CacheRig(
            size: 1_000_000, faults: OriginFaults(bytesPerSecond: 2_000_000), storage: storage, syncBatchBytes: 32 << 10
        )
        let other = try CacheRig(size: 400_000, fetcher: slow.fetcher)
        let held = try slow.source()
        defer { held.close() }
        _ = try open(held).get()
        #expect(await eventually(timeout: 5) { storage.started.load(ordering: .relaxed) >= 1 })
        #expect(
            await eventually(timeout: 5) { held.downloadState == "waiting for the disk to store what arrived" },
            "\(held.downloadState)")

        let source = try other.source()
        defer { source.close() }
        _ = try open(source).get()
        #expect(
            firstDifference(try readFully(source, at: 0, length: other.body.count, timeout: 5).get(), other.body) == nil
        )
        #expect(storage.completed.load(ordering: .relaxed) == 0, "the other download waited for the slow disk's sync")

        storage.open()
        #expect(firstDifference(try readFully(held, at: 0, length: slow.body.count).get(), slow.body) == nil)
        let entry = try slow.cache.entry(for: slow.url)
        #expect(await eventually(timeout: 5) { entry.durableRanges.count == Int64(slow.body.count) })
    }
}
