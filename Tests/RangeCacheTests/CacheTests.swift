import Basics
import Foundation
import TestSupport
import Testing

@testable import RangeCache

@Suite struct CacheTests {
    @Test func bytesWrittenAtOffsetsReadBackExactlyAndSurviveReopening() throws {
        let directory = try TemporaryDirectory(prefix: "spool-cache")
        let source = randomBytes(3 << 20)
        do {
            let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
            let entry = try cache.entry(for: CacheKey(stable: "a"))!
            try entry.write(source[1_000_000..<2_000_000], at: 1_000_000)
            try entry.write(source[0..<500_000], at: 0)
            try entry.write(source[2_500_000...], at: 2_500_000)
            #expect(entry.cachedRanges.ranges == [0..<500_000, 1_000_000..<2_000_000, 2_500_000..<3_145_728])
            #expect(entry.missing(in: 400_000..<1_200_000) == [500_000..<1_000_000])
            #expect(entry.contiguousLength(from: 1_500_000) == 500_000)
            #expect(entry.read(at: 600_000, maxLength: 10) == nil)
            let middle = try #require(readAll(entry, 1_000_000..<2_000_000))
            #expect(
                firstDifference(middle, source[1_000_000..<2_000_000]) == nil,
                "\(describeDifference(middle, source[1_000_000..<2_000_000]))")
            try entry.flush()
            #expect(entry.durableRanges == entry.cachedRanges)
            entry.close()
            cache.close()
        }
        let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
        let entry = try #require(try cache.entry(for: CacheKey(stable: "a"), create: false))
        #expect(entry.durableRanges.count == 500_000 + 1_000_000 + Int64(source.count - 2_500_000))
        let tail = try #require(readAll(entry, 2_500_000..<Int64(source.count)))
        #expect(firstDifference(tail, source[2_500_000...]) == nil, "\(describeDifference(tail, source[2_500_000...]))")
        let stats = cache.stats
        #expect(stats.hits >= 1 && stats.bytesServedFromCache == Int64(tail.count))
        #expect(stats.entries == 1 && stats.bytes >= 2_000_000, "disk usage counts allocated blocks")
        #expect(stats.bytes < Int64(source.count), "holes are not counted")
    }

    @Test func aBatchIsCommittedBySizeAndAPartialOneByTime() async throws {
        let directory = try TemporaryDirectory(prefix: "spool-cache")
        var configuration = testConfiguration()
        configuration.syncBatchBytes = 64 << 10
        configuration.syncInterval = .milliseconds(50)
        let cache = try RangeCache(directory: directory.url, configuration: configuration)
        let entry = try cache.entry(for: CacheKey(stable: "b"))!
        try entry.write(randomBytes(100 << 10), at: 0)
        #expect(
            await eventually(timeout: 5) { entry.durableRanges.contains(0..<(100 << 10)) }, "a full batch is committed")
        try entry.write(randomBytes(100), at: 100 << 10)
        #expect(entry.cachedRanges.contains(0..<((100 << 10) + 100)), "written bytes are readable at once")
        #expect(
            await eventually(timeout: 5) { entry.durableRanges.count == (100 << 10) + 100 },
            "a partial batch is committed within the interval")
    }

    @Test func aNewValidatorEmptiesTheEntryAndTheSameOneKeepsIt() throws {
        let directory = try TemporaryDirectory(prefix: "spool-cache")
        let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
        let entry = try cache.entry(for: CacheKey(stable: "v"))!
        let first = EntryMetadata(validator: ResourceVersion(etag: "\"1\"", length: 1000), contentType: "audio/mpeg")
        #expect(try entry.setMetadata(first) == false)
        try entry.write(randomBytes(1000), at: 0)
        #expect(
            try entry.setMetadata(
                EntryMetadata(validator: ResourceVersion(etag: "\"1\"", length: 1000), acceptsRanges: true)) == false)
        #expect(entry.cachedRanges.count == 1000)
        #expect(try entry.setMetadata(EntryMetadata(validator: ResourceVersion(etag: "\"2\"", length: 1000))) == true)
        #expect(entry.cachedRanges.isEmpty && entry.durableRanges.isEmpty)
        #expect(entry.read(at: 0, maxLength: 10) == nil)
        #expect(entry.metadata.validator.etag == "\"2\"")
        let fresh = randomBytes(1000, seed: 9)
        try entry.write(fresh, at: 0)
        #expect(readAll(entry, 0..<1000) == fresh)
        entry.markDecodeError()
        #expect(entry.cachedRanges.isEmpty, "a decode error drops the cached bytes")
    }

    @Test func emptyMetadataEmptiesAnEntryWhoseOriginNamedNoVersion() throws {
        let directory = try TemporaryDirectory(prefix: "spool-cache")
        let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
        let url = URL(string: "https://example.org/no-validators.mp3")!
        for length in [nil, Int64(1000)] {
            let entry = try cache.entry(for: url)
            // Neither ETag nor Last-Modified; the length known or not (a chunked body).
            #expect(try entry.setMetadata(EntryMetadata(url: url, validator: ResourceVersion(length: length))) == false)
            try entry.write(randomBytes(1000), at: 0)
            #expect(
                try entry.setMetadata(
                    EntryMetadata(url: url, validator: ResourceVersion(length: length), acceptsRanges: false)) == false,
                "the same facts again keep the bytes")
            #expect(entry.cachedRanges.count == 1000)
            #expect(try entry.setMetadata(EntryMetadata()) == true, "length \(String(describing: length))")
            #expect(entry.cachedRanges.isEmpty && entry.durableRanges.isEmpty)
            #expect(entry.read(at: 0, maxLength: 10) == nil)
            #expect(entry.metadata == EntryMetadata())
            entry.close()
        }
    }

    @Test func aCorrectedLengthKeepsTheVersionAndTheBytesBeforeIt() throws {
        let directory = try TemporaryDirectory(prefix: "spool-cache")
        let url = URL(string: "https://example.org/overstated.mp3")!
        let bytes = randomBytes(1000)
        do {
            let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
            let entry = try cache.entry(for: url)
            try entry.setMetadata(
                EntryMetadata(url: url, validator: ResourceVersion(etag: "\"1\"", length: 1500), acceptsRanges: false))
            try entry.write(bytes, at: 0)
            try entry.correctLength(1000)
            #expect(entry.metadata.validator == ResourceVersion(etag: "\"1\"", length: 1000))
            #expect(entry.metadata.acceptsRanges == false)
            #expect(readAll(entry, 0..<1000) == bytes)
            entry.close()
            cache.close()
        }
        // Durable: a restarted daemon knows the entry is complete.
        let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
        let entry = try cache.entry(for: url)
        #expect(entry.metadata.validator.length == 1000)
        #expect(cache.entries().first?.isComplete == true)
        // A byte held past a corrected end cannot be of this version: the entry is emptied.
        try entry.correctLength(600)
        #expect(entry.cachedRanges.isEmpty)
        #expect(entry.metadata.validator == ResourceVersion(etag: "\"1\"", length: 600))
    }

    @Test func aDirectoryTheUserChoseKeepsItsModeAndTheOnesSpoolMakesArePrivate() throws {
        let directory = try TemporaryDirectory(prefix: "spool-cache")
        let chosen = directory.url.appendingPathComponent("shared")
        try FileManager.default.createDirectory(at: chosen, withIntermediateDirectories: false)
        chmod(chosen.path, 0o755)
        let nested = directory.url.appendingPathComponent("made/by/spool")
        func mode(_ path: String) throws -> Int {
            try (FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
        }
        for cacheDirectory in [chosen, nested] {
            let cache = try RangeCache(directory: cacheDirectory, configuration: testConfiguration())
            cache.close()
        }
        #expect(try mode(chosen.path) == 0o755, "an existing directory keeps its mode")
        #expect(try mode(chosen.appendingPathComponent("data").path) == 0o700)
        for made in ["made", "made/by", "made/by/spool", "made/by/spool/data"] {
            #expect(try mode(directory.url.appendingPathComponent(made).path) == 0o700, "\(made)")
        }
    }

    @Test func filesArePrivateAndTheIndexHoldsNoTokens() throws {
        let directory = try TemporaryDirectory(prefix: "spool-cache")
        let cacheDirectory = directory.url.appendingPathComponent("spool")
        let url = URL(string: "https://cdn.example/secret-track.mp3?X-Amz-Signature=SIGNATURE123&token=TOKEN456")!
        do {
            let cache = try RangeCache(directory: cacheDirectory, configuration: testConfiguration())
            let entry = try cache.entry(for: url)
            try entry.setMetadata(EntryMetadata(url: url, validator: ResourceVersion(etag: "\"e\"")))
            try entry.write(randomBytes(10_000), at: 0)
            try entry.flush()
            #expect(entry.metadata.url?.absoluteString == "https://cdn.example/secret-track.mp3")
            entry.close()
            cache.close()
        }
        func mode(_ path: String) throws -> Int {
            try (FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
        }
        #expect(try mode(cacheDirectory.path) == 0o700)
        #expect(try mode(cacheDirectory.appendingPathComponent("data").path) == 0o700)
        var everything = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: cacheDirectory.path) where name != "data" {
            #expect(try mode(cacheDirectory.appendingPathComponent(name).path) == 0o600, "\(name)")
            everything.append(try Data(contentsOf: cacheDirectory.appendingPathComponent(name)))
        }
        let files = dataFiles(cacheDirectory)
        #expect(files.count == 1)
        for file in files {
            #expect(try mode(file.path) == 0o600)
            #expect(file.lastPathComponent.allSatisfy { "0123456789abcdef-".contains($0) }, "\(file.lastPathComponent)")
        }
        let text = String(decoding: everything, as: UTF8.self)
        #expect(text.contains("secret-track.mp3"), "the index records the URL")
        #expect(!text.contains("SIGNATURE123") && !text.contains("TOKEN456"), "but never its tokens")
    }

    @Test func namespacesAreListedSizedAndClearedOnTheirOwn() throws {
        let directory = try TemporaryDirectory(prefix: "spool-cache")
        let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
        for (namespace, name) in [("alice", "1"), ("alice", "2"), ("bob", "1")] {
            let entry = try cache.entry(for: CacheKey(stable: name), namespace: namespace)!
            try entry.write(randomBytes(50_000), at: 0)
            entry.close()
        }
        #expect(cache.namespaces() == ["alice", "bob"])
        #expect(cache.entries(in: "alice").count == 2)
        #expect(cache.size(of: "alice") >= 100_000 && cache.size(of: "bob") >= 50_000)
        #expect(cache.stats.namespaces["alice"]?.entries == 2)
        try cache.clear(namespace: "alice")
        #expect(cache.entries(in: "alice").isEmpty && cache.size(of: "alice") == 0)
        #expect(cache.info(for: CacheKey(stable: "1"), namespace: "bob")?.durableRanges.count == 50_000)
        #expect(dataFiles(directory.url).count == 1)
    }

    @Test func evictionRemovesTheLeastRecentlyUsedButNeverPinnedOrOpenEntries() throws {
        let directory = try TemporaryDirectory(prefix: "spool-cache")
        let cache = try RangeCache(directory: directory.url, configuration: testConfiguration(budget: 1 << 40))
        for name in ["old", "pinned", "middle", "open", "new"] {
            let entry = try cache.entry(for: CacheKey(stable: name))!
            try entry.write(randomBytes(100_000), at: 0)
            entry.close()
        }
        cache.pin(CacheKey(stable: "pinned"))
        let open = try cache.entry(for: CacheKey(stable: "open"))!
        let touched = try cache.entry(for: CacheKey(stable: "old"))!
        #expect(touched.read(at: 0, maxLength: 1) != nil)  // "old" is now the most recently used
        touched.close()
        let perEntry = cache.stats.bytes / 5
        cache.close()
        open.close()

        // Reopen with a budget for three entries, the same pin and an open handle.
        let small = try RangeCache(directory: directory.url, configuration: testConfiguration(budget: perEntry * 3))
        small.pin(CacheKey(stable: "pinned"))
        let held = try small.entry(for: CacheKey(stable: "open"))!
        #expect(small.evict() == 2)
        let left = Set(small.entries().map(\.key.value))
        #expect(left == ["pinned", "open", "old"], "\(left)")
        #expect(small.stats.evictions == 2)
        held.close()
        small.unpin(CacheKey(stable: "pinned"))
        #expect(small.evict() == 0, "within budget now")
    }

    @Test func aSecondWriterIsRefusedWhileReadersMayOpen() throws {
        let directory = try TemporaryDirectory(prefix: "spool-cache")
        let cache = try RangeCache(directory: directory.url, configuration: testConfiguration())
        let entry = try cache.entry(for: CacheKey(stable: "r"))!
        try entry.write(randomBytes(1000), at: 0)
        try entry.flush()
        #expect(throws: CacheError.inUseByAnotherProcess(directory: directory.url.path, pid: getpid())) {
            _ = try RangeCache(directory: directory.url, configuration: testConfiguration())
        }
        let reader = try RangeCache(directory: directory.url, configuration: testConfiguration(mode: .readOnly))
        let view = try #require(try reader.entry(for: CacheKey(stable: "r"), create: false))
        #expect(readAll(view, 0..<1000) == randomBytes(1000))
        #expect(throws: CacheError.readOnly) { try view.write(Data([1]), at: 0) }
    }
}
