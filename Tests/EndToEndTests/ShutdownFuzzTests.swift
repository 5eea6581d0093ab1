import DBusKit
import Foundation
import TestSupport
import Testing

/// What the daemon is doing when it is told to stop.
enum ShutdownActivity: String, CaseIterable, Sendable {
    /// Nothing loaded.
    case idle
    /// An http track from an origin that delivers slowly, opening or just started.
    case loading
    /// A local track playing.
    case playing
    /// A seek just asked for, landing or just landed.
    case seeking
    /// A short track ending and the next starting: the hand-over window.
    case handOver
    /// A local track paused.
    case paused
    /// Paused past the idle release: the pipeline let go of.
    case pausedPastRelease
    /// Playing into a sound server that then goes away.
    case soundServerGone
    /// A daemon just started, before (or just after) it takes its bus name, over a saved session.
    case beforeTheName
}

/// A way the daemon is told to stop.
enum ShutdownStop: String, CaseIterable, Sendable {
    case sigterm, sigint, sighup, mprisQuit, spoolQuit, busGone, busGoneThenSIGTERM

    /// The stops that need no answer from the daemon (it may not own its name yet).
    static let unanswered: [ShutdownStop] = [.sigterm, .sigint, .sighup, .busGone, .busGoneThenSIGTERM]

    /// Whether the stop takes the bus away (the next daemon needs a new one).
    var endsTheBus: Bool { self == .busGone || self == .busGoneThenSIGTERM }
}

/// One run: an activity, a stop, and the seconds from the activity's start to the stop.
struct ShutdownRun: CustomStringConvertible, Sendable {
    let activity: ShutdownActivity
    let stop: ShutdownStop
    let moment: Double
    var description: String { "\(activity.rawValue) + \(stop.rawValue) at \(String(format: "%.2f", moment)) s" }

    /// `count` runs from `seed`: each cycle takes every activity once, in a shuffled order, and
    /// gives them a shuffled cycle of the stops, so a cycle covers all of both (the start-up takes
    /// one that needs no answer; activities past the stops' count take any).
    static func plan(seed: UInt64, count: Int) -> [ShutdownRun] {
        var random = SeededGenerator(seed: seed)
        var runs: [ShutdownRun] = []
        while runs.count < count {
            var stops = ShutdownStop.allCases.shuffled(using: &random)
            let early = stops.remove(at: stops.firstIndex { ShutdownStop.unanswered.contains($0) } ?? 0)
            for activity in ShutdownActivity.allCases.shuffled(using: &random) where runs.count < count {
                let stop =
                    activity == .beforeTheName
                    ? early
                    : stops.isEmpty
                        ? ShutdownStop.allCases[random.next(below: ShutdownStop.allCases.count)] : stops.removeFirst()
                let reach = activity == .beforeTheName ? 0.4 : 1.5
                let moment = Double(random.next() % 1_000_001) / 1_000_000 * reach
                runs.append(ShutdownRun(activity: activity, stop: stop, moment: moment))
            }
        }
        return runs
    }
}

/// What a stopped daemon left behind, and what the next start must restore.
private struct Expectation {
    var before: SessionView
    /// Where the restored position may lie.
    var positions: ClosedRange<Double>
    /// A track that may be current instead of `before.current`, at its start (a hand-over that
    /// completed between the look and the stop).
    var orNext: String?
}

