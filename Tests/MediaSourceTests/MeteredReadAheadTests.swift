import Fetcher
import Foundation
import MediaSource
import RangeCache
import TestSupport
import Testing

private let now = ContinuousClock.now
private let mb: Int64 = 1_000_000
private typealias Policy = HTTPByteSource.ReadAheadPolicy

@Suite("Read-ahead on a metered network")
struct MeteredReadAheadTests {
    /// (metered, byte rate, expected threshold, expected window) for 256 MB / 32 MB / 2 min.
    @Test(
        arguments: [
            (false, nil, 256 * mb, 32 * mb),  // unmetered: the large-file rule
            (false, 16_000.0, 256 * mb, 32 * mb),
            (true, 16_000.0, 0, 1_920_000),  // 2 min at 128 kbps, for every size
            (true, nil, 0, 4_800_000),  // rate unknown: 320 kbps assumed
            (true, 0.0, 0, 4_800_000),
            (true, 1_000_000.0, 0, 32 * mb),  // 2 min of hi-res would be 120 MB: the large-file window bounds it
        ] as [(Bool, Double?, Int64, Int64)])
    func theMeteredWindowIsMinutesOfAudioForEverySize(metered: Bool, rate: Double?, threshold: Int64, window: Int64) {
        let policy = Policy(threshold: 256 * mb, window: 32 * mb, meteredWindow: .seconds(120))
        let limits = policy.limits(metered: metered, byteRate: rate)
        #expect(limits.threshold == threshold && limits.window == window, "\(limits)")
    }

    @Test func withoutAMeteredWindowMeteredChangesNothing() {
        let policy = Policy(threshold: 256 * mb, window: 32 * mb)
        let limits = policy.limits(metered: true, byteRate: 16_000)
        #expect(limits.threshold == 256 * mb && limits.window == 32 * mb)
    }

    /// A 10 MB resource that downloads whole, then a metered window of 1 MB: the running download
    /// stops at its next bytes past the window, and once the window goes, the download goes on
    /// from the first missing byte to the end.
    @Test func narrowingStopsTheDownloadAtTheWindowAndWideningResumesItAtOnce() {
        var planner = DownloadPlanner(readAhead: (threshold: 256 * mb, window: 32 * mb))
        planner.setResource(.init(length: 10 * mb, rangesSupported: true))
        let opened = planner.open(cached: RangeSet())
        #expect(opened.contains { if case .start(_, 0, nil, _) = $0 { true } else { false } }, "whole: no end")
        let main = planner.transfers[0].key
        var held = RangeSet([0..<200_000])
        #expect(planner.read(.init(offset: 0, maxLength: 65_536), cached: held, now: now).0 == .serve(65_536))

        #expect(
            planner.setReadAhead((threshold: 0, window: mb), cached: held).isEmpty,
            "the running one decides at its next bytes")
        held.insert(0..<900_000)
        #expect(planner.received(main, upTo: 900_000, cached: held).actions.isEmpty, "within the window")
        held.insert(0..<1_100_000)
        let past = planner.received(main, upTo: 1_100_000, cached: held)
        #expect(past.actions.contains(.cancel(key: main)), "past the play head's window: \(past.actions)")
        #expect(planner.transfers.isEmpty)

