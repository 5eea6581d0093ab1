import DBusKit
import Foundation
import TestSupport
import Testing

/// An M3U playlist of `fixtures` (absolute paths) in `directory`.
func fixturePlaylist(_ fixtures: [Fixture], in directory: TemporaryDirectory) throws -> URL {
    let list = directory.file("fixtures.m3u")
    try Data((["#EXTM3U"] + fixtures.map(\.url.path)).joined(separator: "\n").utf8).write(to: list)
    return list
}

extension RunningDaemon {
    /// Runs playerctl, expects success, and returns its output without the trailing newline.
    func playerctlOutput(_ arguments: String...) throws -> String {
        let result = try runCommand(
            "playerctl", ["-p", "spool"] + arguments, environment: bus.environment, timeout: 20)
        guard result.status == 0 else {
            throw RigError("playerctl \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.stderr)")
        }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs a playerctl command, then polls `query` until it shows `expected`.
    func playerctl(_ command: [String], shows expected: String, in query: [String]) async throws {
        let result = try runCommand("playerctl", ["-p", "spool"] + command, environment: bus.environment, timeout: 20)
        #expect(result.status == 0, "playerctl \(command.joined(separator: " ")): \(result.stderr)")
        _ = try await waitForPlayerctl(query) { $0 == expected }
    }

    /// Polls `playerctl position` until it is within 20 ms of `seconds`.
    @discardableResult
    func waitForPosition(near seconds: Double) async throws -> Double {
        Double(try await waitForPlayerctl(["position"]) { abs((Double($0) ?? -1) - seconds) < 0.02 }) ?? -1
    }
}

@Suite("Every playerctl command against spool daemon", .serialized)
struct PlayerctlCommandsTests {
    @Test func transportCommandsAndPositionChangeWhatPlayerctlShows() async throws {
        let fixtures = try Fixtures.shared()
        let media = try TemporaryDirectory()
        let list = try fixturePlaylist([fixtures.fixture(.flac), fixtures.fixture(.oggVorbis)], in: media)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        #expect(try daemon.playerctlOutput("status") == "Stopped")

        try await daemon.playerctl(["open", list.path], shows: "Playing", in: ["status"])
        try await daemon.playerctl(["pause"], shows: "Paused", in: ["status"])
        _ = try await daemon.waitForPlayerctl(["metadata", "title"]) { $0 == "Tone 523" }

        // position N (SetPosition), N+ and N- (Seek), while paused so nothing moves on its own.
        #expect(try daemon.playerctlOutput("position", "1") == "")
        try await daemon.waitForPosition(near: 1.0)
        #expect(try daemon.playerctlOutput("position", "0.5+") == "")
        try await daemon.waitForPosition(near: 1.5)
        #expect(try daemon.playerctlOutput("position", "1-") == "")
        try await daemon.waitForPosition(near: 0.5)

        // play-pause toggles, and the position moves only while playing.
        try await daemon.playerctl(["play-pause"], shows: "Playing", in: ["status"])
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.7 }
        try await daemon.playerctl(["play-pause"], shows: "Paused", in: ["status"])

        // Next and Previous change the track and leave paused playback paused.
        try await daemon.playerctl(["next"], shows: "Tone 587", in: ["metadata", "title"])
        #expect(try daemon.playerctlOutput("status") == "Paused")
        try await daemon.waitForPosition(near: 0)
        try await daemon.playerctl(["previous"], shows: "Tone 523", in: ["metadata", "title"])
        #expect(try daemon.playerctlOutput("status") == "Paused")

        // Stop keeps the track and forgets the position; Next while stopped stays stopped.
        try await daemon.playerctl(["play"], shows: "Playing", in: ["status"])
        try await daemon.playerctl(["stop"], shows: "Stopped", in: ["status"])
        #expect(Double(try daemon.playerctlOutput("position")) == 0)
        #expect(try daemon.playerctlOutput("metadata", "title") == "Tone 523")
        // (Nothing is loaded while stopped: the URL shows the new track, the tags come when it plays.)
        let second = fixtures.fixture(.oggVorbis).url.absoluteString
        try await daemon.playerctl(["next"], shows: second, in: ["metadata", "xesam:url"])
        #expect(try daemon.playerctlOutput("status") == "Stopped")
        try await daemon.playerctl(["play"], shows: "Playing", in: ["status"])
        _ = try await daemon.waitForPlayerctl(["metadata", "title"]) { $0 == "Tone 587" }
        try await daemon.playerctl(["stop"], shows: "Stopped", in: ["status"])
    }

