// The start path (issue #26): a cold start, a replay after a restart, a fresh replay, and each
// format at 250 ms to first byte; each run STARTUP_RUNS times (3 by default), the median kept.
import Foundation
import TestSupport

/// The cases `bench/startup` runs.
enum StartupCases {
    static func run(_ runner: BenchRunner) async throws {
        let rig = runner.rig
        let runs = Int(ProcessInfo.processInfo.environment["STARTUP_RUNS"] ?? "") ?? 3
        let thirty = try NetworkMedia.tone(.mp3CBR, seconds: 30, frequency: 494)
        let thirtySize = try Data(contentsOf: thirty).count

        rig.origin.setLinkRate(nil)
        // No player: what the sound server's own path costs a first sound, from a new process's
        // new stream to the recording of its monitor. Both columns measure the same thing.
        await runner.runEach(
            [("reference, no player: a new pacat stream of a raw tone → first sound", "s", "—")], runs: runs
        ) { _, path in
            [await attempt { try await firstSoundOfPacat(rig: rig, path: path) }]
        }
        await runner.run([("cold OpenUri, 30-s MP3, unthrottled: open → first audio", "s", "≤ 0.015")], runs: runs) {
            probe, path in
            let url = try rig.serve(thirty, as: "\(path).mp3")
            let offset = rig.monitor!.offset
            let opened = try await probe.open(url)
            return [await attempt { try await probe.awaitFirstAudio(since: opened, offset: offset, timeout: 20) }]
        }

        // The common case: the daemon has been running (a track played and was stopped), and
        // the listener opens another, uncached.
        await runner.run(
            [("OpenUri in a running daemon, 30-s MP3, unthrottled: open → first audio", "s", "≤ 0.015")], runs: runs
        ) { probe, path in
            let before = try rig.serve(thirty, as: "\(path)-before.mp3")
            _ = try await probe.awaitAdvancing(since: try await probe.open(before), timeout: 20)
            let stopped = rig.monitor!.offset
            try await probe.remote.stop()
            _ = try await probe.awaitStatus("Stopped")
            // The stopped stream's last samples reach the recording after the call: first audio
            // is counted from where 50 ms of silence followed them.
            let offset = try await rig.monitor!.silence(after: stopped, lasting: 0.05, timeout: 10)
            let url = try rig.serve(thirty, as: "\(path).mp3")
            let opened = try await probe.open(url)
            return [await attempt { try await probe.awaitFirstAudio(since: opened, offset: offset, timeout: 20) }]
        }

        // A seek in a cached track, timed by the sound: 144 s of silence, then a tone; the seek
        // goes half a second into the tone (a byte seek may land a little early), so the first
        // sound after the call is where it landed. Polling Position instead would add its
        // interval twice (a read at the target, then one past it).
        let marked = try NetworkMedia.silenceThenTone(.mp3CBR, silent: 144, sounding: 36, frequency: 587)
        let markedSize = try Data(contentsOf: marked).count
        await runner.run(
            [("cached 3-min MP3: SetPosition 80 % → first audio there", "s", "≤ 0.010")], runs: runs
        ) { probe, path in
            let url = try rig.serve(marked, as: "\(path).mp3")
            _ = try await probe.awaitAdvancing(since: try await probe.open(url), timeout: 20)
            try await awaitWhole("\(path).mp3", size: markedSize, on: rig)
            let track = try await probe.currentTrack(timeout: 20)
            let offset = rig.monitor!.offset
            let seeked = try await probe.setPosition(144.5, track: track)
            return [await attempt { try await probe.awaitFirstAudio(since: seeked, offset: offset, timeout: 20) }]
        }

        // The stale replay once more with 250 ms to each response's first byte: what the check of
        // a stale copy costs the start on a far origin.
        for (label, headers, latency, target) in [
            ("replay after a restart, stale (max-age=0)", OriginResource.staleAtOnce, 0.0, "≤ 0.010"),
            ("replay after a restart, fresh (max-age=3600)", ["Cache-Control": "max-age=3600"], 0.0, "≤ 0.010"),
            ("replay after a restart, stale, 250 ms to first byte", OriginResource.staleAtOnce, 0.25, "≤ 0.010"),
        ] {
            await runner.runEach(
                [("\(label): open → first audio", "s", target), ("\(label): requests before first audio", "", "0")],
                runs: runs
            ) { kind, path in
                let url = try rig.serve(
                    thirty, as: "\(path).mp3", faults: OriginFaults(firstByteLatency: latency), headers: headers)
                let home = try TemporaryDirectory(prefix: "spool-startup-home")
                // The first play fetches the whole file (the link is not capped), then the player quits.
                let first = try await runner.start(kind, home: home)
                try await first.open(url)
                try await awaitWhole("\(path).mp3", size: thirtySize, on: rig)
                _ = try await first.awaitAdvancing(since: .now, timeout: 20)
                first.player.stop()
                let probe = try await runner.start(kind, home: home)
                defer { probe.player.stop() }
                let offset = rig.monitor!.offset
                let opened = try await probe.open(url)
                let audio = await attempt {
                    try await probe.awaitFirstAudio(since: opened, offset: offset, timeout: 20)
                }
                let outcomes = [audio, requests(to: "\(path).mp3", on: rig, from: opened, before: audio)]
                runner.keepLog(of: probe, case: label, outcomes: outcomes)
                return outcomes
            }
        }

        // Each format at 250 ms to the first byte of every response, the link at 3× its bitrate.
        let formats: [(FixtureFormat, String)] = [
            (.mp3CBR, "MP3 CBR"), (.mp3VBR, "MP3 VBR"), (.flac, "FLAC"), (.oggVorbis, "Vorbis"), (.oggOpus, "Opus"),
            (.m4aMoovAtEnd, "AAC (moov last)"),
        ]
        for (format, label) in formats {
            let file = try NetworkMedia.tone(format, seconds: 30, frequency: 698)
            let size = try Data(contentsOf: file).count
            await runner.run(
                [
                    ("\(label) 30 s, 250 ms to first byte, 3×: open → advancing", "s", "≤ 0.600"),
                    ("\(label) 30 s, 250 ms to first byte, 3×: requests before first audio", "", "as needed"),
                ], runs: runs
            ) { probe, path in
                rig.origin.setLinkRate(3 * size / 30)
                let name = "\(path).\(file.pathExtension)"
                let url = try rig.serve(file, as: name, faults: OriginFaults(firstByteLatency: 0.25))
                let offset = rig.monitor!.offset
                let opened = try await probe.open(url)
                async let advancing = attempt { try await probe.awaitAdvancing(since: opened, timeout: 20) }
                let audio = await attempt {
                    try await probe.awaitFirstAudio(since: opened, offset: offset, timeout: 20)
                }
                return [await advancing, requests(to: name, on: rig, from: opened, before: audio)]
            }
        }

        let vorbis = try NetworkMedia.tone(.oggVorbis, seconds: 30, frequency: 587)
        let vorbisSize = try Data(contentsOf: vorbis).count
        await runner.run([("30-s Ogg Vorbis, 3×: open → advancing", "s", "≤ 0.500")], runs: runs) { probe, path in
            rig.origin.setLinkRate(3 * vorbisSize / 30)
            let url = try rig.serve(vorbis, as: "\(path).ogg")
            let opened = try await probe.open(url)
            return [await attempt { try await probe.awaitAdvancing(since: opened, timeout: 20) }]
        }

        let opus = try NetworkMedia.tone(.oggOpus, seconds: 180, frequency: 659)
        let opusSize = try Data(contentsOf: opus).count
        await runner.run([("180-s Opus, 3×: SetPosition 80 % → advancing at the target", "s", "≤ 1.000")], runs: runs) {
            probe, path in
            rig.origin.setLinkRate(3 * opusSize / 180)
            let url = try rig.serve(opus, as: "\(path).opus")
            let opened = try await probe.open(url)
            _ = try await probe.awaitAdvancing(since: opened, timeout: 20)
            let track = try await probe.currentTrack(timeout: 20)
            let target = 0.8 * 180.0
            let seeked = try await probe.setPosition(target, track: track)
            return [await attempt { try await probe.awaitAdvancing(since: seeked, near: target, timeout: 20) }]
        }
        rig.origin.setLinkRate(nil)
    }

