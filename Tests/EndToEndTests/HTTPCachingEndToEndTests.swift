import DBusKit
import Foundation
import TestSupport
import Testing

/// The real daemon follows the origin's caching headers: a fresh copy replays after a restart
/// with no request, a `no-cache` one is checked first, a `no-store` one plays and never
/// reaches the disk. The origin runs at about 3× the audio's bitrate, so playback reads while
/// the download runs.
@Suite("HTTP caching, end to end", .serialized)
struct HTTPCachingEndToEndTests {
    /// The track, served with `headers` at 3× its bitrate; its URL and its path's requests.
    private struct Served {
        let origin: FaultOrigin
        let fixture: Fixture
        let url: String
        var requests: [ServedRequest] { origin.requests().filter { $0.path == "/\(fixture.fileName)" } }
    }

    private func serve(_ headers: [String: String]) throws -> Served {
        let fixture = try Fixtures.shared().fixture(.mp3CBR)
        let body = try Data(contentsOf: fixture.url)
        let origin = try FaultOrigin()
        let rate = Int(Double(body.count) / fixture.duration * 3)
        origin.serve(
            OriginResource(body, etag: "\"v1\"", contentType: "audio/mpeg", headers: headers),
            at: "/\(fixture.fileName)", faults: OriginFaults(bytesPerSecond: rate))
        return Served(origin: origin, fixture: fixture, url: origin.url(for: "/\(fixture.fileName)").absoluteString)
    }

    /// Plays `url` in a daemon of `home` until `playerctl ARGUMENTS` answers what `accept`
    /// takes, then stops the daemon.
    private func play(
        _ url: String, bus: PrivateBus, home: URL, until arguments: [String], _ accept: (String) -> Bool
    ) async throws {
        let daemon = try RunningDaemon(bus: bus, home: home)
        try await daemon.waitUntilReady()
        #expect(try await daemon.playerctl("open", url).status == 0)
        _ = try await daemon.waitForPlayerctl(arguments, timeout: 30, accept)
        daemon.process.send(SIGTERM)
        #expect(await daemon.process.waitForExit(timeout: 10) == 0)
    }

    /// Plays `url` to its end in a daemon of `home`, then stops it: the whole file is cached.
    private func playToTheEnd(_ url: String, bus: PrivateBus, home: URL) async throws {
        try await play(url, bus: bus, home: home, until: ["status"]) { $0 == "Stopped" }
    }

    /// The track served with `headers`, played to its end once by a daemon of a new home
    /// on a new bus (which the caller's next daemon shares), and the requests that took.
    private func cachedOnce(
        _ headers: [String: String]
    ) async throws -> (served: Served, home: TemporaryDirectory, bus: PrivateBus, first: Int) {
        let served = try serve(headers)
        let home = try TemporaryDirectory(prefix: "spool-home")
        let bus = try PrivateBus()
        try await playToTheEnd(served.url, bus: bus, home: home.url)
        let first = served.requests.count
        #expect(first > 0)
        return (served, home, bus, first)
    }

    @Test func aFreshResponseReplaysAfterARestartWithNoRequest() async throws {
        let (served, home, bus, first) = try await cachedOnce(["Cache-Control": "max-age=3600"])
        try await play(served.url, bus: bus, home: home.url, until: ["position"]) { (Double($0) ?? 0) > 0.5 }
        #expect(served.requests.count == first, "fresh for an hour: \(served.requests.dropFirst(first))")
    }

