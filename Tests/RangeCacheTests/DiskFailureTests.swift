import Foundation
import TestSupport
import Testing

@testable import RangeCache

/// A tmpfs of `size` mounted under a fresh temporary directory; unmounted on `unmount()`.
private final class SmallFileSystem {
    let holder: TemporaryDirectory
    let mountPoint: URL

    init(size: String) throws {
        holder = try TemporaryDirectory(prefix: "spool-cache-fs")
        mountPoint = holder.file("mnt")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let result = try runCommand(
            "mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", mountPoint.path], timeout: 10)
        guard result.status == 0 else { throw RigError("mount tmpfs failed: \(result.stderr)") }
    }

    func remount(_ options: String) throws {
        let result = try runCommand("mount", ["-o", "remount,\(options)", mountPoint.path], timeout: 10)
        guard result.status == 0 else { throw RigError("remount failed: \(result.stderr)") }
    }

    func unmount() {
        _ = try? runCommand("umount", ["-l", mountPoint.path], timeout: 10)
    }
}

@Suite(.serialized, .enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
struct DiskFailureTests {
    @Test func aFullDiskFailsWritesSoftlyEvictsAndKeepsReadsWorking() throws {
        let fs = try SmallFileSystem(size: "3m")
        defer { fs.unmount() }
        let cache = try RangeCache(
            directory: fs.mountPoint.appendingPathComponent("cache"), configuration: testConfiguration())
        let old = try cache.entry(for: CacheKey(stable: "old"))!
        try old.write(randomBytes(1 << 20, seed: 1), at: 0)
        old.close()
        let current = try cache.entry(for: CacheKey(stable: "current"))!
        let source = randomBytes(4 << 20, seed: 2)
        var failures: [CacheError] = []
        var offset = 0
        while offset < source.count {
            do {
                try current.write(source[offset..<(offset + (256 << 10))], at: Int64(offset))
            } catch {
                failures.append(error)
            }
            offset += 256 << 10
        }
        #expect(failures.contains(.diskFull), "\(failures)")
        let stats = cache.stats
        #expect(stats.writeFailures >= 1)
        #expect(stats.evictions == 1 && cache.info(for: CacheKey(stable: "old")) == nil, "ENOSPC runs an eviction pass")
        #expect(!current.cachedRanges.isEmpty)
        for range in current.cachedRanges.ranges {
            let bytes = try #require(readAll(current, range))
            let want = source[Int(range.lowerBound)..<Int(range.upperBound)]
            #expect(firstDifference(bytes, want) == nil, "\(describeDifference(bytes, want))")
        }
        current.close()
        cache.close()
    }

    @Test func aReadOnlyDirectoryRefusesWritersAndServesReaders() throws {
        let fs = try SmallFileSystem(size: "4m")
        defer { fs.unmount() }
        let directory = fs.mountPoint.appendingPathComponent("cache")
        let source = randomBytes(100_000, seed: 3)
        do {
            let cache = try RangeCache(directory: directory, configuration: testConfiguration())
            let entry = try cache.entry(for: CacheKey(stable: "song"))!
            try entry.write(source, at: 0)
            entry.close()
            cache.close()
        }
        try fs.remount("ro")
        #expect(throws: CacheError.readOnly) {
            _ = try RangeCache(directory: directory, configuration: testConfiguration())
        }
        let reader = try RangeCache(directory: directory, configuration: testConfiguration(mode: .readOnly))
        let entry = try #require(try reader.entry(for: CacheKey(stable: "song"), create: false))
        let bytes = try #require(readAll(entry, 0..<100_000))
        #expect(firstDifference(bytes, source) == nil, "\(describeDifference(bytes, source))")
        #expect(throws: CacheError.readOnly) { try entry.write(Data([0]), at: 0) }
        #expect(throws: CacheError.readOnly) { _ = try reader.entry(for: CacheKey(stable: "other")) }
        entry.close()
        reader.close()
    }

    @Test func aDeletedCacheDirectoryFailsNewWritesAndKeepsOpenEntriesReadable() throws {
        let holder = try TemporaryDirectory(prefix: "spool-cache-gone")
        let directory = holder.file("cache")
        let cache = try RangeCache(directory: directory, configuration: testConfiguration())
        let entry = try cache.entry(for: CacheKey(stable: "kept"))!
        let source = randomBytes(50_000, seed: 4)
        try entry.write(source, at: 0)
        try entry.flush()
        try FileManager.default.removeItem(at: directory)
        #expect(readAll(entry, 0..<50_000) == source)
        let orphan = try cache.entry(for: CacheKey(stable: "new"))
        #expect(throws: CacheError.self) { try orphan?.write(Data([1, 2, 3]), at: 0) }
        #expect(cache.stats.writeFailures >= 1)
        entry.close()
        cache.close()
    }
}
