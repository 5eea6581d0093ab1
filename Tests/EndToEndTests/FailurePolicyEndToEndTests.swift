import DBusKit
import Foundation
import TestSupport
import Testing

@Suite("What the daemon does when tracks fail", .serialized)
struct FailurePolicyEndToEndTests {
    /// A 404, a server that refuses connections and a text file named `.mp3` are each given
    /// up on (the refused one after one retry) and the good track after them plays.
    @Test func badTracksAreSkippedUntilAGoodOnePlays() async throws {
        let fixtures = try Fixtures.shared()
        let server = try NginxServer(serving: fixtures.directory)
        let good = fixtures.fixture(.flac)
        let junk = try TemporaryDirectory(prefix: "spool-junk")
        try Data("not audio at all\n".utf8).write(to: junk.file("text.mp3"))
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let queue = [
            server.url(for: "missing.mp3").absoluteString,
            "http://127.0.0.1:9/refused.mp3",  // the discard port: nothing listens
            junk.file("text.mp3").absoluteString,
            good.url.absoluteString,
        ]
        _ = try await daemon.client.call(
            destination: busName, path: "/org/mpris/MediaPlayer2", interface: "org.spool.Spool1", method: "Play",
            arguments: [.stringArray(queue)])
        _ = try await daemon.waitForPlayerctl(["metadata", "xesam:url"], timeout: 15) { $0 == good.url.absoluteString }
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.2 }
        #expect(try await daemon.playerctl("status").stdout == "Playing\n")
        let log = daemon.process.standardError
        let loads = { (name: String) in
            log.components(separatedBy: "\n").filter { $0.contains("loading") && $0.contains(name) }.count
        }
        #expect(loads("missing.mp3") == 1, "a 404 is not retried")
        #expect(loads("refused.mp3") == 2, "a refused connection is retried once")
        #expect(loads("text.mp3") == 1, "a file that is not audio is not retried")
    }
}