    @Test func aNoCacheResponseIsCheckedWithTheOriginBeforeItReplays() async throws {
        let (served, home, bus, first) = try await cachedOnce(["Cache-Control": "no-cache"])
        // Two plays in one run: the daemon's own once-an-hour rule would check only the first.
        let daemon = try RunningDaemon(bus: bus, home: home.url)
        try await daemon.waitUntilReady()
        for play in 1...2 {
            #expect(try await daemon.playerctl("open", served.url).status == 0)
            #expect(await eventually(timeout: 10) { served.requests.count == first + play }, "play \(play)")
            _ = try await daemon.waitForPlayerctl(["position"], timeout: 20) { (Double($0) ?? 0) > 0.5 }
        }
        daemon.process.send(SIGTERM)
        #expect(await daemon.process.waitForExit(timeout: 10) == 0)
        let replay = Array(served.requests.dropFirst(first))
        #expect(replay.count == 2, "\(replay)")
        #expect(
            replay.allSatisfy { $0.status == 304 && $0.ifNoneMatch == "\"v1\"" && $0.bodyBytesSent == 0 }, "\(replay)")
    }

    @Test func aNoStoreResponsePlaysAndLeavesNoByteOnDisk() async throws {
        // A 20 s tone: the fixture's 3.6 s ended before a starved poll read 1.5 s of it once.
        let tone = try NetworkMedia.tone(.mp3CBR, seconds: 20)
        let origin = try FaultOrigin()
        let body = try Data(contentsOf: tone)
        origin.serve(
            OriginResource(body, etag: "\"v1\"", contentType: "audio/mpeg", headers: ["Cache-Control": "no-store"]),
            at: "/long.mp3", faults: OriginFaults(bytesPerSecond: body.count * 3 / 20))
        let served = (origin: origin, url: origin.url(for: "/long.mp3").absoluteString)
        let home = try TemporaryDirectory(prefix: "spool-home")
        let bus = try PrivateBus()
        let data = home.url.appendingPathComponent("cache/spool/data")
        let daemon = try RunningDaemon(bus: bus, home: home.url)
        try await daemon.waitUntilReady()
        #expect(try await daemon.playerctl("open", served.url).status == 0)
        _ = try await daemon.waitForPlayerctl(["position"], timeout: 20) { (Double($0) ?? 0) > 1.5 }
        let whilePlaying = try files(in: data)
        #expect(whilePlaying.isEmpty, "written while playing: \(whilePlaying)")
        daemon.process.send(SIGTERM)
        #expect(await daemon.process.waitForExit(timeout: 10) == 0)
        let afterwards = try files(in: data)
        #expect(afterwards.isEmpty, "left after the daemon stopped: \(afterwards)")
        let sent = served.origin.requests().filter { $0.path == "/long.mp3" }.reduce(0) { $0 + $1.bodyBytesSent }
        #expect(sent > 0, "it did play from the network")
    }

    /// A stale copy starts at once while its check travels; a new version the origin answers
    /// just after starts the track again on that version: no error, and what plays (and is
    /// cached) is the new file, fetched once.
    @Test func aNewVersionAnsweredJustAfterAReplayBeganIsPlayedInstead() async throws {
        let (served, home, bus, first) = try await cachedOnce(["Cache-Control": "max-age=0"])
        let newer = try Data(contentsOf: NetworkMedia.tone(.mp3CBR, seconds: 12, frequency: 660))
        served.origin.serve(
            OriginResource(newer, etag: "\"v2\"", contentType: "audio/mpeg", headers: ["Cache-Control": "max-age=0"]),
            at: "/\(served.fixture.fileName)", faults: OriginFaults(firstByteLatency: 0.4))
        let daemon = try RunningDaemon(bus: bus, home: home.url, extraEnvironment: ["SPOOL_REVALIDATE_WAIT": "3s"])
        try await daemon.waitUntilReady()
        #expect(try await daemon.playerctl("open", served.url).status == 0)
        // The new version is 12 s long, the cached one not.
        _ = try await daemon.waitForPlayerctl(["metadata", "mpris:length"], timeout: 20) {
            abs((Double($0) ?? 0) - 12_000_000) < 200_000
        }
        _ = try await daemon.waitForPlayerctl(["position"], timeout: 20) { (Double($0) ?? 0) > 0.5 }
        #expect(
            try await daemon.playerctl("status").stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "Playing")
        daemon.process.send(SIGTERM)
        #expect(await daemon.process.waitForExit(timeout: 10) == 0)
        let log = daemon.process.standardError
        #expect(log.contains("starting it again"), "\(log)")
        #expect(!log.contains("playback failed"), "a new version is no failure for the listener: \(log)")
        let replay = Array(served.requests.dropFirst(first))
        #expect(replay.first?.range == "bytes=0-0" && replay.first?.ifNoneMatch == "\"v1\"", "\(replay)")
        #expect(replay.dropFirst().reduce(0) { $0 + $1.bodyBytesSent } == newer.count, "\(replay)")
    }

    /// The files in `folder`; none when it does not exist.
    private func files(in folder: URL) throws -> [String] {
        guard FileManager.default.fileExists(atPath: folder.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: folder.path)
    }
}
