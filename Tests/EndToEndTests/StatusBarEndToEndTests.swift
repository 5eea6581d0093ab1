import DBusKit
import Foundation
import TestSupport
import Testing

/// `spool status --json` / `--format` as status bars run them, and the daemon's log under systemd.
@Suite("Status for status bars, end to end", .serialized)
struct StatusBarEndToEndTests {
    /// A daemon playing a local FLAC with its tags read, volume 40 % and loop track.
    private func playingDaemon() async throws -> (RunningDaemon, Fixture) {
        let track = try Fixtures.shared().fixture(.flac)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        #expect(try daemon.spool("play", track.url.path).status == 0)
        #expect(try daemon.spool("volume", "40").status == 0)
        #expect(try daemon.spool("loop", "track").status == 0)
        _ = try await daemon.waitForSpool("status", "--format", "{{status}} {{artist}} {{volume}} {{loop}}") {
            $0 == "Playing \(track.artist) 40 track\n"
        }
        return (daemon, track)
    }

    /// Starts `spool ARGUMENTS` against `daemon`, its stdout piped into a file.
    private func following(_ daemon: RunningDaemon, _ arguments: [String]) throws -> (ChildProcess, TemporaryDirectory)
    {
        let logs = try TemporaryDirectory(prefix: "spool-statusbar")
        let child = try ChildProcess(
            try spoolExecutable(), arguments, environment: daemon.bus.environment, logDirectory: logs.url,
            selfStopAfter: 60)
        return (child, logs)
    }

    @Test func jsonAndATemplateDescribeThePlayingTrack() async throws {
        let (daemon, track) = try await playingDaemon()
        let json = try daemon.spool("status", "--json")
        #expect(json.status == 0, "\(json)")
        #expect(json.stdout.hasSuffix("}\n") && json.stdout.filter { $0 == "\n" }.count == 1, "\(json.stdout)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["title"] as? String == track.title)
        #expect(object["artist"] as? String == track.artist)
        #expect(object["album"] as? String == track.album)
        #expect(object["url"] as? String == track.url.absoluteString)
        #expect((object["track_id"] as? String)?.hasPrefix("/") == true)
        #expect(object["status"] as? String == "Playing" && object["class"] as? String == "playing")
        #expect(
            object["volume"] as? Int == 40 && object["loop"] as? String == "track" && object["rate"] as? Double == 1)
        #expect(object["shuffle"] as? Bool == false && object["buffering"] as? Bool == false)
        #expect(object["cached"] as? Double == 1, "a local file is all here")
        #expect((object["length"] as? Double ?? 0) > 1 && object["position"] is Double)
        #expect(object["text"] as? String == "\(track.title) – \(track.artist)")

