import DBusKit
import Foundation
import TestSupport
import Testing

/// Whether process `pid` holds `file` open.
private func holdsOpen(_ file: URL, pid: Int32) -> Bool {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
    return fds.contains {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) == file.path
    }
}

@Suite("Letting go of the pipeline when idle, end to end", .serialized)
struct IdleReleaseEndToEndTests {
    /// A private copy of a fixture, so that only this test's daemon opens it.
    func copy(_ format: FixtureFormat, in dir: TemporaryDirectory) throws -> URL {
        let fixture = try Fixtures.shared().fixture(format)
        let file = dir.file("idle-\(UUID().uuidString).\(fixture.url.pathExtension)")
        try FileManager.default.copyItem(at: fixture.url, to: file)
        return file
    }

    /// Waits until the daemon logs that it let go of its pipeline `count` times, reading MPRIS
    /// Position meanwhile; returns the positions read.
    func awaitRelease(_ daemon: RunningDaemon, _ remote: DBusMPRISRemote, count: Int = 1) async throws -> [Int64] {
        var positions: [Int64] = []
        let deadline = Date().addingTimeInterval(10)
        while daemon.process.standardError.components(separatedBy: "released the pipeline").count - 1 < count {
            guard Date() < deadline else { throw RigError("no release; daemon log:\n\(daemon.process.standardError)") }
            positions.append(try await remote.positionMicroseconds())
            try await Task.sleep(for: .milliseconds(50))
        }
        return positions
    }

    @Test func aLongPauseLetsGoOfThePipelineAndPlayContinuesInPlace() async throws {
        let dir = try TemporaryDirectory()
        let file = try copy(.flac, in: dir)
        let daemon = try RunningDaemon(extraArguments: ["--idle-release", "1s"])
        try await daemon.waitUntilReady()
        let remote = DBusMPRISRemote(connection: daemon.client, busName: busName)
        let pid = try #require(daemon.process.programPID)
        try await remote.openURI(file.absoluteString)
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 1.0 }
        try await remote.pause()
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Paused" }
        let pausedAt = try await remote.positionMicroseconds()
        #expect(holdsOpen(file, pid: pid), "the paused pipeline reads the file")

        let whileWaiting = try await awaitRelease(daemon, remote)
        #expect(!holdsOpen(file, pid: pid), "released: the file is closed")
        let whileReleased = try await remote.positionMicroseconds()
        #expect(
            (whileWaiting + [whileReleased]).allSatisfy { $0 == pausedAt },
            "Position stayed at \(pausedAt): \(whileWaiting), \(whileReleased)")
        #expect(try await remote.playbackStatus() == "Paused")

        let started = Date()
        try await remote.play()
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
        // Until the track advances past where it was, every Position read lies within what
        // played since Play; a restart from the beginning reads near 0.
        var resumed: [(at: Double, position: Int64)] = []
        while resumed.last.map({ $0.position < pausedAt + 300_000 }) ?? true, Date().timeIntervalSince(started) < 5 {
            resumed.append((Date().timeIntervalSince(started), try await remote.positionMicroseconds()))
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(resumed.last.map { $0.position >= pausedAt + 300_000 } == true, "it plays on: \(resumed)")
        for read in resumed {
            #expect(
                read.position >= pausedAt - 300_000
                    && Double(read.position) <= Double(pausedAt) + (read.at + 0.3) * 1e6,
                "paused at \(pausedAt) µs; \(read.position) µs \(read.at) s after Play")
        }
        #expect(holdsOpen(file, pid: pid))
        #expect(!daemon.process.standardError.contains("playback failed"), "\(daemon.process.standardError)")
    }

    @Test func aLongStopLetsGoAndPlayStartsTheTrackAgain() async throws {
        let dir = try TemporaryDirectory()
        let file = try copy(.oggOpus, in: dir)
        let daemon = try RunningDaemon(extraArguments: ["--idle-release", "1s"])
        try await daemon.waitUntilReady()
        let remote = DBusMPRISRemote(connection: daemon.client, busName: busName)
        try await remote.openURI(file.absoluteString)
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.5 }
        try await remote.stop()
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Stopped" }
        _ = try await awaitRelease(daemon, remote)
        #expect(try await remote.playbackStatus() == "Stopped")
        try await remote.play()
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.3 }
        #expect(try await remote.metadata().url == file.absoluteString)
    }
}
