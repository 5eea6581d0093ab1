import Basics
import Foundation
import RangeCache
import TestSupport
import Testing

/// The cache's durability rule under simulated power cuts: downloads of two resources write
/// in random pieces, seek, flush, and see their resource change on the origin (a new version
/// empties the entry); the power goes at a random step (a background sync may be in flight);
/// the disk then keeps, drops or tears each unsynced write (``PowerCutStorage``). After each
/// cut the cache is opened again and every byte it would serve must be the byte of the version
/// its entry names. POWERCUT_ITERATIONS sets the number of cuts (default 2000).
@Suite("Power cuts")
struct PowerCutTests {
    @Test func afterAnyPowerCutEveryByteServedIsTheOriginsByte() throws {
        let iterations = Int(ProcessInfo.processInfo.environment["POWERCUT_ITERATIONS"] ?? "") ?? 2000
        var served = 0
        var lost = 0
        var cutsLosingBytes = 0
        for seed in 0..<iterations {
            let outcome = try powerCut(seed: UInt64(seed))
            served += outcome.served
            lost += outcome.lost
            if outcome.lost > 0 { cutsLosingBytes += 1 }
        }
        // Not vacuous: cuts lost unsynced bytes, and the cache still served what it had synced.
        #expect(
            served > 0 && cutsLosingBytes > iterations / 4, "served \(served), lost \(lost) in \(cutsLosingBytes) cuts")
    }

    /// One run to a power cut and the check after it; returns the bytes served after it and lost by it.
    private func powerCut(seed: UInt64) throws -> (served: Int, lost: Int) {
        var generator = SeededGenerator(seed: seed)
        // The index's own syncs are real: on tmpfs they cost nothing (the data files are simulated).
        let memory = URL(fileURLWithPath: "/dev/shm", isDirectory: true)
        let directory = try TemporaryDirectory(
            prefix: "spool-powercut", in: access(memory.path, W_OK) == 0 ? memory : nil)
        let storage = PowerCutStorage()
        var configuration = testConfiguration()
        configuration.storage = storage
        configuration.syncBatchBytes = Int64([4, 16, 64][generator.next(below: 3)] << 10)
        configuration.maximumUnsyncedBytes = configuration.syncBatchBytes * 4
        configuration.syncInterval = .milliseconds(1 + generator.next(below: 5))
        let sizes = (0..<2).map { _ in 8_000 + generator.next(below: 150_000) }
        // Two versions of each resource, as the origin serves them before and after a change.
        let versions = (0..<2).map { resource in
            (0..<2).map { version in randomBytes(sizes[resource], seed: seed << 8 | UInt64(resource << 4 | version)) }
        }
        func metadata(_ resource: Int, _ version: Int) -> EntryMetadata {
            EntryMetadata(
                validator: ResourceVersion(etag: "\"r\(resource)v\(version)\"", length: Int64(sizes[resource])))
        }
        do {
            let cache = try RangeCache(directory: directory.url, configuration: configuration)
            var entries: [CacheEntry] = []
            var version = [0, 0]
            var position = [0, 0]
            for resource in 0..<2 {
                let entry = try #require(try cache.entry(for: CacheKey(stable: "r\(resource)")))
                try entry.setMetadata(metadata(resource, 0))
                entries.append(entry)
            }
            let steps = 4 + generator.next(below: 60)
            let cut = generator.next(below: steps + 1)
            for _ in 0..<cut {
                let resource = generator.next(below: 2)
                let entry = entries[resource]
                switch generator.next(below: 24) {
                case 0:
                    version[resource] ^= 1  // the file changed on the origin
                    _ = try? entry.setMetadata(metadata(resource, version[resource]))
                case 1:
                    try? entry.flush()
                case 2, 3:
                    position[resource] = generator.next(below: sizes[resource])  // a seek
                case 4:
                    // Lets background syncs run, so cuts fall in and between them too (timing, not a wait).
                    usleep(UInt32(generator.next(below: 2000)))
                default:
                    let start = position[resource]
                    let end = min(sizes[resource], start + 1 + generator.next(below: 24 << 10))
                    guard start < end else { continue }
                    try? entry.write(versions[resource][version[resource]][start..<end], at: Int64(start))
                    position[resource] = end
                }
            }
            storage.cutPower()
            cache.close()  // its last syncs fail: the power is off
        }
        let lost = storage.restore(&generator)

        let cache = try RangeCache(directory: directory.url, configuration: configuration)
        defer { cache.close() }
        var served = 0
        for resource in 0..<2 {
            guard let entry = try cache.entry(for: CacheKey(stable: "r\(resource)"), create: false) else { continue }
            let etag = entry.metadata.validator.etag
            let version = (0..<2).first { metadata(resource, $0).validator.etag == etag }
            for range in entry.cachedRanges.ranges {
                let version = try #require(
                    version, "seed \(seed): bytes held under an unknown version \(etag ?? "none")")
                let bytes = readAll(entry, range)
                let expected = versions[resource][version][Int(range.lowerBound)..<Int(range.upperBound)]
                #expect(
                    bytes == expected, "seed \(seed): resource \(resource) v\(version) \(range) differs from the origin"
                )
                served += range.count
            }
        }
        return (served, lost)
    }
}
