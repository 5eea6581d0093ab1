import Fetcher
import Foundation
import MediaSource
import RangeCache
import TestSupport
import Testing

/// An origin whose Content-Length promises more than its body holds: the stream ends where the
/// body ended, at once, the real length is what the cache records, and nothing is fetched twice.
@Suite("An overstated Content-Length", .serialized)
struct OverstatedLengthTests {
    static let size = 300_000
    static let overstatement = 4096

    @Test(arguments: [false, true])
    func theStreamEndsWhereTheBodyEndedAndTheCacheRecordsThatLength(rangesSupported: Bool) throws {
        // Capped, so the reader is waiting across the real end when the body stops there.
        let faults = OriginFaults(
            bytesPerSecond: 2_000_000, ignoresRange: !rangesSupported, contentLengthError: Self.overstatement)
        let rig = try CacheRig(size: Self.size, faults: faults)
        let declared = Self.size + (rangesSupported ? 0 : Self.overstatement)
        do {
            let source = try rig.source()
            // Without ranges the open can only trust the head; with them Content-Range is right.
            #expect(try open(source).get().length == Int64(declared))
            #expect(firstDifference(try readInChunks(source, length: declared).get(), rig.body) == nil)
            guard case .endOfStream = source.read(at: Int64(Self.size), maxLength: 4096, wake: {}) else {
                Issue.record("no end of stream at the real end")
                return
            }
            // A retry at the short end would show in the origin's log (one request, below), or
            // never end (the read's deadline).
            source.close()
        }
        let entry = try rig.cache.entry(for: rig.url)
        #expect(entry.metadata.validator.length == Int64(Self.size), "the cache records the real length")
        #expect(entry.cachedRanges == RangeSet([0..<Int64(Self.size)]), "and claims no byte past it")
        entry.close()
        let log = try rig.origin.settledRequests()
        #expect(log.count == 1, "one request: \(log)")
        #expect(try rig.settledBytesSent() == Self.size, "every byte sent once")
        // A replay knows the end and needs no network.
        try rig.reopenCache()
        let again = try rig.source()
        defer { again.close() }
        #expect(try open(again).get().length == Int64(Self.size))
        #expect(firstDifference(try readFully(again, at: 0, length: Self.size).get(), rig.body) == nil)
        #expect(rig.origin.requests().count == 1)
    }
}
