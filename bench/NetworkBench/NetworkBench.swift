// Spool under network conditions (issue #12), against mpv with mpv-mpris where installed:
//   bench/network.sh       (builds spool and this bench in release mode, then runs it)
// Each case starts a fresh player (its own home: an empty cache) on a private bus, drives it
// over MPRIS against the fault origin, whose whole link is capped (all responses share one
// token bucket, as all connections to a host share a real link), and plays into a private
// PulseAudio server whose output is recorded.
// - first audio: the first non-silent sample recorded from the server's monitor (±20 ms);
// - advancing: MPRIS Position polled every 10 ms, the first read above the one before it;
// - landed: advancing within ±1 s of a SetPosition target;
// - request at target: the first request after the SetPosition that asks for the target's byte;
// - sent twice / beyond size: the origin's body bytes served more than once, and in all beyond
//   the file's size.
// SPOOL=path measures another spool binary; NETBENCH_PLAYERS=spool skips mpv (mpv,spool runs mpv first);
// NETBENCH_CASES=text runs only the cases whose name contains it; NETBENCH_LOG=debug gives
// the daemon a debug log (its tail is printed for failed cases).
import DBusKit
import Foundation
import TestSupport

/// One measured value, or why there is none.
enum Outcome {
    case value(Double)
    case failed(String)
    /// Not applicable, and why (e.g. "cached": the seek's target was downloaded before it).
    case note(String)
}

/// A row of the table: a value per player and what is targeted.
struct Row {
    let name: String
    let unit: String
    var values: [String: Outcome] = [:]
    let target: String
}

@main
struct NetworkBench {
    static let rig: NetworkRig = try! NetworkRig(recordAudio: true, lifetime: 900)
    nonisolated(unsafe) static var rows: [Row] = []
    nonisolated(unsafe) static var notes: [String] = []
    nonisolated(unsafe) static var serial = 0

