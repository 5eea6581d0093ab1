import Fetcher
import Foundation
import MediaSource
import RangeCache
import TestSupport
import Testing

/// A declared length of terabytes through the cache-backed source: nothing is sized by it.
/// The entry records the length, the planner fetches a read-ahead window, and the disk and the
/// memory hold only what was read.
@Suite("Cached byte source with a terabyte length", .serialized)
struct TerabyteCacheTests {
    @Test func aTerabyteLengthPlaysItsStartAndItsEndHoldingOnlyWhatWasRead() throws {
        let directory = try TemporaryDirectory(prefix: "spool-cache")
        let cache = try RangeCache(directory: directory.url)
        defer { cache.close() }
        let origin = try TerabyteOrigin()
        let residentBefore = residentBytes()
        let source = HTTPByteSource(
            url: origin.url, entry: try cache.entry(for: origin.url), fetcher: Fetcher(userAgent: "Spool/test"),
            readAhead: .init(threshold: 64 << 20, window: 2 << 20))
        defer { source.close() }
        let info = try open(source).get()
        #expect(info.length == TerabyteOrigin.length)
        let start = try readFully(source, at: 0, length: 1 << 20).get()
        #expect(start.count == 1 << 20)
        #expect(start.last == TerabyteOrigin.byte(at: (1 << 20) - 1))
        let end = try readFully(source, at: TerabyteOrigin.length - 100, length: 1000).get()
        #expect(end.count == 100)
        #expect(end.first == TerabyteOrigin.byte(at: TerabyteOrigin.length - 100))
        #expect(source.read(at: TerabyteOrigin.length, maxLength: 10) {} == .endOfStream)
        // The download stopped a window past the play head: a probe of the end does not move
        // it there, or the download from the start would run on towards the fifth terabyte.
        // (The probe's transfer reports its end just after its bytes: no event to await here.)
        let deadline = Date().addingTimeInterval(5)
        while source.isDownloading, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(!source.isDownloading, "still downloading 5 s after the reads")
        let onDisk = cache.size(of: RangeCache.defaultNamespace)
        // What arrived before the cancel took effect, at loopback speed: bounded, not sized by the header.
        #expect(onDisk < 128 << 20, "\(onDisk) bytes on disk")
        let grown = residentBytes() - residentBefore
        #expect(grown < 32 << 20, "resident memory grew \(grown >> 20) MiB")
    }
}
