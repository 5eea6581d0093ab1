// HLS, as the HLS issue measured it: 40 s of AAC (128 kbit/s) in 4-s MPEG-TS segments made by
// hlssink2, on demand over a link at 3x its bitrate; and a live window of six 2-s segments
// sliding every 2 s. For spool and mpv alike: open → advancing, seeks (to a segment's start
// and deep into one), the segment bytes a replay fetches again, and for the live one the
// longest silence over 20 s and what the player wrote.
import Foundation
import TestSupport

/// The cases `NetworkBench hls` runs.
enum HLSCases {
    /// 3x the audio's 128 kbit/s.
    static let linkRate = 48_000

    static func run(_ runner: BenchRunner) async throws {
        let folder = try TemporaryDirectory(prefix: "spool-bench-hls")
        let (playlist, segments) = try await HLSMedia.make(in: folder.url, seconds: 40)
        let origin = runner.rig.origin
        origin.setLinkRate(linkRate)
        for segment in segments {
            origin.serve(
                OriginResource(
                    try Data(contentsOf: folder.url.appendingPathComponent(segment)), contentType: "video/mp2t",
                    headers: ["Cache-Control": "max-age=86400"]),
                at: "/vod/" + segment)
        }
        origin.serve(
            OriginResource(try Data(contentsOf: playlist), contentType: "application/vnd.apple.mpegurl"),
            at: "/vod/index.m3u8")
        await runner.run([
            ("HLS on demand: open → advancing", "s", "≤ 0.5"),
            ("HLS on demand: replay, segment bytes fetched again", "KB", "0"),
        ]) { probe, _ in
            let url = origin.url(for: "vod/index.m3u8")
            let opened = try await probe.open(url)
            let started = await attempt { try await probe.awaitAdvancing(since: opened, timeout: 20) }
            try await Task.sleep(for: .seconds(8))
            let before = origin.requests()
            let fetched = Set(before.filter { $0.path.hasSuffix(".ts") }.map(\.path))
            let replayed = try await probe.open(url)
            _ = try? await probe.awaitAdvancing(since: replayed, timeout: 20)
            try await Task.sleep(for: .seconds(5))
            let again = origin.requests().dropFirst(before.count).filter { fetched.contains($0.path) }
            return [started, .value(Double(again.map(\.bodyBytesSent).reduce(0, +)) / 1000)]
        }

        await runner.run([
            ("HLS on demand: seek to 80 % → advancing at the target", "s", "≤ 0.3"),
            ("HLS on demand: seek 3.2 s into a segment not fetched → advancing at the target", "s", "≤ 0.5"),
        ]) { probe, _ in
            let opened = try await probe.open(origin.url(for: "vod/index.m3u8"))
            _ = try await probe.awaitAdvancing(since: opened, timeout: 20)
            let track = try await probe.currentTrack()
            let target = 0.8 * (track.length ?? 40)
            let asked = try await probe.setPosition(target, track: track)
            let landed = await attempt {
                try await probe.awaitAdvancing(since: asked, near: target, tolerance: 0.5, timeout: 20)
            }
            // 80 % is the start of a segment; 23.2 s is 3.2 s into the sixth, never fetched.
            let deepTarget = 23.2
            let deepAsked = try await probe.setPosition(deepTarget, track: track)
            let deep = await attempt {
                try await probe.awaitAdvancing(since: deepAsked, near: deepTarget, tolerance: 0.5, timeout: 20)
            }
            return [landed, deep]
        }

        let live = try TemporaryDirectory(prefix: "spool-bench-hls-live")
        let (_, liveSegments) = try await HLSMedia.make(in: live.url, seconds: 120, targetDuration: 2)
        await runner.run([
            ("HLS live: open → advancing", "s", "≤ 0.3"),
            ("HLS live: longest silence over 20 s of a sliding window", "s", "0"),
            ("HLS live: written to the player's cache and state over 20 s", "KiB", "≤ 64"),
        ]) { probe, _ in
            let sliding = try HLSMedia.serveLive(liveSegments, from: live.url, on: origin)
            defer { sliding.cancel() }
            let monitor = runner.rig.monitor!
            let folders = ["cache", "state"].map { probe.player.home.file($0) }
            let before = folders.map(RadioCases.bytes(under:)).reduce(0, +)
            let offset = monitor.offset
            let opened = try await probe.open(origin.url(for: "live.m3u8"))
            let started = await attempt { try await probe.awaitAdvancing(since: opened, timeout: 20) }
            _ = try await monitor.firstSound(after: offset, since: opened, timeout: 10)
            let heard = monitor.offset
            try await Task.sleep(for: .seconds(20))
            let gap = await attempt { try await RadioCases.longestSilence(monitor, after: heard) }
            let written = folders.map(RadioCases.bytes(under:)).reduce(0, +) - before
            return [started, gap, .value(Double(max(0, written)) / 1024)]
        }
    }
}
