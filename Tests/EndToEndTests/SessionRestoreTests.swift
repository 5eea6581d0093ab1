import DBusKit
import Foundation
import TestSupport
import Testing

/// A steady tone of `seconds`, as FLAC, for tests that need a track longer than the fixtures.
func longTone(seconds: Int, in directory: TemporaryDirectory) throws -> URL {
    let file = directory.file("long-\(seconds).flac")
    let made = try runCommand(
        "gst-launch-1.0",
        [
            "-q", "audiotestsrc", "num-buffers=\(seconds * 44_100 / 1024)", "freq=300", "!", "audioconvert", "!",
            "flacenc", "!", "filesink", "location=\(file.path)",
        ])
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
            #expect(try await daemon.playerctl("open", long.absoluteString).status == 0)
            _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
            let reached = try await daemon.waitForPlayerctl(["position"], timeout: 20) { (Double($0) ?? 0) > 6.5 }
            before = Double(reached) ?? 0
            daemon.process.send(SIGKILL)
            #expect(await daemon.process.waitForExit(timeout: 10) != nil)
        }

        let daemon = try RunningDaemon(bus: bus, home: home.url)
        try await daemon.waitUntilReady()
        // The restarted daemon's own words, should it be gone (it was once, cause not yet known).
        let status = try await daemon.playerctl("status").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(
            status == "Paused",
            "running: \(daemon.process.isRunning); its log:\n\(daemon.process.standardError.split(separator: "\n").suffix(30).joined(separator: "\n"))"
        )
        #expect(try await daemon.playerctl("metadata", "xesam:url").stdout.contains(long.lastPathComponent))
        let restored =
            Double(try await daemon.playerctl("position").stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        #expect(restored <= before && restored >= before - 5, "restored at \(restored), killed at \(before)")
        let canPlay = try await daemon.client.call(
            destination: busName, path: "/org/mpris/MediaPlayer2", interface: "org.freedesktop.DBus.Properties",
            method: "Get", arguments: [.string("org.mpris.MediaPlayer2.Player"), .string("CanPlay")])
        #expect(canPlay.first?.variantValue?.boolValue == true)

        // Play continues from there.
        #expect(try await daemon.playerctl("play").status == 0)
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
        let resumed = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0 }
        // Play rewinds by resume.rewind (2 s), as a track's own resume does.
        #expect((Double(resumed) ?? 0) >= restored - 2.5, "played from \(resumed), restored \(restored)")
    }

    @Test func aRestoredSessionNamesItsTrackBeforePlay() async throws {
        let fixtures = try Fixtures.shared()
        let track = try #require(fixtures.withCover.first { $0.format == .flac })
        let home = try TemporaryDirectory(prefix: "spool-home")
        let bus = try PrivateBus()
        do {
            let daemon = try RunningDaemon(bus: bus, home: home.url)
            try await daemon.waitUntilReady()
            #expect(try await daemon.playerctl("open", track.url.absoluteString).status == 0)
            _ = try await daemon.waitForPlayerctl(["metadata", "mpris:artUrl"]) { !$0.isEmpty }
            _ = try await daemon.waitForPlayerctl(["metadata", "mpris:length"]) { (Int($0) ?? 0) > 0 }
            #expect(try await daemon.playerctl("pause").status == 0)
            _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Paused" }
            daemon.process.send(SIGTERM)
            #expect(await daemon.process.waitForExit(timeout: 10) == 0)
        }
        let daemon = try RunningDaemon(bus: bus, home: home.url)
        try await daemon.waitUntilReady()
        #expect(try await daemon.playerctl("status").stdout == "Paused\n")
        // Before Play: the tags, the length and the art, not the file name and "?".
        #expect(try await daemon.playerctl("metadata", "title").stdout == "\(track.title)\n")
        #expect(try await daemon.playerctl("metadata", "artist").stdout == "\(track.artist)\n")
        let length =
            Double(
                try await daemon.playerctl("metadata", "mpris:length").stdout.trimmingCharacters(
                    in: .whitespacesAndNewlines))
            ?? 0
        #expect(abs(length / 1e6 - track.duration) < 0.1, "length \(length) µs")
        let art = try await daemon.playerctl("metadata", "mpris:artUrl").stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(URL(string: art).map { FileManager.default.fileExists(atPath: $0.path) } == true, "art \(art)")
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
            #expect(try await daemon.playerctl("open", long.absoluteString).status == 0)
            _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 1.0 }
            #expect(try await daemon.playerctl("pause").status == 0)
            _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Paused" }
            pausedAt = try await daemon.playerctl("position").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            daemon.process.send(SIGTERM)
            #expect(await daemon.process.waitForExit(timeout: 10) == 0)
        }
        let daemon = try RunningDaemon(bus: bus, home: home.url)
        try await daemon.waitUntilReady()
        let restored = try await daemon.playerctl("position").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(
            abs((Double(restored) ?? -1) - (Double(pausedAt) ?? -2)) < 0.05,
            "paused at \(pausedAt), restored \(restored)")
    }
}

