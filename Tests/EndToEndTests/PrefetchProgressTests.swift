import DBusKit
import Foundation
import TestSupport
import Testing

@testable import spool

@Suite("A prefetch's progress", .serialized)
struct PrefetchProgressTests {
    @Test func prefetchesReportTheBytesWrittenNotOnlyTheSyncedBatches() async throws {
        let length = 1_200_000
        let origin = try FaultOrigin()
        origin.serve(
            OriginResource(patternedBody(length), etag: "\"p1\""), at: "/slow.mp3",
            faults: OriginFaults(bytesPerSecond: 400_000))
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let url = origin.url(for: "/slow.mp3").absoluteString
        _ = try await daemon.client.call(
            destination: busName, path: "/org/mpris/MediaPlayer2", interface: "org.spool.Spool1", method: "Prefetch",
            arguments: [.stringArray([url])])

        // What `spool cache prefetch` sees at its own pace.
        var seen: [Int64] = []
        for _ in 0..<300 {
            let fields =
                try await daemon.spoolProperty("Prefetches")?.arrayValues?.compactMap(\.stringVariantDictValue) ?? []
            let bytes = fields.first?["spool:cachedBytes"]?.int64Value ?? 0
            if seen.last != bytes { seen.append(bytes) }
            if fields.first?["spool:complete"]?.boolValue == true || bytes >= Int64(length) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(seen.last == Int64(length), "\(seen)")
        let steps = zip(seen.dropFirst(), seen).map { $0 - $1 }
        #expect(seen.count >= 6, "\(seen)")
        #expect((steps.max() ?? 0) <= Int64(length) * 15 / 100, "the progress jumped: \(seen)")
    }

    @Test func theRateIsMeasuredOverTheLastSeconds() {
        var rate = TransferRate(window: 3)
        #expect(rate.bytesPerSecond == nil)
        rate.add(bytes: 0, at: 0)
        #expect(rate.bytesPerSecond == nil)
        rate.add(bytes: 1000, at: 1)
        #expect(rate.bytesPerSecond == 1000)
        // A long stall then a burst: the samples older than the window no longer count.
        rate.add(bytes: 1000, at: 10)
        rate.add(bytes: 7000, at: 12)
        #expect(rate.bytesPerSecond == 3000)
    }

    @Test(
        arguments: [
            (0, 1000, nil, "[----------]   0% a.mp3  0 B of 1000 B"),
            (420, 1000, 100.0, "[####------]  42% a.mp3  420 B of 1000 B, 100 B/s, 0:06 left"),
            (1000, 1000, 100.0, "[##########] 100% a.mp3  1000 B"),
            (2_500_000, nil, 1_048_576.0, "[----------]    ? a.mp3  2.4 MiB, 1.0 MiB/s"),
            (999, 1000, 0.0, "[##########]  99% a.mp3  999 B of 1000 B"),
        ] as [(Int64, Int64?, Double?, String)])
    func aLineShowsBytesRateAndTimeLeft(cached: Int64, length: Int64?, rate: Double?, line: String) {
        #expect(prefetchLine(name: "a.mp3", cached: cached, length: length, bytesPerSecond: rate, width: 10) == line)
    }
}