        let template = try daemon.spool("status", "--format", "{{status}}|{{track}}|{{album}}|{{length}}|{{shuffle}}")
        #expect(template.status == 0)
        let length = try #require(object["length"] as? Double)
        let minutes = Int(length) / 60
        let seconds = Int(length) % 60
        let shownLength = "\(minutes):\(seconds < 10 ? "0" : "")\(seconds)"
        #expect(
            template.stdout == "Playing|\(track.title) – \(track.artist)|\(track.album)|\(shownLength)|off\n",
            "\(template)")

        let waybar = try daemon.spool("status", "--json", "--format={{markup_escape(title)}}")
        #expect(waybar.stdout.contains("\"text\":\"\(track.title)\""), "\(waybar)")

        let status = try daemon.spool("status")
        #expect(status.stdout.contains("\nvolume 40% · rate 1× · loop track · shuffle off\n"), "\(status.stdout)")
        #expect(status.stdout.hasPrefix("Playing: \(track.title) – \(track.artist)\n"), "\(status.stdout)")
        let queue = try daemon.spool("queue")
        #expect(queue.stdout.contains("> 1. \(track.title) – \(track.artist) ("), "\(queue.stdout)")
    }

    @Test func aNarrowTerminalShortensTheTitleAndKeepsTheNumbers() async throws {
        let (daemon, track) = try await playingDaemon()
        let status = try daemon.spool("status", environment: ["COLUMNS": "24"])
        let lines = status.stdout.split(separator: "\n").map(String.init)
        #expect(lines.allSatisfy { $0.count <= 23 }, "\(lines)")
        #expect(lines.contains("volume 40% · rate 1×") && lines.contains("loop track"), "\(lines)")
        #expect(lines.first?.hasPrefix("Playing: ") == true && lines.first?.contains("…") == true, "\(lines)")
        #expect(lines.first?.contains(track.title) == false, "\(lines)")
        #expect(lines.count > 1 && lines[1].contains(" / "), "\(lines)")
    }

    @Test func anUnknownPlaceholderIsOneLineNamingItAndExitStatus1() async throws {
        let (daemon, _) = try await playingDaemon()
        let result = try daemon.spool("status", "--format", "{{title}} {{tittle}}")
        #expect(result.status == 1 && result.stdout.isEmpty, "\(result)")
        #expect(
            result.stderr == "spool: unknown placeholder '{{tittle}}' in the format; did you mean 'title'?\n",
            "\(result)")
    }

    @Test func followWithATemplateWritesOneLinePerChange() async throws {
        let (daemon, track) = try await playingDaemon()
        let (follow, logs) = try following(daemon, ["status", "--follow", "--format", "{{status}} {{title}}"])
        defer { follow.stop(grace: 1) }
        _ = logs
        #expect(
            await eventually(timeout: 10) { follow.standardOutput == "Playing \(track.title)\n" },
            "\(follow.standardOutput)")
        // Seconds of playing do not change this text, a pause does; a volume change (a signal) does not either.
        let position = Double(try await daemon.waitForPlayerctl(["position"]) { _ in true }) ?? 0
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > position + 1.2 }
        #expect(try daemon.spool("pause").status == 0)
        #expect(
            await eventually(timeout: 10) { follow.standardOutput.hasSuffix("Paused \(track.title)\n") },
            "\(follow.standardOutput)")
        #expect(try daemon.spool("volume", "50").status == 0)
        #expect(try daemon.spool("resume").status == 0)
        #expect(
            await eventually(timeout: 10) {
                follow.standardOutput.hasSuffix("Paused \(track.title)\nPlaying \(track.title)\n")
            })
        #expect(
            follow.standardOutput == "Playing \(track.title)\nPaused \(track.title)\nPlaying \(track.title)\n",
            "\(follow.standardOutput)")
    }

    @Test func followWithJSONWritesAChangeNotEachSecondButATimedTemplateTicks() async throws {
        let (daemon, _) = try await playingDaemon()
        let (json, jsonLogs) = try following(daemon, ["status", "--follow", "--json"])
        defer { json.stop(grace: 1) }
        let (timed, timedLogs) = try following(daemon, ["status", "--follow", "--format", "{{position}}"])
        defer { timed.stop(grace: 1) }
        _ = (jsonLogs, timedLogs)
        #expect(await eventually(timeout: 10) { json.standardOutput.hasSuffix("}\n") }, "\(json.standardOutput)")
        let position = Double(try await daemon.waitForPlayerctl(["position"]) { _ in true }) ?? 0
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > position + 2.2 }
        #expect(try daemon.spool("pause").status == 0)
        #expect(
            await eventually(timeout: 10) { json.standardOutput.contains("\"status\":\"Paused\"") },
            "\(json.standardOutput)")
        let lines = json.standardOutput.split(separator: "\n")
        #expect(lines.count == 2, "one line playing, one paused: \(lines)")
        for line in lines {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "\(line)")
        }
        // The position template wrote a new line for each second played, distinct and in order.
        let times = timed.standardOutput.split(separator: "\n").map(String.init)
        #expect(times.count >= 2 && Set(times).count == times.count, "\(times)")
    }

    @Test func aStreamOfUnknownLengthShowsHowMuchHasDownloaded() async throws {
        let track = try Fixtures.shared().fixture(.mp3CBR)
        let body = try Data(contentsOf: track.url)
        let origin = try FaultOrigin(lifetime: 60)
        // Chunked, no Range, and the body held after its first half: the length stays unknown.
        let faults = OriginFaults(ignoresRange: true, chunked: true, stall: .init(afterBodyBytes: body.count / 2))
        origin.serve(OriginResource(body, contentType: "audio/mpeg"), at: "/stream.mp3", faults: faults)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        #expect(try daemon.spool("play", origin.url(for: "/stream.mp3").absoluteString).status == 0)
        let status = try await daemon.waitForSpool("status") { $0.contains(" downloaded ") }
        let lines = status.split(separator: "\n").map(String.init)
        #expect(lines.count > 1 && lines[1].contains(" / ") && lines[1].hasSuffix(" KiB"), "\(lines)")
        #expect(!status.contains("cached "), "\(status)")
        let cached = try daemon.spool("status", "--format", "{{cached}}").stdout
        #expect(cached.hasSuffix(" KiB\n") && cached.first?.isNumber == true, "\(cached)")
        let json = try daemon.spool("status", "--json").stdout
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["cached"] is NSNull && object["content_length"] is NSNull, "\(json)")
        #expect((object["cached_bytes"] as? Int ?? 0) > 0, "\(json)")
    }

    @Test func underSystemdEveryLogLineCarriesItsPriority() async throws {
        let track = try Fixtures.shared().fixture(.mp3CBR)
        let daemon = try RunningDaemon(extraEnvironment: ["JOURNAL_STREAM": "8:4242"])
        try await daemon.waitUntilReady()
        #expect(try daemon.spool("play", track.url.path).status == 0)
        #expect(try daemon.spool("pause").status == 0)
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Paused" }
        let log = daemon.process.standardError
        let lines = log.split(separator: "\n")
        #expect(lines.count > 3, "\(log)")
        let prefixed = lines.filter {
            $0.count > 3 && $0.first == "<" && "34567".contains($0.dropFirst().first!) && $0.dropFirst(2).first == ">"
        }
        #expect(prefixed.count == lines.count, "lines without a priority: \(lines.filter { !prefixed.contains($0) })")
        #expect(lines.contains { $0.hasPrefix("<6>") } && lines.contains { $0.hasPrefix("<7>") }, "\(log)")
        #expect(!log.contains("INFO ") && !log.contains("DEBUG "), "\(log)")
    }
}
