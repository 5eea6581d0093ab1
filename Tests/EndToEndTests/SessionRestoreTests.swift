import DBusKit
import Foundation
import Testing
import TestSupport

/// A steady tone of `seconds`, as FLAC, for tests that need a track longer than the fixtures.
func longTone(seconds: Int, in directory: TemporaryDirectory) throws -> URL {
    let file = directory.file("long-\(seconds).flac")
    let made = try runCommand(
        "gst-launch-1.0",
        ["-q", "audiotestsrc", "num-buffers=\(seconds * 44_100 / 1024)", "freq=300", "!", "audioconvert", "!",
         "flacenc", "!", "filesink", "location=\(file.path)"])
    guard made.status == 0 else { throw RigError("could not make a tone: \(made.stderr)") }
    return file
}

@Suite("Session restore", .serialized)
struct SessionRestoreTests {
    @Test func afterKill9TheQueueIsIntactAndThePositionWithinFiveSeconds() async throws {
        let media = try TemporaryDirectory()
        let long = try longTone(seconds: 40, in: media)
        let home = try TemporaryDirectory(prefix: "spool-home")
        let bus = try PrivateBus()

        let before: Double
        do {
            let daemon = try RunningDaemon(bus: bus, home: home.url)
            try await daemon.waitUntilReady()
            #expect(try daemon.playerctl("open", long.absoluteString).status == 0)
            _ = try daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
            let reached = try daemon.waitForPlayerctl(["position"], timeout: 20) { (Double($0) ?? 0) > 6.5 }
            before = Double(reached) ?? 0
            daemon.process.send(SIGKILL)
            #expect(daemon.process.waitForExit(timeout: 10) != nil)
        }

        let daemon = try RunningDaemon(bus: bus, home: home.url)
        try await daemon.waitUntilReady()
        #expect(try daemon.playerctl("status").stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "Paused")
        #expect(try daemon.playerctl("metadata", "xesam:url").stdout.contains(long.lastPathComponent))
        let restored = Double(try daemon.playerctl("position").stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        #expect(restored <= before && restored >= before - 5, "restored at \(restored), killed at \(before)")
        let canPlay = try await daemon.client.call(
            destination: busName, path: "/org/mpris/MediaPlayer2", interface: "org.freedesktop.DBus.Properties",
            method: "Get", arguments: [.string("org.mpris.MediaPlayer2.Player"), .string("CanPlay")])
        #expect(canPlay.first?.variantValue?.boolValue == true)

        // Play continues from there.
        #expect(try daemon.playerctl("play").status == 0)
        _ = try daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
        let resumed = try daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0 }
        #expect((Double(resumed) ?? 0) >= restored - 0.5, "played from \(resumed), restored \(restored)")
    }

    @Test func aCleanQuitSavesTheExactPosition() async throws {
        let media = try TemporaryDirectory()
        let long = try longTone(seconds: 20, in: media)
        let home = try TemporaryDirectory(prefix: "spool-home")
        let bus = try PrivateBus()
        let pausedAt: String
        do {
            let daemon = try RunningDaemon(bus: bus, home: home.url)
            try await daemon.waitUntilReady()
            #expect(try daemon.playerctl("open", long.absoluteString).status == 0)
            _ = try daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 1.0 }
            #expect(try daemon.playerctl("pause").status == 0)
            _ = try daemon.waitForPlayerctl(["status"]) { $0 == "Paused" }
            pausedAt = try daemon.playerctl("position").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            daemon.process.send(SIGTERM)
            #expect(daemon.process.waitForExit(timeout: 10) == 0)
        }
        let daemon = try RunningDaemon(bus: bus, home: home.url)
        try await daemon.waitUntilReady()
        let restored = try daemon.playerctl("position").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(abs((Double(restored) ?? -1) - (Double(pausedAt) ?? -2)) < 0.05, "paused at \(pausedAt), restored \(restored)")
    }
}
