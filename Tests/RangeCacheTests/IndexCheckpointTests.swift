import Foundation
import RangeCache
import TestSupport
import Testing

/// The index's write-ahead log is checkpointed by the cache itself, off the lock that reads
/// take (its commits never checkpoint): it must still stay bounded.
@Suite("Index checkpoints")
struct IndexCheckpointTests {
    @Test func theIndexLogStaysBoundedOverManyCommitsAndLosesNothing() throws {
        // tmpfs: a thousand syncs cost nothing there.
        let shm = URL(fileURLWithPath: "/dev/shm", isDirectory: true)
        let directory = try TemporaryDirectory(
            prefix: "spool-checkpoint", in: FileManager.default.fileExists(atPath: shm.path) ? shm : nil)
        var configuration = testConfiguration()
        configuration.checkpointPages = 20
        let commits = 600
        let body = randomBytes(commits, seed: 7)
        let wal = directory.url.appendingPathComponent("index.sqlite-wal").path
        var largest = 0
        do {
            let cache = try RangeCache(directory: directory.url, configuration: configuration)
            let entry = try cache.entry(for: CacheKey(stable: "many"))!
            for offset in 0..<commits {
                // Every other byte first: each commit changes the entry's ranges.
                let position = offset < commits / 2 ? offset * 2 : (offset - commits / 2) * 2 + 1
                try entry.write(body[position..<position + 1], at: Int64(position))
                try entry.flush()
                let size = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
                largest = max(largest, size)
            }
            entry.close()
            cache.close()
        }
        // A frame is a page and a 24-byte header; a checkpoint is due at 20 pages, and
        // each commit adds a few.
        #expect(largest > 0, "the index has a write-ahead log")
        #expect(largest < 40 * (4096 + 24) + 32, "the log grew to \(largest) bytes")
        let reopened = try RangeCache(directory: directory.url, configuration: configuration)
        let entry = try reopened.entry(for: CacheKey(stable: "many"))!
        defer { entry.close() }
        #expect(entry.durableRanges.contains(0..<Int64(commits)))
        #expect(readAll(entry, 0..<Int64(commits)) == body)
    }
}
