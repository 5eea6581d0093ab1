import Foundation
import MediaSource
import RangeCache
import TestSupport
import Testing

@Suite("The cache's counters as a cached source plays", .serialized)
struct CacheCountersTests {
    @Test func aFirstPlayFromTheNetworkCountsMissesAndAReplayOnlyHits() throws {
        let rig = try CacheRig()
        let source = try rig.source()
        _ = try open(source).get()
        _ = try readFully(source, at: 0, length: rig.body.count).get()
        source.close()
        let first = rig.cache.stats
        #expect(first.bytesFromNetwork == Int64(rig.body.count))
        #expect(first.misses >= 1, "\(first)")

        let replay = try rig.source()
        defer { replay.close() }
        _ = try open(replay).get()
        _ = try readFully(replay, at: 0, length: rig.body.count).get()
        let second = rig.cache.stats
        #expect(second.misses == first.misses, "\(second)")
        #expect(second.hits > first.hits)
    }
}