/// What a client sees of the session: queue (URLs in order), current entry, position, status.
struct SessionView: CustomStringConvertible, Equatable {
    var queue: [String]
    var current: String?
    var position: Double
    var status: String

    var description: String {
        "current \(current.map { URL(string: $0)?.lastPathComponent ?? $0 } ?? "none") at \(position) s (\(status)) of "
            + queue.map { URL(string: $0)?.lastPathComponent ?? $0 }.joined(separator: ", ")
    }
}

/// The moments a kill -9 lands in.
private enum KillMoment: CaseIterable {
    case playing, afterQueueEdit, afterSeek, duringTrackChange, paused
}

extension RunningDaemon {
    func sessionView() async throws -> SessionView {
        let reply = try await mpris("org.spool.Spool1", "Queue")
        let entries = reply.first?.arrayValues?.compactMap(\.stringVariantDictValue) ?? []
        let position = try await property("org.mpris.MediaPlayer2.Player", "Position")?.int64Value ?? -1_000_000_000
        let status = try await property("org.mpris.MediaPlayer2.Player", "PlaybackStatus")?.stringValue ?? "?"
        return SessionView(
            queue: entries.compactMap { $0["xesam:url"]?.stringValue },
            current: entries.first { $0["spool:current"]?.boolValue == true }?["xesam:url"]?.stringValue,
            position: Double(position) / 1_000_000, status: status)
    }

    /// The MPRIS track ids of the queue, in order.
    /// The TrackList ids of the queue's entries other than the current one, and the queue's length.
    fileprivate func otherTrackIDs() async throws -> (others: [DBusValue], queueLength: Int) {
        let view = try await sessionView()
        let ids = try await property("org.mpris.MediaPlayer2.TrackList", "Tracks")?.arrayValues ?? []
        return (zip(view.queue, ids).filter { $0.0 != view.current }.map(\.1), view.queue.count)
    }
}