/// The daemon stopped every way it can be, at random moments of what it does, then started
/// again: every stop exits 0 (no signal, no trap), says once that it stops, and the next start
/// restores the queue, the track and the position. `SPOOL_TEST_SEED` and `SPOOL_SHUTDOWN_RUNS`
/// replay or lengthen it (`bench/shutdown-fuzz.sh` runs hundreds).
@Suite("Shutdown at random moments", .serialized)
struct ShutdownFuzzTests {
    @Test func everyStopAtAnyMomentExitsCleanlyAndTheNextStartRestores() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["SPOOL_TEST_SEED"].flatMap { UInt64($0) } ?? 49
        let count = environment["SPOOL_SHUTDOWN_RUNS"].flatMap { Int($0) } ?? ShutdownActivity.allCases.count
        let media = try ShutdownMedia()
        var durations: [ShutdownStop: [Double]] = [:]
        for (index, run) in ShutdownRun.plan(seed: seed, count: count).enumerated() {
            let context = "run \(index) (\(run)); SPOOL_TEST_SEED=\(seed) replays it"
            let (status, seconds) = try await Self.perform(run, media: media, context: context)
            durations[run.stop, default: []].append(seconds)
            let ending = status.map { "exited \($0)" } ?? "still running"
            print("shutdown fuzz: run \(index) (\(run)): \(ending) after \(String(format: "%.3f", seconds)) s")
        }
        for (stop, list) in durations.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            let sorted = list.sorted()
            print(
                "shutdown fuzz: \(stop.rawValue): \(list.count) runs, median \(String(format: "%.3f", sorted[sorted.count / 2])) s, "
                    + "max \(String(format: "%.3f", sorted.last ?? 0)) s")
        }
    }

    /// Sets `run` up, stops the daemon, checks how it ended and what the next start restores;
    /// returns the exit status and the seconds from the look at the session (just before the
    /// stop) to the exit.
    private static func perform(_ run: ShutdownRun, media: ShutdownMedia, context: String) async throws -> (
        Int32?, Double
    ) {
        let home = try TemporaryDirectory(prefix: "spool-home")
        var bus = try PrivateBus()
        let pulse = run.activity == .soundServerGone ? try PulseServer() : nil
        var expectation: Expectation
        let daemon: RunningDaemon
        let sentAt: ContinuousClock.Instant
        if run.activity == .beforeTheName {
            let saved = try await savedSession(media: media, bus: bus, home: home, context: context)
            expectation = Expectation(before: saved, positions: saved.position - 0.05...saved.position + 0.05)
            daemon = try RunningDaemon(bus: bus, home: home.url)
            try await Task.sleep(for: .seconds(run.moment))
            sentAt = .now
        } else {
            daemon =
                if let pulse {
                    try RunningDaemon(
                        bus: bus, home: home.url, standardOptions: false,
                        extraEnvironment: ["SPOOL_LOG": "debug", "SPOOL_LOG_TIME": "1", "PULSE_SERVER": pulse.server])
                } else {
                    try RunningDaemon(bus: bus, home: home.url, extraArguments: ["--idle-release", "1s"])
                }
            try await daemon.waitUntilReady()
            let brought = try await media.bring(daemon, to: run, pulse: pulse, context: context)
            (expectation, sentAt) = (brought.0, brought.1)
        }
        try await send(run.stop, to: daemon, bus: bus)
        let status = await daemon.process.waitForExit(timeout: 60)
        let seconds = sentAt.duration(to: .now).inSeconds
        let log = daemon.process.standardError
        let tail = log.split(separator: "\n").suffix(40).joined(separator: "\n")
        #expect(status != nil, "no exit within 60 s; \(context); log:\n\(tail)")
        // A bus gone before the daemon could ask it anything is a start that failed, not a stop.
        let couldNotStart =
            status == 2 && run.activity == .beforeTheName && run.stop.endsTheBus
            && log.contains("the D-Bus session bus")
        #expect(
            status == 0 || couldNotStart, "exit status \(status.map(String.init) ?? "none"); \(context); log:\n\(tail)")
        #expect(!log.contains("Program crashed") && !log.contains("Fatal error"), "\(context); log:\n\(tail)")
        if !couldNotStart {
            let stops = log.split(separator: "\n").filter { $0.contains("stopping: ") }.count
            #expect(stops == 1, "\(stops) stops logged; \(context); log:\n\(tail)")
        }
        if run.stop.endsTheBus { bus = try PrivateBus() }

        let next = try RunningDaemon(bus: bus, home: home.url)
        try await next.waitUntilReady()
        let after = try await next.sessionView()
        expectation.positions = expectation.positions.lowerBound...(expectation.positions.upperBound + seconds)
        let what = "stopped with \(expectation.before), restored \(after); \(context)"
        #expect(after.queue == expectation.before.queue, "\(what)")
        if let moved = expectation.orNext, expectation.before.current != moved, after.current == moved {
            #expect(after.position <= seconds + 0.5, "\(what)")
        } else {
            #expect(after.current == expectation.before.current, "\(what)")
            #expect(expectation.positions.contains(after.position), "expected within \(expectation.positions); \(what)")
        }
        #expect(after.status == (after.current == nil ? "Stopped" : "Paused"), "\(what)")
        return (status, seconds)
    }

    /// A session saved by a daemon that paused a track a little way in and was told to quit.
    private static func savedSession(
        media: ShutdownMedia, bus: PrivateBus, home: TemporaryDirectory, context: String
    ) async throws -> SessionView {
        let first = try RunningDaemon(bus: bus, home: home.url)
        try await first.waitUntilReady()
        try await first.mpris("org.spool.Spool1", "Play", [.stringArray([media.long.absoluteString])])
        try await first.awaitPosition(atLeast: 0.3, context: context)
        _ = try await first.mpris("org.mpris.MediaPlayer2.Player", "Pause")
        try await first.awaitStatus("Paused", context: context)
        let saved = try await first.sessionView()
        first.process.send(SIGTERM)
        #expect(await first.process.waitForExit(timeout: 30) == 0, "the first daemon's quit; \(context)")
        return saved
    }

    private static func send(_ stop: ShutdownStop, to daemon: RunningDaemon, bus: PrivateBus) async throws {
        switch stop {
        case .sigterm: daemon.process.send(SIGTERM)
        case .sigint: daemon.process.send(SIGINT)
        case .sighup: daemon.process.send(SIGHUP)
        case .mprisQuit:
            // The daemon may be gone before its reply is written: either is a quit.
            _ = try? await daemon.mpris("org.mpris.MediaPlayer2", "Quit")
        case .spoolQuit:
            let quit = try await runCommandAwaiting(try spoolExecutable(), ["quit"], environment: bus.environment)
            #expect(quit.status == 0, "spool quit: \(quit.stderr)")
        case .busGone:
            await onOwnThread { bus.stop() }
        case .busGoneThenSIGTERM:
            await onOwnThread { bus.stop() }
            daemon.process.send(SIGTERM)
        }
    }
}