    @Test func openAndMetadataShowTheFixtureTags() async throws {
        let fixtures = try Fixtures.shared()
        let track = fixtures.fixture(.flac)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        try await daemon.playerctl(["open", track.url.path], shows: "Playing", in: ["status"])
        try await daemon.playerctl(["pause"], shows: "Paused", in: ["status"])
        _ = try await daemon.waitForPlayerctl(["metadata", "mpris:length"]) { !$0.isEmpty }

        // Plain `metadata`: one "player key value" line per entry.
        var entries: [String: String] = [:]
        for line in try daemon.playerctlOutput("metadata").split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            #expect(fields.count == 3 && fields[0] == "spool", "\(line)")
            if fields.count == 3 { entries[String(fields[1])] = fields[2].trimmingCharacters(in: .whitespaces) }
        }
        #expect(entries["xesam:title"] == track.title)
        #expect(entries["xesam:artist"] == track.artist)
        #expect(entries["xesam:album"] == track.album)
        #expect(entries["xesam:url"] == track.url.absoluteString)
        #expect(entries["xesam:trackNumber"] == track.trackNumber.map(String.init))
        #expect(entries["mpris:trackid"]?.contains("/org/spool/Track/") == true, "\(entries)")
        let length = Double(entries["mpris:length"] ?? "") ?? 0
        #expect(abs(length / 1_000_000 - track.duration) < 0.1, "mpris:length \(length)")

        // Single keys, by short name and by full name, and a format string.
        #expect(try daemon.playerctlOutput("metadata", "title") == "Tone 523")
        #expect(try daemon.playerctlOutput("metadata", "artist") == "Spool")
        #expect(try daemon.playerctlOutput("metadata", "album") == "Fixtures")
        #expect(try daemon.playerctlOutput("metadata", "xesam:album") == "Fixtures")
        #expect(try daemon.playerctlOutput("metadata", "--format", "{{artist}} - {{title}}") == "Spool - Tone 523")
        #expect(
            try daemon.playerctlOutput("metadata", "--format", "{{album}}: {{xesam:url}}")
                == "Fixtures: \(track.url.absoluteString)")
    }

    @Test func volumeLoopAndShuffleAreReadAndSet() async throws {
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let player = "org.mpris.MediaPlayer2.Player"

        #expect(try daemon.playerctlOutput("volume") == "1.000000")
        try await daemon.playerctl(["volume", "0.25"], shows: "0.250000", in: ["volume"])
        try await daemon.playerctl(["volume", "0.1+"], shows: "0.350000", in: ["volume"])
        try await daemon.playerctl(["volume", "0.05-"], shows: "0.300000", in: ["volume"])
        #expect(abs((try await daemon.property(player, "Volume")?.doubleValue ?? -1) - 0.3) < 1e-9)

        #expect(try daemon.playerctlOutput("loop") == "None")
        for mode in ["Track", "Playlist", "None"] {
            try await daemon.playerctl(["loop", mode], shows: mode, in: ["loop"])
            #expect(try await daemon.property(player, "LoopStatus")?.stringValue == mode)
        }

        #expect(try daemon.playerctlOutput("shuffle") == "Off")
        for (command, expected) in [("On", "On"), ("Toggle", "Off"), ("Toggle", "On"), ("Off", "Off")] {
            try await daemon.playerctl(["shuffle", command], shows: expected, in: ["shuffle"])
            #expect(try await daemon.property(player, "Shuffle")?.boolValue == (expected == "On"))
        }
    }

    @Test func followPrintsEveryStatusChangeOnce() async throws {
        let media = try TemporaryDirectory()
        let long = try longTone(seconds: 10, in: media)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let follow = try ChildProcess(
            "playerctl", ["-p", "spool", "--follow", "status"], environment: daemon.bus.environment,
            logDirectory: media.url, selfStopAfter: 60)
        defer { follow.stop(grace: 2) }
        var expected: [String] = []
        func waitForLine(_ line: String) async throws {
            expected.append(line)
            let printed = await eventually(timeout: 10) {
                follow.standardOutput.split(separator: "\n").map(String.init) == expected
            }
            #expect(
                printed,
                "playerctl --follow printed \(follow.standardOutput.split(separator: "\n")), expected \(expected)")
            if !printed { throw RigError("playerctl --follow: \(follow.standardError)") }
        }

        try await waitForLine("Stopped")  // the state when it attaches
        #expect(try daemon.playerctlOutput("open", long.path) == "")
        try await waitForLine("Playing")
        #expect(try daemon.playerctlOutput("pause") == "")
        try await waitForLine("Paused")
        // A change that does not touch the status prints nothing.
        #expect(try daemon.playerctlOutput("volume", "0.5") == "")
        #expect(try daemon.playerctlOutput("play") == "")
        try await waitForLine("Playing")
        #expect(try daemon.playerctlOutput("stop") == "")
        try await waitForLine("Stopped")
    }
}
