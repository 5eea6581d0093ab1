import DBusKit
import Foundation
import Testing
import TestSupport

@Suite("Play while caching, end to end", .serialized)
struct CachingEndToEndTests {
    @Test func aReplayCostsNoNetworkAndSurvivesADaemonRestart() async throws {
        let fixtures = try Fixtures.shared()
        let track = fixtures.fixture(.oggVorbis)
        let server = try NginxServer(serving: fixtures.directory)
        let home = try TemporaryDirectory(prefix: "spool-home")
        let bus = try PrivateBus()
        let url = server.url(for: track.fileName).absoluteString
        do {
            let daemon = try RunningDaemon(bus: bus, home: home.url)
            try await daemon.waitUntilReady()
            #expect(try daemon.playerctl("open", url).status == 0)
            _ = try daemon.waitForPlayerctl(["status"], timeout: 20) { $0 == "Stopped" }  // played to the end
            daemon.process.send(SIGTERM)
            #expect(daemon.process.waitForExit(timeout: 10) == 0)
        }
        let fetched = server.accessLog().filter { $0.path.hasSuffix(track.fileName) }
        #expect(!fetched.isEmpty)
        let sent = fetched.reduce(0) { $0 + $1.bodyBytesSent }
        let size = try Data(contentsOf: track.url).count
        #expect(sent == size, "the first play fetched \(sent) bytes of a \(size)-byte file")

        let daemon = try RunningDaemon(bus: bus, home: home.url)
        try await daemon.waitUntilReady()
        #expect(try daemon.playerctl("open", url).status == 0)
        _ = try daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.5 }
        #expect(try daemon.playerctl("metadata", "title").stdout.contains(track.title))
        let replay = server.accessLog().filter { $0.path.hasSuffix(track.fileName) }.dropFirst(fetched.count)
        // At most a background revalidation: conditional, answered 304, no body.
        #expect(replay.count <= 1, "\(Array(replay))")
        #expect(replay.allSatisfy { $0.status == 304 && $0.bodyBytesSent == 0 && $0.ifNoneMatch != nil }, "\(Array(replay))")
    }
}