/// The tracks the runs play, made once: a long tone, a short one to hand over from, and the
/// long one again behind a slow origin.
private final class ShutdownMedia: Sendable {
    let directory: TemporaryDirectory
    let long: URL
    let short: URL
    let origin: FaultOrigin
    let slowURL: URL

    init() throws {
        directory = try TemporaryDirectory()
        long = try longTone(seconds: 30, in: directory)
        short = try longTone(seconds: 2, in: directory)
        origin = try FaultOrigin()
        let body = try Data(contentsOf: long)
        // About twice the tone's bitrate: it starts after a few round trips and is never all here.
        let bitrate = body.count / 30
        origin.serve(
            OriginResource(body, contentType: "audio/flac"), at: "/slow.flac",
            faults: OriginFaults(firstByteLatency: 0.2, bytesPerSecond: max(8_000, bitrate * 2)))
        slowURL = origin.url(for: "/slow.flac")
    }

    /// Brings `daemon` to `run`'s activity and its moment; returns what the next start must
    /// restore and the instant the look at the session began (the stop follows it at once).
    func bring(_ daemon: RunningDaemon, to run: ShutdownRun, pulse: PulseServer?, context: String) async throws
        -> (Expectation, ContinuousClock.Instant)
    {
        func play(_ urls: [URL]) async throws {
            try await daemon.mpris("org.spool.Spool1", "Play", [.stringArray(urls.map(\.absoluteString))])
        }
        var seekTarget: Double?
        var next: String?
        switch run.activity {
        case .idle, .beforeTheName:
            try await Task.sleep(for: .seconds(run.moment))
        case .loading:
            try await play([slowURL])
            try await Task.sleep(for: .seconds(run.moment))
        case .playing, .soundServerGone:
            try await play([long])
            try await daemon.awaitPosition(atLeast: 0.1, context: context)
            try await Task.sleep(for: .seconds(run.moment))
            if let pulse {
                pulse.stop()
                try await daemon.awaitStatus("Paused", context: context)
            }
        case .seeking:
            try await play([long])
            try await daemon.awaitPosition(atLeast: 0.1, context: context)
            let track = try await daemon.property("org.mpris.MediaPlayer2.Player", "Metadata")?
                .stringVariantDictValue?["mpris:trackid"]?.objectPathValue
            let target = 5 + run.moment * 10
            seekTarget = target
            try await daemon.mpris(
                "org.mpris.MediaPlayer2.Player", "SetPosition",
                [.objectPath(track ?? "/"), .int64(Int64(target * 1_000_000))])
            try await Task.sleep(for: .seconds(run.moment / 10))
        case .handOver:
            try await play([short, long])
            next = long.absoluteString
            try await daemon.awaitPosition(atLeast: 0.1, context: context)
            // The short track's end lies 1.9 s ahead: the moment reaches from before it to after.
            try await Task.sleep(for: .seconds(1 + run.moment))
        case .paused, .pausedPastRelease:
            try await play([long])
            try await daemon.awaitPosition(atLeast: 0.1, context: context)
            try await Task.sleep(for: .seconds(run.moment / 2))
            _ = try await daemon.mpris("org.mpris.MediaPlayer2.Player", "Pause")
            try await daemon.awaitStatus("Paused", context: context)
            if run.activity == .pausedPastRelease {
                let released = await eventually(timeout: 20, interval: 0.02) {
                    daemon.process.standardError.contains("released the pipeline")
                }
                #expect(released, "no idle release; \(context)")
            }
        }
        let lookedAt = ContinuousClock.now
        let before = try await daemon.sessionView()
        let positions: ClosedRange<Double> =
            if let seekTarget {
                seekTarget - 0.5...seekTarget + 0.5
            } else if before.status == "Paused" {
                before.position - 0.05...before.position + 0.05
            } else {
                max(0, before.position - 0.5)...before.position + 0.5
            }
        return (Expectation(before: before, positions: positions, orNext: next), lookedAt)
    }
}