    static func main() async throws {
        let started = ContinuousClock.now
        let spool = try ProcessInfo.processInfo.environment["SPOOL"] ?? spoolExecutable()
        let plugin = NetworkRig.mpvMPRISPlugin()
        var players = ["spool"]
        let wanted = ProcessInfo.processInfo.environment["NETBENCH_PLAYERS"].map {
            $0.split(separator: ",").map(String.init)
        }
        if plugin != nil, (try? executablePath("mpv")) != nil, wanted?.contains("mpv") ?? true { players.append("mpv") }
        // "mpv,spool" runs mpv first in each case (the table keeps spool's column first).
        let runOrder = wanted?.first == "mpv" ? players.reversed() : players
        print(
            "NetworkBench: \(spool)\(players.contains("mpv") ? " vs mpv \(mpvVersion()) + \(plugin!)" : " (mpv with mpv-mpris not found)")"
        )
        print("generating media…")
        let long = try NetworkMedia.tone(.mp3CBR, seconds: 180)  // 3 min, 128 kbps CBR
        let thirty = try NetworkMedia.tone(.mp3CBR, seconds: 30, frequency: 494)
        let eightA = try NetworkMedia.tone(.mp3CBR, seconds: 8, frequency: 587)
        let eightB = try NetworkMedia.tone(.mp3CBR, seconds: 8, frequency: 659)
        let shortFormats: [(FixtureFormat, String)] = [
            (.mp3CBR, "MP3"), (.flac, "FLAC"), (.oggOpus, "Opus"), (.m4aMoovAtEnd, "M4A (moov last)"),
        ]
        if let pulse = rig.pulse {
            // A fresh sound server starts its first stream about 0.6 s late, which the run's first
            // player paid: a silent stream goes first, so that every case measures its player.
            var environment = ProcessInfo.processInfo.environment
            environment["PULSE_SERVER"] = pulse.server
            _ = try runCommand(
                "gst-launch-1.0", ["-q", "audiotestsrc", "wave=silence", "num-buffers=20", "!", "pulsesink"],
                environment: environment, timeout: 20)
        }
        var shorts: [(String, URL, Double)] = []
        for (format, label) in shortFormats {
            let seconds = try NetworkMedia.seconds(toFill: 460_000, format)
            shorts.append((label, try NetworkMedia.tone(format, seconds: seconds, frequency: 698), Double(seconds)))
        }

        func start(_ kind: String) async throws -> PlayerProbe {
            let player =
                kind == "spool"
                ? try rig.startSpool(executable: spool, logLevel: ProcessInfo.processInfo.environment["NETBENCH_LOG"])
                : try rig.startMPV(plugin: plugin!)
            let connection = try DBusConnection(address: rig.bus.address)
            let probe = PlayerProbe(
                remote: DBusMPRISRemote(connection: connection, busName: player.busName), player: player, rig: rig)
            try await probe.waitUntilReady()
            return probe
        }
        /// Runs `body` for every player, each with a fresh player and its own path on the origin.
        func run(_ names: [(String, String, String)], _ body: (PlayerProbe, String) async throws -> [Outcome]) async {
            var indices: [Int] = []
            if let only = ProcessInfo.processInfo.environment["NETBENCH_CASES"], !names[0].0.contains(only) { return }
            for (name, unit, target) in names {
                indices.append(rows.count)
                rows.append(Row(name: name, unit: unit, target: target))
            }
            for kind in runOrder {
                serial += 1
                var outcomes: [Outcome]
                var probe: PlayerProbe?
                do {
                    probe = try await start(kind)
                    outcomes = try await body(probe!, "c\(serial)")
                } catch {
                    outcomes = [.failed("\(error)")]
                }
                if let probe,
                    ProcessInfo.processInfo.environment["NETBENCH_SHOW_LOG"] != nil
                        || outcomes.contains(where: { if case .failed = $0 { true } else { false } })
                {
                    notes.append(
                        "\(names[0].0) [\(kind)] log tail:\n"
                            + probe.player.logTail(
                                ProcessInfo.processInfo.environment["NETBENCH_SHOW_LOG"] != nil ? 60 : 12))
                }
                probe?.player.stop()
                for (offset, index) in indices.enumerated() {
                    rows[index].values[kind] = offset < outcomes.count ? outcomes[offset] : outcomes.last!
                }
            }
        }
        func attempt(_ body: () async throws -> Double) async -> Outcome {
            do { return .value(try await body()) } catch { return .failed("\(error)") }
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
            await run([
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
            await run([
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
        await run([
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
        await run([
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
            await run([("\(label) \(size / 1000) kB, 40 kB/s: open → first audio", "s", "")]) { probe, path in
                let url = try rig.serve(file, as: "\(path).\(file.pathExtension)")
                let offset = rig.monitor!.offset
                let opened = try await probe.open(url)
                return [await attempt { try await probe.awaitFirstAudio(since: opened, offset: offset, timeout: 25) }]
            }
        }

        // No Range, the file fully cached: SetPosition → landed.
        rig.origin.setLinkRate(Int(3 * Double(thirtySize) / 30))
        await run([
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
        await run([("no Range, chunked, two 8-s MP3s (3×): end of track → next advancing", "s", "≈ 0")]) {
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

        printTable(players)
        if !notes.isEmpty {
            print("\nfailures, with the player's log tail:")
            for note in notes { print(note) }
        }
        print(String(format: "\nbench run: %.0f s", seconds(from: started)))
    }

    static func mpvVersion() -> String {
        let out = (try? runCommand("mpv", ["--version"], timeout: 10).stdout) ?? ""
        return out.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
    }

    static func printTable(_ players: [String]) {
        func format(_ outcome: Outcome?, unit: String) -> String {
            switch outcome {
            case .value(let value)?: unit == "s" ? String(format: "%.3f", value) : String(format: "%.0f", value)
            case .failed(let why)?: why.contains("within") || why.contains("never") ? "timeout" : "fail"
            case .note(let text)?: text
            case nil: "-"
            }
        }
        let width = rows.map(\.name.count).max() ?? 40
        var header = pad("case", width) + "  " + pad("unit", 5) + players.map { pad($0, 10) }.joined()
        if players.count == 2 { header += pad("spool/mpv", 11) }
        print("\n" + header + "target")
        for row in rows {
            var line =
                pad(row.name, width) + "  " + pad(row.unit, 5)
                + players.map { pad(format(row.values[$0], unit: row.unit), 10) }.joined()
            if players.count == 2 {
                if case .value(let a)? = row.values["spool"], case .value(let b)? = row.values["mpv"], b > 0 {
                    line += pad(String(format: "%.2f", a / b), 11)
                } else {
                    line += pad("-", 11)
                }
            }
            print(line + row.target)
        }
        let failures = rows.flatMap { row in
            row.values.compactMap { kind, outcome -> String? in
                if case .failed(let why) = outcome { return "  \(row.name) [\(kind)]: \(why.prefix(300))" }
                return nil
            }
        }
        if !failures.isEmpty {
            print("\nwhy (timeout/fail):")
            failures.forEach { print($0) }
        }
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}
