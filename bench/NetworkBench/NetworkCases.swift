// The network cases (issue #12): open → first audio, open → advancing, seeks, chunked and
// Range-less origins, against a capped link.
import Foundation
import TestSupport

/// The cases `bench/network.sh` runs.
enum NetworkCases {
    static func run(_ runner: BenchRunner) async throws {
        let rig = runner.rig
        let long = try NetworkMedia.tone(.mp3CBR, seconds: 180)  // 3 min, 128 kbps CBR
        let thirty = try NetworkMedia.tone(.mp3CBR, seconds: 30, frequency: 494)
        let eightA = try NetworkMedia.tone(.mp3CBR, seconds: 8, frequency: 587)
        let eightB = try NetworkMedia.tone(.mp3CBR, seconds: 8, frequency: 659)
        let shortFormats: [(FixtureFormat, String)] = [
            (.mp3CBR, "MP3"), (.flac, "FLAC"), (.oggOpus, "Opus"), (.m4aMoovAtEnd, "M4A (moov last)"),
        ]
        var shorts: [(String, URL, Double)] = []
        for (format, label) in shortFormats {
            let seconds = try NetworkMedia.seconds(toFill: 460_000, format)
            shorts.append((label, try NetworkMedia.tone(format, seconds: seconds, frequency: 698), Double(seconds)))
        }

        let longSize = try Data(contentsOf: long).count
        let byteRate = Double(longSize) / 180  // the MP3's bytes per second of audio
        let conditions: [(String, Int?, Double)] = [
            ("3× bitrate", Int(3 * byteRate), 0), ("2× bitrate + 50 ms", Int(2 * byteRate), 0.05),
            ("unthrottled", nil, 0),
        ]
        for (label, rate, latency) in conditions {
            rig.origin.setLinkRate(rate)
            let faults = OriginFaults(firstByteLatency: latency)
            await runner.run([
                ("3-min MP3, \(label): open → first audio", "s", label == "3× bitrate" ? "" : ""),
                ("3-min MP3, \(label): open → advancing", "s", label == "3× bitrate" ? "≤ 0.25" : ""),
            ]) { probe, path in
                let url = try rig.serve(long, as: "\(path).mp3", faults: faults)
                let offset = rig.monitor!.offset
                let opened = try await probe.open(url)
                async let advancing = attempt { try await probe.awaitAdvancing(since: opened, timeout: 20) }
                let audio = await attempt {
                    try await probe.awaitFirstAudio(since: opened, offset: offset, timeout: 20)
                }
                return [audio, await advancing]
            }
            await runner.run([
                ("3-min MP3, \(label): SetPosition 80 % at 1 s → request at target", "ms", "≤ 50"),
                ("3-min MP3, \(label): SetPosition 80 % at 1 s → landed", "s", "≤ RTT + ~1"),
                ("3-min MP3, \(label): bytes sent twice (at landing + 1 s)", "KiB", "≤ 64"),
                ("3-min MP3, \(label): bytes beyond file size (at landing + 1 s)", "KiB", "0"),
            ]) { probe, path in
                let url = try rig.serve(long, as: "\(path).mp3", faults: faults)
                let opened = try await probe.open(url)
                let track = try await probe.currentTrack(timeout: 20)
                try await Task.sleep(until: opened + .seconds(1))
                let target = 0.8 * 180.0
                let downloadedBefore = OriginReport(rig.origin, path: "\(path).mp3", size: longSize).hasSent(
                    Int(0.8 * Double(longSize)))
                let seeked = try await probe.setPosition(target, track: track)
                let landed = await attempt { try await probe.awaitAdvancing(since: seeked, near: target, timeout: 20) }
                let targetByte = Int(0.8 * Double(longSize))
                let report = OriginReport(rig.origin, path: "\(path).mp3", size: longSize)
                let request: Outcome =
                    report.firstRequest(for: targetByte, after: seeked, slack: longSize / 20)
                    .map { .value(seconds(from: seeked, to: $0.arrived) * 1000) }
                    ?? (downloadedBefore
                        ? .note("cached")
                        : .failed("no request for byte \(targetByte) after the seek; origin: \(report)"))
                if case .value = landed { try await Task.sleep(for: .seconds(1)) }
                let settled = OriginReport(rig.origin, path: "\(path).mp3", size: longSize)
                return [
                    request, landed, .value(Double(settled.sentTwice) / 1024),
                    .value(Double(settled.beyondFileSize) / 1024),
                ]
            }
        }

        // 30-s MP3 at 2×.
        let thirtySize = try Data(contentsOf: thirty).count
        rig.origin.setLinkRate(Int(2 * Double(thirtySize) / 30))
        await runner.run([
            ("30-s MP3, 2× bitrate: open → first audio", "s", ""), ("30-s MP3, 2× bitrate: open → advancing", "s", ""),
        ]) { probe, path in
            let url = try rig.serve(thirty, as: "\(path).mp3")
            let offset = rig.monitor!.offset
            let opened = try await probe.open(url)
            async let advancing = attempt { try await probe.awaitAdvancing(since: opened, timeout: 20) }
            let audio = await attempt { try await probe.awaitFirstAudio(since: opened, offset: offset, timeout: 20) }
            return [audio, await advancing]
        }

        // 8-s MP3, chunked without Content-Length, 32 kB/s.
        rig.origin.setLinkRate(32_000)
        await runner.run([
            ("8-s MP3 chunked, no length, 32 kB/s: open → first audio", "s", ""),
            ("8-s MP3 chunked, no length, 32 kB/s: open → end of track", "s", "≈ 8"),
        ]) { probe, path in
            let url = try rig.serve(eightA, as: "\(path).mp3", faults: OriginFaults(chunked: true))
            let offset = rig.monitor!.offset
            let opened = try await probe.open(url)
            let audio = await attempt { try await probe.awaitFirstAudio(since: opened, offset: offset, timeout: 20) }
            _ = try await probe.awaitAdvancing(since: opened, timeout: 20)
            let end = await attempt { try await probe.awaitStatus("Stopped", since: opened, timeout: 25) }
            return [audio, end]
        }

        // Short files at 40 kB/s.
        rig.origin.setLinkRate(40_000)
        for (label, file, _) in shorts {
            let size = try Data(contentsOf: file).count
            await runner.run([("\(label) \(size / 1000) kB, 40 kB/s: open → first audio", "s", "")]) { probe, path in
                let url = try rig.serve(file, as: "\(path).\(file.pathExtension)")
                let offset = rig.monitor!.offset
                let opened = try await probe.open(url)
                return [await attempt { try await probe.awaitFirstAudio(since: opened, offset: offset, timeout: 25) }]
            }
        }

        // No Range, the file fully cached: SetPosition → landed.
        rig.origin.setLinkRate(Int(3 * Double(thirtySize) / 30))
        await runner.run([
            ("no Range, 30-s MP3 fully cached (3×): SetPosition 50 % → landed", "s", ""),
            ("no Range, 30-s MP3 fully cached (3×): bytes requested after it", "KiB", "0"),
        ]) { probe, path in
            let url = try rig.serve(thirty, as: "\(path).mp3", faults: OriginFaults(ignoresRange: true))
            let opened = try await probe.open(url)
            _ = try await probe.awaitAdvancing(since: opened, timeout: 20)
            let deadline = ContinuousClock.now + .seconds(30)
            while OriginReport(rig.origin, path: "\(path).mp3", size: thirtySize).contiguousEnd < thirtySize {
                guard ContinuousClock.now < deadline else { throw RigError("the download never completed") }
                try await Task.sleep(for: .milliseconds(50))
            }
            let before = OriginReport(rig.origin, path: "\(path).mp3", size: thirtySize).sent
            let track = try await probe.currentTrack()
            let seeked = try await probe.setPosition(15, track: track)
            let landed = await attempt { try await probe.awaitAdvancing(since: seeked, near: 15, timeout: 20) }
            let after = OriginReport(rig.origin, path: "\(path).mp3", size: thirtySize).sent
            return [landed, .value(Double(after - before) / 1024)]
        }

        // No Range, chunked: end of track → next track starts.
        rig.origin.setLinkRate(Int(3 * Double(try Data(contentsOf: eightA).count) / 8))
        await runner.run([("no Range, chunked, two 8-s MP3s (3×): end of track → next advancing", "s", "≈ 0")]) {
            probe, path in
            let first = try rig.serve(
                eightA, as: "\(path)-a.mp3", faults: OriginFaults(ignoresRange: true, chunked: true))
            let second = try rig.serve(
                eightB, as: "\(path)-b.mp3", faults: OriginFaults(ignoresRange: true, chunked: true))
            let list = try rig.playlist([first, second], name: "\(path).m3u")
            let opened = try await probe.open(list)
            _ = try await probe.awaitAdvancing(since: opened, timeout: 20)
            return [
                await attempt { try await probe.awaitHandOver(from: "\(path)-a.mp3", to: "\(path)-b.mp3", timeout: 30) }
            ]
        }

    }
}
