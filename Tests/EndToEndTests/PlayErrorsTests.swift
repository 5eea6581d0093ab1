import DBusKit
import Foundation
import TestSupport
import Testing

/// Errors are reported where the user acted: `spool play` checks its inputs before it calls the
/// daemon, then waits for the first track and says why it failed; OpenUri refuses a bad URI.
@Suite("Errors where the user acted", .serialized)
struct PlayErrorsTests {
    @Test func malformedURLsAreRefusedAtTheDoorWithOneLine() throws {
        let bus = try PrivateBus()  // no daemon: these never reach one
        let cases: [(arguments: [String], status: Int32, message: String)] = [
            (["play", "http://"], 1, "has no host name"),
            (["play", "http://exa mple.org/a.mp3"], 1, "contains a space"),
            (["open", "https:///a.mp3"], 1, "has no host name"),
            (["add", "gopher://example.org/a.mp3"], 1, "not a supported URL"),
            (["play", "http://example.org/\u{1B}[2Ja.mp3"], 1, "control character"),
            (["play", "/nonexistent/spool/a.mp3"], 2, "no such file or directory: /nonexistent/spool/a.mp3"),
        ]
        for (arguments, status, message) in cases {
            let result = try runSpool(arguments, environment: bus.environment)
            #expect(result.status == status, "spool \(arguments): \(result)")
            #expect(
                result.stderr.hasPrefix("spool: ") && result.stderr.contains(message),
                "spool \(arguments): \(result.stderr)")
            #expect(
                result.stderr.split(separator: "\n").count == 1 && !result.stderr.contains("\u{1B}"), "\(result.stderr)"
            )
        }
    }

    @Test func playWaitsForTheFirstTrackAndReportsWhyItFailed() async throws {
        let origin = try FaultOrigin()
        let track = try Fixtures.shared().fixture(.mp3CBR)
        origin.serve(OriginResource(try Data(contentsOf: track.url), contentType: "audio/mpeg"), at: "/good.mp3")
        let folder = try TemporaryDirectory(prefix: "spool-play-errors")
        let text = folder.url.appendingPathComponent("notes.mp3")
        try Data(String(repeating: "not audio at all\n", count: 2000).utf8).write(to: text)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()

        let cases: [(input: String, message: String)] = [
            (origin.url(for: "/missing.mp3").absoluteString, "missing.mp3"),
            ("http://127.0.0.1:1/refused.mp3", "refused.mp3"),
            (text.path, "notes.mp3"),
        ]
        for (input, message) in cases {
            let started = ContinuousClock.now
            let result = try daemon.spool("play", input)
            let elapsed = ContinuousClock.now - started
            #expect(result.status == 2, "spool play \(input): \(result)")
            #expect(result.stderr.hasPrefix("spool: cannot play \(message)"), "spool play \(input): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(elapsed < .seconds(5), "spool play \(input) took \(elapsed)")
        }
        // The same failure twice in a row changes no property: it is still reported.
        let again = try daemon.spool("play", text.path)
        #expect(again.status == 2 && again.stderr.contains("cannot play notes.mp3"), "\(again)")

        let good = try daemon.spool("play", origin.url(for: "/good.mp3").absoluteString)
        #expect(good.status == 0 && good.stderr.isEmpty, "\(good)")
        // Exit 0 means audio flows.
        let position =
            try await daemon.client.call(
                destination: busName, path: playerPath, interface: "org.freedesktop.DBus.Properties", method: "Get",
                arguments: [.string("org.mpris.MediaPlayer2.Player"), .string("Position")]
            ).first?.variantValue?.int64Value ?? 0
        #expect(position > 0)

        let noWait = try daemon.spool("play", "--no-wait", origin.url(for: "/missing.mp3").absoluteString)
        #expect(noWait.status == 0 && noWait.stderr.isEmpty, "\(noWait)")

        // A remote playlist is fetched after the call returns; play still waits for its first track.
        origin.serve(OriginResource(Data("#EXTM3U\ngood.mp3\n".utf8)), at: "/list.m3u")
        let list = try daemon.spool("play", origin.url(for: "/list.m3u").absoluteString)
        #expect(list.status == 0 && list.stderr.isEmpty, "\(list)")
        let queued = try daemon.spool("queue")
        #expect(queued.stdout.hasPrefix("> 1. ") && queued.stdout.split(separator: "\n").count == 1, "\(queued)")
        let gone = try daemon.spool("play", origin.url(for: "/gone.m3u").absoluteString)
        #expect(gone.status == 2 && gone.stderr.hasPrefix("spool: cannot play gone.m3u: "), "\(gone)")
    }

    @Test func openUriWithAMalformedURIIsAnInvalidArgsError() async throws {
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        for uri in ["http://", "http://exa mple.org/a.mp3", "gopher://example.org/a.mp3", "file://", ""] {
            do {
                _ = try await daemon.client.call(
                    destination: busName, path: playerPath, interface: "org.mpris.MediaPlayer2.Player",
                    method: "OpenUri",
                    arguments: [.string(uri)], timeout: .seconds(5))
                Issue.record("OpenUri('\(uri)') was accepted")
            } catch let error as DBusError {
                #expect(error.name == "org.freedesktop.DBus.Error.InvalidArgs", "\(uri): \(error)")
            }
        }
        let status = try await daemon.property("org.mpris.MediaPlayer2.Player", "PlaybackStatus")
        #expect(status?.stringValue == "Stopped")
    }

    @Test func aPlaylistStillArrivingDoesNotReplaceAQueueOpenedAfterIt() async throws {
        let origin = try FaultOrigin()
        let track = try Fixtures.shared().fixture(.mp3CBR)
        origin.serve(OriginResource(try Data(contentsOf: track.url), contentType: "audio/mpeg"), at: "/good.mp3")
        origin.serve(
            OriginResource(Data("#EXTM3U\ngood.mp3\n".utf8)), at: "/slow.m3u",
            faults: OriginFaults(firstByteLatency: 0.5))
        let later = try Fixtures.shared().fixture(.flac)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        #expect(try daemon.spool("play", "--no-wait", origin.url(for: "/slow.m3u").absoluteString).status == 0)
        #expect(try daemon.spool("play", later.url.path).status == 0)
        let dropped = await eventually(timeout: 5) {
            daemon.process.standardError.contains("dropping the playlist slow.m3u")
        }
        #expect(dropped, "\(daemon.process.standardError)")
        let queue = try daemon.spool("queue").stdout
        #expect(queue.hasPrefix("> 1. \(later.title)") && queue.split(separator: "\n").count == 1, "\(queue)")
    }
}
