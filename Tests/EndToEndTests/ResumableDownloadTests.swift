import DBusKit
import Foundation
import TestSupport
import Testing

@Suite("Resumable downloads, end to end", .serialized)
struct ResumableDownloadTests {
    @Test func afterKill9MidDownloadTheDownloadContinuesFromTheBytesOnDisk() async throws {
        // Uncompressed, so the download takes seconds: 30 s of WAV is 5.3 MB.
        let media = try TemporaryDirectory()
        let made = try runCommand(
            "gst-launch-1.0",
            [
                "-q", "audiotestsrc", "num-buffers=\(30 * 44_100 / 1024)", "freq=300", "!", "audioconvert", "!",
                "wavenc", "!", "filesink", "location=\(media.file("long.wav").path)",
            ])
        #expect(made.status == 0)
        let long = try Data(contentsOf: media.file("long.wav"))
        let origin = try FaultOrigin()
        origin.serve(
            OriginResource(long, etag: "\"v1\""), at: "/long.wav", faults: OriginFaults(bytesPerSecond: 600_000))
        let home = try TemporaryDirectory(prefix: "spool-home")
        let bus = try PrivateBus()
        let url = origin.url(for: "/long.wav").absoluteString
        do {
            let daemon = try RunningDaemon(bus: bus, home: home.url)
            try await daemon.waitUntilReady()
            #expect(try await daemon.playerctl("open", url).status == 0)
            _ = try await daemon.waitForPlayerctl(["position"], timeout: 20) { (Double($0) ?? 0) > 1.5 }
            daemon.process.send(SIGKILL)
            #expect(await daemon.process.waitForExit(timeout: 10) != nil)
        }
        // Every response of the killed daemon (GStreamer's type finders also read the middle and
        // the end of the file, so its download is several ranges, not one).
        let before = try origin.settledRequests().filter { $0.path == "/long.wav" }  // not its lyrics
        let sentBefore = sentRanges(before)
        #expect(!sentBefore.isEmpty && covered(sentBefore) < long.count)
        origin.setFaults(OriginFaults(), for: "/long.wav")
        origin.clearRequests()

        let daemon = try RunningDaemon(bus: bus, home: home.url)
        try await daemon.waitUntilReady()
        #expect(try await daemon.playerctl("play").status == 0)  // the restored session
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
        var first: ServedRequest?
        _ = await eventually(timeout: 5) {
            first = origin.requests().first { $0.path == "/long.wav" }
            return first != nil
        }
        let resumed = try #require(first)
        let start = Int(resumed.range?.dropFirst("bytes=".count).split(separator: "-").first ?? "") ?? 0
        #expect(start > 0, "the download restarted from 0: \(resumed)")
        #expect(resumed.ifRange == "\"v1\"", "\(resumed)")
        #expect(resumed.status == 206)
        // Once the file is complete again, only bytes lost with the kill (at most the unsynced
        // batches) were fetched a second time.
        let after = try await awaitValue("the whole file sent", timeout: 20, interval: .milliseconds(50)) {
            sentRanges(try origin.settledRequests().filter { $0.path == "/long.wav" })
        } until: {
            covered(sentBefore + $0) >= long.count
        }
        #expect(covered(sentBefore + after) == long.count, "the download did not complete")
        let twice = covered(sentBefore) + covered(after) - covered(sentBefore + after)
        #expect(twice <= 2 * (256 + 96) * 1024, "re-fetched \(twice) bytes; before: \(before), after: \(after)")
    }

    /// The byte ranges a log's responses carried.
    private func sentRanges(_ log: [ServedRequest]) -> [Range<Int>] {
        log.compactMap { request in
            guard request.bodyBytesSent > 0 else { return nil }
            let first =
                request.range.flatMap { Int($0.dropFirst("bytes=".count).split(separator: "-").first ?? "") } ?? 0
            return first..<(first + request.bodyBytesSent)
        }
    }

    /// How many distinct bytes `ranges` cover together.
    private func covered(_ ranges: [Range<Int>]) -> Int {
        var total = 0
        var end = Int.min
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            total += max(0, range.upperBound - max(range.lowerBound, end))
            end = max(end, range.upperBound)
        }
        return total
    }
}