extension RunningDaemon {
    /// Waits for PropertiesChanged to say PlaybackStatus is `status` (or for it to be so already).
    func awaitStatus(_ status: String, context: String, timeout: Duration = .seconds(20)) async throws {
        let signals = try await client.subscribe(
            matching: "type='signal',sender='\(busName)',interface='org.freedesktop.DBus.Properties',"
                + "member='PropertiesChanged',path='/org/mpris/MediaPlayer2'")
        if try await property("org.mpris.MediaPlayer2.Player", "PlaybackStatus")?.stringValue == status { return }
        let deadline = Task {
            try? await Task.sleep(for: timeout)
        }
        let seen = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await signal in signals {
                    let changed = signal.arguments.dropFirst().first?.stringVariantDictValue
                    if changed?["PlaybackStatus"]?.stringValue == status { return true }
                }
                return false
            }
            group.addTask {
                await deadline.value
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        deadline.cancel()
        guard seen else {
            throw RigError("PlaybackStatus never became \(status); \(context); log:\n\(process.standardError)")
        }
    }

    /// Waits until the daemon has played `seconds` of its current track (MPRIS signals no
    /// position: it is read until then, `timeout` being the deadline).
    func awaitPosition(atLeast seconds: Double, context: String, timeout: Duration = .seconds(20)) async throws {
        let minimum = Int64(seconds * 1_000_000)
        let deadline = ContinuousClock.now + timeout
        var last: Int64 = -1
        while ContinuousClock.now < deadline {
            last = try await property("org.mpris.MediaPlayer2.Player", "Position")?.int64Value ?? -1
            if last >= minimum { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw RigError("the position stayed \(last) µs; \(context); log:\n\(process.standardError)")
    }
}

extension Duration {
    fileprivate var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
