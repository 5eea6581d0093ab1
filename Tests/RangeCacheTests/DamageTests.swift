import Foundation
import TestSupport
import Testing

@testable import RangeCache

/// A cache directory holding `count` entries "0", "1", … of 20,000 bytes each
/// (entry i holds randomBytes(20_000, seed: i)), closed.
private func populatedCache(_ count: Int) throws -> TemporaryDirectory {
    let directory = try TemporaryDirectory(prefix: "spool-cache-damage")
    let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
    for index in 0..<count {
        let entry = try cache.entry(for: CacheKey(stable: "\(index)"))!
        try entry.write(randomBytes(20_000, seed: UInt64(index)), at: 0)
        entry.close()
    }
    cache.close()
    return directory
}

/// The data file of entry `name`, found through the index.
private func dataFile(of name: String, in directory: URL) throws -> URL {
    let reader = try RangeCache(directory: directory, configuration: testConfiguration(mode: .readOnly))
    defer { reader.close() }
    let state = reader.state.withLock { state in state.records.values.first { $0.key == name }?.fileName }
    return directory.appendingPathComponent("data").appendingPathComponent(try #require(state))
}

/// Every byte the cache claims for entries "0"… equals what was written; returns how many entries survive.
private func verifyClaims(_ cache: RangeCache) throws -> Int {
    var survivors = 0
    for info in cache.entries() {
        guard let index = UInt64(info.key.value) else { continue }
        let entry = try #require(try cache.entry(for: info.key, create: false))
        defer { entry.close() }
        let expected = randomBytes(20_000, seed: index)
        for range in entry.cachedRanges.ranges {
            let bytes = try #require(readAll(entry, range))
            let want = expected[Int(range.lowerBound)..<Int(range.upperBound)]
            #expect(firstDifference(bytes, want) == nil, "entry \(index): \(describeDifference(bytes, want))")
        }
        if !entry.cachedRanges.isEmpty { survivors += 1 }
    }
    return survivors
}

@Suite struct DamageTests {
    @Test func aGarbageIndexIsReplacedAndTheCacheKeepsWorking() throws {
        let directory = try populatedCache(5)
        try randomBytes(64 << 10, seed: 77).write(to: directory.file("index.sqlite"))
        let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
        try cache.flush()
        #expect(cache.stats.entries == 0 && cache.stats.indexRebuilds == 1)
        #expect(dataFiles(directory.url).isEmpty, "files no index names are removed")
        let entry = try cache.entry(for: CacheKey(stable: "0"))!
        try entry.write(randomBytes(20_000, seed: 0), at: 0)
        entry.close()
        cache.close()
        let reopened = try RangeCache(directory: directory.url, configuration: testConfiguration())
        #expect(try verifyClaims(reopened) == 1)
    }

    @Test func aTruncatedIndexIsDetectedAndNoClaimIsWrong() throws {
        let directory = try populatedCache(400)
        let path = directory.file("index.sqlite").path
        let size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(truncate(path, off_t(size / 2)) == 0)
        let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
        try cache.flush()  // waits for the background page check
        let stats = cache.stats
        #expect(stats.indexRebuilds == 1, "the damage is noticed")
        #expect(stats.entries < 400 || stats.indexRebuilds == 1)
        let survivors = try verifyClaims(cache)
        #expect(survivors == cache.stats.entries)
        let entry = try cache.entry(for: CacheKey(stable: "new"))!
        try entry.write(Data([1, 2, 3]), at: 0)
        try entry.flush()
        #expect(entry.durableRanges.count == 3)
    }

    @Test func aMissingDataFileDropsOnlyItsEntry() throws {
        let directory = try populatedCache(3)
        try FileManager.default.removeItem(at: try dataFile(of: "1", in: directory.url))
        let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
        try cache.flush()  // waits for the consistency check that follows opening
        #expect(cache.info(for: CacheKey(stable: "1")) == nil)
        #expect(cache.stats.damagedEntries == 1 && cache.stats.entries == 2)
        #expect(try verifyClaims(cache) == 2)
    }

    @Test func aTruncatedDataFileEmptiesItsEntryBeforeAnyByteIsServed() throws {
        let directory = try populatedCache(3)
        let file = try dataFile(of: "2", in: directory.url)
        #expect(truncate(file.path, 4096 + 10_000) == 0)
        let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
        let entry = try #require(try cache.entry(for: CacheKey(stable: "2"), create: false))
        #expect(entry.read(at: 0, maxLength: 100) == nil)
        #expect(entry.cachedRanges.isEmpty && cache.stats.damagedEntries == 1)
        try entry.write(randomBytes(20_000, seed: 2), at: 0)
        entry.close()
        #expect(try verifyClaims(cache) == 3)
    }

    @Test func aForeignDataFileIsRecognisedByItsHeader() throws {
        let directory = try populatedCache(3)
        let victim = try dataFile(of: "0", in: directory.url)
        let other = try dataFile(of: "1", in: directory.url)
        try FileManager.default.removeItem(at: victim)
        try FileManager.default.copyItem(at: other, to: victim)  // right size, wrong file
        let strangerVictim = try dataFile(of: "2", in: directory.url)
        try randomBytes(30_000, seed: 5).write(to: strangerVictim)
        let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
        #expect(try verifyClaims(cache) == 1)
        #expect(cache.stats.damagedEntries == 2)
    }

    @Test func aDataFileTruncatedWhileOpenIsNeverServedWrong() throws {
        let directory = try populatedCache(1)
        let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
        let entry = try #require(try cache.entry(for: CacheKey(stable: "0"), create: false))
        #expect(entry.read(at: 0, maxLength: 10) != nil)
        #expect(truncate(try dataFile(of: "0", in: directory.url).path, 4096 + 5_000) == 0)
        #expect(entry.read(at: 10_000, maxLength: 100) == nil)
        #expect(entry.cachedRanges.isEmpty)
    }
}
