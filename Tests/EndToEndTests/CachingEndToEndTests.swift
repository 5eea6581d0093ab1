import DBusKit
import Foundation
import TestSupport
import Testing

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
            #expect(try await daemon.playerctl("open", url).status == 0)
            _ = try await daemon.waitForPlayerctl(["status"], timeout: 20) { $0 == "Stopped" }  // played to the end
            daemon.process.send(SIGTERM)
            #expect(await daemon.process.waitForExit(timeout: 10) == 0)
        }
        let fetched = server.accessLog().filter { $0.path.hasSuffix(track.fileName) }
        #expect(!fetched.isEmpty)
        let sent = fetched.reduce(0) { $0 + $1.bodyBytesSent }
        let size = try Data(contentsOf: track.url).count
        #expect(sent == size, "the first play fetched \(sent) bytes of a \(size)-byte file")

        let daemon = try RunningDaemon(bus: bus, home: home.url)
        try await daemon.waitUntilReady()
        #expect(try await daemon.playerctl("open", url).status == 0)
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.5 }
        #expect(try await daemon.playerctl("metadata", "title").stdout.contains(track.title))
        let replay = server.accessLog().filter { $0.path.hasSuffix(track.fileName) }.dropFirst(fetched.count)
        // At most a background revalidation: conditional, answered 304, no body.
        #expect(replay.count <= 1, "\(Array(replay))")
        #expect(
            replay.allSatisfy { $0.status == 304 && $0.bodyBytesSent == 0 && $0.ifNoneMatch != nil }, "\(Array(replay))"
        )
    }
}

@Suite("Preload window, end to end", .serialized)
struct PreloadWindowEndToEndTests {
    /// The first track downloads at once from nginx, which fires the preload trigger: the next
    /// track is fetched whole, the one after it only its head (prefix and tail), and a
    /// replay-free start of the next one needs no revalidation request.
    @Test func theTrackAfterTheNextOneGetsItsHeadWhileTheFirstPlays() async throws {
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory()
        let first = try longTone(seconds: 30, in: dir)  // long enough to still be playing
        let second = fixtures.fixture(.oggVorbis)
        let third = fixtures.fixture(.wav)  // 600 kB: more than a head
        for fixture in [second, third] {
            try FileManager.default.copyItem(at: fixture.url, to: dir.file(fixture.fileName))
        }
        try Data("\(first.lastPathComponent)\n\(second.fileName)\n\(third.fileName)\n".utf8).write(
            to: dir.file("list.m3u"))
        let server = try NginxServer(serving: dir.url)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        #expect(try await daemon.playerctl("open", server.url(for: "list.m3u").absoluteString).status == 0)
        let size = try Data(contentsOf: third.url).count
        let head = 512 * 1024 + 64 * 1024
        #expect(size > head)
        var fetched = 0
        let cached = await eventually(timeout: 20, interval: 0.05) {
            fetched = server.accessLog().filter { $0.path.hasSuffix(third.fileName) }.reduce(0) {
                $0 + $1.bodyBytesSent
            }
            return fetched >= head
        }
        #expect(cached, "track 3 fetched \(fetched) bytes")
        let secondSize = try Data(contentsOf: second.url).count
        #expect(
            await eventually(timeout: 10, interval: 0.05) {
                server.accessLog().filter { $0.path.hasSuffix(second.fileName) }.reduce(0) { $0 + $1.bodyBytesSent }
                    == secondSize
            })
        // nginx logs a request once it has sent the body, before the daemon has taken in its last
        // bytes: the daemon's own report is waited for, not read at once.
        _ = try await awaitValue(
            "the preloads: the small next track whole, then the head of the one after", timeout: 10,
            daemon.preloads, until: { $0.map(\.stage) == ["complete", "head-ready"] })
        let thirdRequests = server.accessLog().filter { $0.path.hasSuffix(third.fileName) }
        #expect(
            thirdRequests.map(\.range) == ["bytes=0-524287", "bytes=\(size - 65_536)-\(size - 1)"], "\(thirdRequests)")
        #expect(fetched == head, "only the head of the track after the next")
        #expect(
            !server.accessLog().contains { $0.status == 304 || $0.ifNoneMatch != nil }, "no revalidation of fresh bytes"
        )
        #expect(
            try await daemon.playerctl("metadata", "xesam:url").stdout.contains(first.lastPathComponent),
            "still on the first track")
    }
}
