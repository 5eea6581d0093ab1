import DBusKit
import Foundation
import Synchronization
import TestSupport

/// A listener at a busy pace: one random action every 0.3–2.5 s, over MPRIS and Spool's own
/// interface, and now and then through the `spool` command (a new bus client each time).
/// It keeps the queue between 8 and 28 tracks and starts playback again when it stopped on
/// its own for 3 s (counted: a queue that stops by itself is a finding).
struct ActionDriver: Sendable {
    let client: SoakClient
    let ledger: Ledger
    /// Every track URI the queue draws from (http and file).
    let pool: [String]
    /// The http URIs (for prefetches).
    let httpPool: [String]
    /// The `spool` executable and the environment that reaches the daemon's bus.
    let spool: String
    let environment: [String: String]

    /// The actions and their weights.
    static let weights: [(String, Int)] = [
        ("seek", 14), ("seek relative", 8), ("next", 8), ("previous", 6), ("go to", 4), ("rate", 8),
        ("pause/play", 6), ("stop/play", 2), ("volume", 3), ("queue add", 6), ("queue remove", 5),
        ("cache clear", 3), ("shuffle", 2), ("loop", 2), ("replace queue", 1), ("open uri", 1), ("prefetch", 1),
        ("command", 10),
    ]

    /// Acts until `deadline`.
    func run(seed: UInt64, until deadline: ContinuousClock.Instant) async {
        var random = SeededGenerator(seed: seed)
        var notPlayingSince: Double?
        let total = Self.weights.reduce(0) { $0 + $1.1 }
        while ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(300 + random.next(below: 2200)))
            guard ContinuousClock.now < deadline else { break }
            let status = await client.get("driver: reads", SoakClient.player, "PlaybackStatus")?.stringValue
            if status == "Playing" {
                notPlayingSince = nil
            } else if let since = notPlayingSince, ledger.elapsed - since >= 3 {
                await client.call("action: play (playback had stopped by itself)", SoakClient.player, "Play")
                notPlayingSince = nil
            } else if notPlayingSince == nil {
                notPlayingSince = ledger.elapsed
            }
            guard let tracks = await client.tracks("driver: reads") else { continue }
            if tracks.count < 8 {
                await add(count: 3, after: tracks.last, &random)
                continue
            }
            if tracks.count > 28 {
                await client.call(
                    "action: queue remove", SoakClient.trackList, "RemoveTrack",
                    [.objectPath(tracks[random.next(below: tracks.count)])])
                continue
            }
            var pick = random.next(below: total)
            let kind = Self.weights.first {
                pick -= $0.1
                return pick < 0
            }!.0
            await perform(kind, tracks: tracks, &random)
        }
    }

    private func perform(_ kind: String, tracks: [String], _ random: inout SeededGenerator) async {
        let label = "action: \(kind)"
        switch kind {
        case "seek":
            guard let now = await client.nowPlaying("driver: reads"), let length = now.length, length > 2_000_000 else {
                return
            }
            let target = Int64(random.next(below: Int(length - 1_500_000)))
            await client.call(label, SoakClient.player, "SetPosition", [.objectPath(now.id), .int64(target)])
        case "seek relative":
            let offset = Int64(random.next(below: 40) - 15) * 1_000_000
            await client.call(label, SoakClient.player, "Seek", [.int64(offset)])
        case "next": await client.call(label, SoakClient.player, "Next")
        case "previous": await client.call(label, SoakClient.player, "Previous")
        case "go to":
            await client.call(
                label, SoakClient.trackList, "GoTo", [.objectPath(tracks[random.next(below: tracks.count)])])
        case "rate":
            let rates = [0.5, 0.75, 1.25, 1.5, 2.0]
            let rate = random.next(below: 5) < 2 ? 1.0 : rates[random.next(below: rates.count)]
            await client.set(label, SoakClient.player, "Rate", .double(rate))
        case "pause/play", "stop/play":
            await client.call(label, SoakClient.player, kind == "stop/play" ? "Stop" : "Pause")
            try? await Task.sleep(for: .milliseconds(300 + random.next(below: 1700)))
            await client.call(label, SoakClient.player, "Play")
        case "volume":
            await client.set(label, SoakClient.player, "Volume", .double(Double(20 + random.next(below: 81)) / 100))
        case "queue add":
            await add(count: 1 + random.next(below: 2), after: tracks[random.next(below: tracks.count)], &random)
        case "queue remove":
            await client.call(
                label, SoakClient.trackList, "RemoveTrack", [.objectPath(tracks[random.next(below: tracks.count)])])
        case "cache clear": await client.call(label, SoakClient.spool, "ClearCache", [.string("")])
        case "shuffle": await client.set(label, SoakClient.player, "Shuffle", .boolean(random.next(below: 2) == 0))
        case "loop":
            // Never None: the queue would run out and stop, which is not what this measures.
            await client.set(
                label, SoakClient.player, "LoopStatus", .string(random.next(below: 3) == 0 ? "Track" : "Playlist"))
        case "replace queue":
            let uris = (0..<(10 + random.next(below: 8))).map { _ in pool[random.next(below: pool.count)] }
            await client.call(label, SoakClient.spool, "Play", [.stringArray(uris)])
        case "open uri":
            await client.call(label, SoakClient.player, "OpenUri", [.string(pool[random.next(below: pool.count)])])
        case "prefetch":
            await client.call(
                label, SoakClient.spool, "Prefetch", [.stringArray([httpPool[random.next(below: httpPool.count)]])])
        default: await command(&random)
        }
    }

    /// Adds `count` random tracks: TrackList.AddTrack after `after`, or Spool1.Add at the end.
    private func add(count: Int, after: String?, _ random: inout SeededGenerator) async {
        for _ in 0..<count {
            let uri = pool[random.next(below: pool.count)]
            if let after, random.next(below: 2) == 0 {
                await client.call(
                    "action: queue add", SoakClient.trackList, "AddTrack",
                    [.string(uri), .objectPath(after), .boolean(false)])
            } else {
                await client.call("action: queue add", SoakClient.spool, "Add", [.stringArray([uri])])
            }
        }
    }

    /// One `spool` command, as a user at a terminal types them.
    private func command(_ random: inout SeededGenerator) async {
        let choices: [[String]] = [
            ["status"], ["queue"], ["seek", "+\(5 + random.next(below: 20))"],
            ["seek", "-\(5 + random.next(below: 20))"],
            ["seek", "\(10 + random.next(below: 70))%"], ["next"], ["prev"], ["cache", "stats"], ["cache", "ls"],
            ["cache", "clear"], ["rate", ["1", "1.25", "0.8"][random.next(below: 3)]],
            ["volume", "\(30 + random.next(below: 70))"],
            ["add", pool[random.next(below: pool.count)]], ["toggle"],
        ]
        let arguments = choices[random.next(below: choices.count)]
        let label = "action: spool \(arguments[0] == "cache" ? "cache " + arguments[1] : arguments[0])"
        await run(arguments, label: label)
        if arguments == ["toggle"] {
            // Toggled back after a moment, as a listener does: playback that stays paused is
            // the watchdog's to notice, and it should notice only the daemon's own stops.
            try? await Task.sleep(for: .milliseconds(300 + random.next(below: 1700)))
            await run(arguments, label: label)
        }
    }

    private func run(_ arguments: [String], label: String) async {
        let at = ledger.elapsed
        let started = ContinuousClock.now
        let (spool, environment) = (self.spool, self.environment)
        // runCommand blocks: off the two cooperative threads, which the pollers need.
        let outcome: CallOutcome = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                do {
                    let result = try runCommand(spool, arguments, environment: environment, timeout: 10)
                    continuation.resume(
                        returning: result.status == 0
                            ? .answered([])
                            : .refused(
                                "exit \(result.status): \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))"
                            ))
                } catch {
                    continuation.resume(returning: .unanswered("\(error)"))
                }
            }
        }
        ledger.record(
            label, outcome, what: "spool " + arguments.joined(separator: " "), at: at, latency: seconds(from: started))
    }
}