@Suite("Session restore after kill -9 at random moments", .serialized)
struct RandomKillTests {
    @Test func killedAtRandomMomentsItRestoresTheQueueAndLosesAtMostFiveSeconds() async throws {
        let seed =
            ProcessInfo.processInfo.environment["SPOOL_TEST_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64(UInt32.max))
        var random = SeededGenerator(seed: seed)
        let replay = "seed \(seed); SPOOL_TEST_SEED=\(seed) replays it"
        print("kill -9 at random moments: \(replay)")
        func uniform(_ range: ClosedRange<Double>) -> Double {
            range.lowerBound + Double(random.next() % 1_000_001) / 1_000_000 * (range.upperBound - range.lowerBound)
        }

        let media = try TemporaryDirectory()
        let lengths = [40, 30, 25, 20, 15]
        var seconds: [String: Double] = [:]
        var files: [URL] = []
        for length in lengths {
            let file = try longTone(seconds: length, in: media)
            seconds[file.absoluteString] = Double(length)
            files.append(file)
        }
        let home = try TemporaryDirectory(prefix: "spool-home")
        let bus = try PrivateBus()
        var daemon = try RunningDaemon(bus: bus, home: home.url)
        try await daemon.waitUntilReady()
        try await daemon.mpris("org.spool.Spool1", "Play", [.stringArray(files.prefix(4).map(\.absoluteString))])
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }

        var moments = KillMoment.allCases
        moments.shuffle(using: &random)
        for (round, moment) in moments.enumerated() {
            let context = "round \(round) (\(moment)), \(replay)"
            // A daemon that is gone is named with how it ended and what it said last.
            func gone(_ error: any Error) async -> any Error {
                let state =
                    daemon.process.isRunning
                    ? "still running" : "exited (\(await daemon.process.waitForExit(timeout: 0) ?? -1))"
                let tail = daemon.process.standardError.split(separator: "\n").suffix(30).joined(separator: "\n")
                return RigError(
                    "\(error); \(context); the daemon (pid \(daemon.process.pid)) is \(state); its log ends:\n\(tail)")
            }
            do {
                if try daemon.query("status") != "Playing" {
                    let restored = try await daemon.sessionView().position
                    #expect(try await daemon.playerctl("play").status == 0)
                    _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
                    let playing = Double(try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0 }) ?? 0
                    #expect(playing >= restored - 2.5, "Play went on from \(playing), restored \(restored); \(context)")
                }
                switch moment {
                case .playing:
                    // The random moment itself; up to past the second periodic save.
                    try await Task.sleep(for: .seconds(uniform(0.5...11)))
                case .afterQueueEdit:
                    try await Task.sleep(for: .seconds(uniform(0.3...2)))
                    let (removable, queueLength) = try await daemon.otherTrackIDs()
                    if queueLength > 3, !removable.isEmpty, random.next(below: 2) == 0 {
                        try await daemon.mpris(
                            "org.mpris.MediaPlayer2.TrackList", "RemoveTrack",
                            [removable[random.next(below: removable.count)]])
                    } else {
                        try await daemon.mpris("org.spool.Spool1", "Add", [.stringArray([files[4].absoluteString])])
                    }
                case .afterSeek:
                    try await Task.sleep(for: .seconds(uniform(0.3...1.5)))
                    let view = try await daemon.sessionView()
                    let length = view.current.flatMap { seconds[$0] } ?? 15
                    let forward = uniform(4...10)
                    let offset = view.position + forward < length - 3 ? forward : -min(view.position, uniform(3...6))
                    try await daemon.mpris("org.mpris.MediaPlayer2.Player", "Seek", [.int64(Int64(offset * 1_000_000))])
                    try await Task.sleep(for: .seconds(uniform(0...0.2)))
                case .duringTrackChange:
                    try await Task.sleep(for: .seconds(uniform(0.3...1.5)))
                    let others = try await daemon.otherTrackIDs().others
                    try await daemon.mpris(
                        "org.mpris.MediaPlayer2.TrackList", "GoTo", [others[random.next(below: others.count)]])
                    try await Task.sleep(for: .seconds(uniform(0...0.4)))
                case .paused:
                    try await Task.sleep(for: .seconds(uniform(0.5...2)))
                    #expect(try await daemon.playerctl("pause").status == 0)
                    try await Task.sleep(for: .seconds(uniform(0...1)))
                }

                let before = try await daemon.sessionView()
                daemon.process.send(SIGKILL)
                #expect(await daemon.process.waitForExit(timeout: 10) != nil, "\(context)")
                daemon = try RunningDaemon(bus: bus, home: home.url)
                try await daemon.waitUntilReady()
                let after = try await daemon.sessionView()
                print("round \(round) (\(moment)): killed with \(before); restored \(after)")
                #expect(after.queue == before.queue, "killed with \(before), restored \(after); \(context)")
                #expect(after.current == before.current, "killed with \(before), restored \(after); \(context)")
                #expect(
                    after.position <= before.position + 0.5 && after.position >= before.position - 5,
                    "killed at \(before.position) s, restored at \(after.position) s; \(context)")
                #expect(after.status == "Paused", "\(context)")
            } catch {
                throw await gone(error)
            }
        }

        // Play continues from the last restored position.
        let restored = try await daemon.sessionView()
        #expect(try await daemon.playerctl("play").status == 0)
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
        let resumed = try await daemon.sessionView()
        #expect(
            resumed.current == restored.current && resumed.position >= restored.position - 2.5,
            "\(restored) → \(resumed)")
    }
}