        let widened = planner.setReadAhead((threshold: 256 * mb, window: 32 * mb), cached: held)
        #expect(widened.contains { if case .start(_, 1_100_000, nil, _) = $0 { true } else { false } }, "\(widened)")
    }

    @Test func theDiskFullBoundOutlastsTheMeteredWindow() {
        var planner = DownloadPlanner(readAhead: (threshold: 256 * mb, window: 32 * mb))
        planner.setResource(.init(length: 10 * mb, rangesSupported: true))
        planner.limitToWindow(mb / 2)
        _ = planner.setReadAhead((threshold: 0, window: 2 * mb), cached: RangeSet())
        #expect(planner.readAhead?.window == mb / 2)
        _ = planner.setReadAhead((threshold: 256 * mb, window: 32 * mb), cached: RangeSet())
        #expect(
            planner.readAhead?.threshold == 0 && planner.readAhead?.window == mb / 2, "the disk still refuses bytes")
    }

    /// Through a real fetcher and origin: metered before it opens, a source fetches a second of
    /// audio (at the rate it was told) and stops; unmetered, the rest comes at once, each byte once.
    @Test func aMeteredSourceStopsAtItsWindowAndGoesOnWhenTheNetworkIsNotMetered() async throws {
        let rig = try CacheRig(size: 4_000_000, faults: OriginFaults(bytesPerSecond: 2_000_000))
        let source = try rig.source(readAhead: Policy(threshold: 256 * mb, window: 32 * mb, meteredWindow: .seconds(1)))
        source.setByteRate(200_000)
        source.setMetered(true)
        _ = try open(source).get()
        _ = try readFully(source, at: 0, length: 16_384).get()
        let stopped = await eventually(timeout: 3) { rig.origin.requestsBegun == rig.origin.requests().count }
        let sent = rig.origin.requests().reduce(0) { $0 + $1.bodyBytesSent }
        #expect(stopped, "the download stops at the window; the whole body would take 2 s")
        #expect(sent < 600_000, "a 200 kB window (and what was in flight when it was cut): \(sent)")

        source.setMetered(false)
        let complete = await eventually(timeout: 10) {
            rig.origin.requests().reduce(0) { $0 + $1.bodyBytesSent } >= rig.body.count
        }
        #expect(complete, "\(rig.origin.requests())")
        #expect(rig.origin.requests().reduce(0) { $0 + $1.bodyBytesSent } <= rig.body.count + 256 * 1024)
        source.close()
    }
}

/// The memory-only source (no cache, or a full disk) on a metered network.
@Suite("A memory-only source on a metered network", .serialized)
struct MeteredMemoryTests {
    let fetcher = Fetcher(userAgent: "Spool/test")

    /// Metered, its download runs only the metered window of audio ahead of the reader (2 s at
    /// 16 kB/s: 32 kB), not its 1 MiB memory window; unmetered again, it goes on at once from
    /// where the bytes it holds end.
    @Test func itsDownloadStopsAtTheMeteredWindowAndGoesOnWhenItLifts() async throws {
        let origin = try FaultOrigin()
        origin.setLinkRate(200_000)
        let body = patternedBody(3 << 20)
        origin.serve(OriginResource(body), at: "/long.mp3")
        let source = HTTPByteSource(
            url: origin.url(for: "/long.mp3"), fetcher: fetcher,
            readAhead: Policy(threshold: 256 * mb, window: 32 * mb, meteredWindow: .seconds(2)),
            memoryWindow: MemoryWindow(capacity: 1 << 20))
        defer { source.close() }
        source.setByteRate(16_000)
        source.setMetered(true)
        _ = try open(source).get()
        let first = try readFully(source, at: 0, length: 4096).get()
        #expect(firstDifference(first, body.prefix(4096)) == nil)
        let stopped = await eventually(timeout: 10) { origin.transfers(of: "/long.mp3").first?.ended != nil }
        let sent = origin.transfers(of: "/long.mp3").first?.bodyBytesSent ?? 0
        #expect(stopped, "the download ran on: \(sent) bytes sent")
        #expect(sent <= 4096 + 32_000 + 64 << 10, "\(sent) bytes sent for a 32 kB metered window")

        source.setMetered(false)
        let resumed = await eventually(timeout: 5) { origin.transfers(of: "/long.mp3").count >= 2 }
        let second = origin.transfers(of: "/long.mp3").dropFirst().first
        #expect(resumed, "\(origin.transfers(of: "/long.mp3"))")
        #expect(
            second.map { $0.bodyOffset > 4096 + 16_000 && $0.bodyOffset <= sent } == true,
            "\(String(describing: second))")
        let more = try readFully(source, at: 4096, length: 200_000).get()
        #expect(firstDifference(more, body[4096..<204_096]) == nil)
    }
}
