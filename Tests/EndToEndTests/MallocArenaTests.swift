import Foundation
import TestSupport
import Testing

/// The daemon's many short-lived threads (GStreamer's streaming threads, Dispatch's workers)
/// share one malloc arena besides the main one. With glibc's default of 8 arenas per core,
/// threads allocating at the same moment each got an arena of their own, every arena kept
/// what was freed in it, and a soak (`bench/soak.sh`) measured anonymous memory growing
/// 14 MiB an hour after its warm-up while the live allocations stayed flat.
@Suite("malloc arenas of the daemon", .serialized)
struct MallocArenaTests {
    @Test func threadsOfEveryLayerShareOneArenaBesidesTheMainOne() async throws {
        let fixtures = try Fixtures.shared()
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        // Several formats and a track change: demuxer, decoder and sink threads come and go
        // while the D-Bus, fetcher and engine threads run.
        let tracks = [fixtures.fixture(.flac), fixtures.fixture(.oggVorbis), fixtures.fixture(.mp3CBR)]
        #expect(try await daemon.playerctl("open", tracks[0].url.absoluteString).status == 0)
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.3 }
        for track in tracks.dropFirst() {
            #expect(try await daemon.playerctl("open", track.url.absoluteString).status == 0)
            _ = try await daemon.waitForPlayerctl(["metadata", "title"]) { $0 == track.title }
            _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.3 }
        }
        let pid = try #require(daemon.process.programPID)
        let heaps = try MallocHeaps.threadArenaHeaps(of: pid)
        #expect(heaps.count <= 1, "malloc heaps of thread arenas: \(heaps)")
    }
}

/// glibc's thread arenas as /proc/PID/maps shows them: each arena's heap is a mapping of
/// 64 MiB aligned on 64 MiB (HEAP_MAX_SIZE on 64-bit), read-write up to what the arena uses
/// and inaccessible after it. The main arena lives in the brk heap and is not counted.
enum MallocHeaps {
    static let heapSize: UInt64 = 64 << 20

    /// The start addresses (hex) of the thread-arena heaps of `pid`.
    static func threadArenaHeaps(of pid: Int32) throws -> [String] {
        let maps = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)
        let regions: [(start: UInt64, end: UInt64, permissions: Substring)] = maps.split(separator: "\n").compactMap {
            line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 5, fields[4] == "0" else { return nil }  // anonymous: inode 0
            let bounds = fields[0].split(separator: "-")
            guard bounds.count == 2, let start = UInt64(bounds[0], radix: 16), let end = UInt64(bounds[1], radix: 16)
            else { return nil }
            return (start, end, fields[1])
        }
        var heaps: [String] = []
        for (index, region) in regions.enumerated()
        where region.start % heapSize == 0 && region.permissions.hasPrefix("rw") {
            let whole = region.end - region.start == heapSize
            let tail = index + 1 < regions.count ? regions[index + 1] : nil
            let reservedRest =
                tail.map {
                    $0.start == region.end && $0.end == region.start + heapSize && $0.permissions.hasPrefix("---")
                } ?? false
            if whole || reservedRest { heaps.append(String(region.start, radix: 16)) }
        }
        return heaps
    }
}