    /// Waits until the origin has sent every byte of `path` (its whole download).
    static func awaitWhole(_ path: String, size: Int, on rig: NetworkRig) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while OriginReport(rig.origin, path: path, size: size).contiguousEnd < size {
            guard ContinuousClock.now < deadline else { throw RigError("the download of \(path) never completed") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The requests for `path` that arrived after `opened` and before the first audio.
    static func requests(
        to path: String, on rig: NetworkRig, from opened: ContinuousClock.Instant, before audio: Outcome
    )
        -> Outcome
    {
        guard case .value(let seconds) = audio else { return .note("-") }
        let end = opened + .milliseconds(Int64(seconds * 1000))
        let count = rig.origin.transfers().filter { $0.path == "/" + path && $0.arrived >= opened && $0.arrived <= end }
            .count
        return .value(Double(count))
    }
}

/// Seconds from launching `pacat` with a raw 0.5-s tone on the rig's sound server to the first
/// sound in the recording of its monitor.
private func firstSoundOfPacat(rig: NetworkRig, path: String) async throws -> Double {
    guard let pulse = rig.pulse, let monitor = rig.monitor else { throw RigError("the rig records no audio") }
    let rate = PulseServer.sampleRate
    var samples = [Int16]()
    for frame in 0..<(rate / 2) {
        let value = Int16(8000 * sin(2 * Double.pi * 440 * Double(frame) / Double(rate)))
        samples += [value, value]
    }
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("spool-bench-\(path).raw")
    try samples.withUnsafeBytes { Data($0) }.write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try executablePath("pacat"))
    process.arguments = [
        "--server=\(pulse.server)", "--raw", "--format=s16le", "--rate=\(rate)", "--channels=2", file.path,
    ]
    let offset = monitor.offset
    let since = ContinuousClock.now
    try process.run()
    defer { process.waitUntilExit() }
    return try await monitor.firstSound(after: offset, since: since, timeout: 10)
}
