import Basics
import Foundation
import RangeCache
import SQLiteKit
import TestSupport
import Testing

/// The index keeps each entry's freshness (RFC 9111) across restarts, and an index an older
/// Spool wrote (schema 1, without those columns) is taken over with every entry kept.
@Suite("Index schema and freshness")
struct IndexMigrationTests {
    private let url = URL(string: "http://127.0.0.1:9/a.mp3")!

    @Test func freshnessAndSelectingHeadersSurviveARestart() throws {
        let directory = try TemporaryDirectory(prefix: "spool-freshness")
        let until = Date(timeIntervalSince1970: 1_800_000_000.25)
        let freshness = Freshness(freshUntil: until, revalidatesEveryUse: false, mustRevalidate: true)
        do {
            let cache = try RangeCache(directory: directory.url)
            let entry = try cache.entry(for: url)
            _ = try entry.setMetadata(
                EntryMetadata(
                    url: url, validator: ResourceVersion(etag: "\"v1\"", length: 4), freshness: freshness,
                    selectingHeaders: "user-agent: Spool/1"))
            try entry.write(Data([1, 2, 3, 4]), at: 0)
            try entry.flush()
            entry.close()
            cache.close()
        }
        let cache = try RangeCache(directory: directory.url)
        let metadata = try cache.entry(for: url).metadata
        #expect(metadata.freshness == freshness)
        #expect(metadata.selectingHeaders == "user-agent: Spool/1")
    }

    /// Stores four bytes of version "v1" of `url` in a cache in `directory`, calls `more` with the
    /// entry, and closes the cache.
    private func cacheFourBytes(
        in directory: TemporaryDirectory, _ more: (CacheEntry) throws -> Void = { _ in }
    ) throws {
        let cache = try RangeCache(directory: directory.url)
        let entry = try cache.entry(for: url)
        _ = try entry.setMetadata(EntryMetadata(url: url, validator: ResourceVersion(etag: "\"v1\"", length: 4)))
        try entry.write(Data([1, 2, 3, 4]), at: 0)
        try more(entry)
        try entry.flush()
        entry.close()
        cache.close()
    }

    @Test func anIndexOfTheFirstSchemaIsMigratedWithItsEntries() throws {
        let directory = try TemporaryDirectory(prefix: "spool-migration")
        try cacheFourBytes(in: directory)
        // Back to what the first schema held.
        let path = directory.url.appendingPathComponent("index.sqlite").path
        do {
            let database = try SQLiteDatabase(path: path)
            for column in ["fresh_until", "revalidation", "selecting_headers", "sidecar_missing"] {
                try database.execute("ALTER TABLE entries DROP COLUMN \(column)")
            }
            try database.execute("PRAGMA user_version=1")
        }
        var readOnly = RangeCache.Configuration()
        readOnly.mode = .readOnly
        let reader = try RangeCache(directory: directory.url, configuration: readOnly)
        #expect(reader.entries().count == 1, "a reader reads the older index as it is")
        reader.close()
        let cache = try RangeCache(directory: directory.url)
        let entry = try cache.entry(for: url)
        #expect(entry.contiguousLength(from: 0) == 4)
        #expect(entry.metadata.freshness == .unknown)
        let later = Freshness(freshUntil: Date(timeIntervalSince1970: 1_800_000_000))
        var metadata = entry.metadata
        metadata.freshness = later
        _ = try entry.setMetadata(metadata)
        #expect(entry.metadata.freshness == later, "the migrated index stores freshness")
        #expect(try entry.markSidecarMissing(ofVersion: ResourceVersion(etag: "\"v1\"")))
        entry.close()
        cache.close()
        let reopened = try RangeCache(directory: directory.url)
        #expect(try reopened.entry(for: url).metadata.sidecarMissing, "and whether a sidecar is missing")
    }

    @Test func aMissingSidecarSurvivesARestart() throws {
        let directory = try TemporaryDirectory(prefix: "spool-sidecar")
        try cacheFourBytes(in: directory) { entry throws in
            let marked = try entry.markSidecarMissing(ofVersion: ResourceVersion(etag: "\"v1\"", length: 4))
            #expect(marked)
        }
        let cache = try RangeCache(directory: directory.url)
        #expect(cache.info(for: cache.key(for: url))?.metadata.sidecarMissing == true)
    }
}
