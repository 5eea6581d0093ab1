import Dispatch
import Foundation
import Synchronization
import TestSupport

/// Once a second: whether the daemon is alive (restarting it after a crash), its /proc figures,
/// and what it plays (one GetAll on the Player). On the first unanswered call it takes the
/// daemon's stacks with gdb, once.
final class Sampler: Sendable {
    /// Files holding stacks taken during the run.
    let capturedStacks = Mutex<[String]>([])
    /// The heap as the allocator saw it at the end of the warm-up.
    let warmUpHeap = Mutex<Result<HeapFigures, RigError>?>(nil)
    private let daemon: DaemonKeeper
    private let ledger: Ledger
    private let samples: SampleLog
    private let client: SoakClient

    init(daemon: DaemonKeeper, ledger: Ledger, samples: SampleLog, client: SoakClient) {
        self.daemon = daemon
        self.ledger = ledger
        self.samples = samples
        self.client = client
    }

    /// Samples until `deadline`; takes the descriptor and thread inventory once `warmUp` seconds have passed.
    func run(until deadline: ContinuousClock.Instant, warmUp: Double, inventory: Inventory) async {
        var tick = ContinuousClock.now
        var previous: Sample?
        var lastProgress = 0.0
        var captured = false
        while ContinuousClock.now < deadline {
            tick += .seconds(1)
            try? await Task.sleep(until: tick, clock: .continuous)
            let at = ledger.elapsed
            if let crash = await daemon.checkAlive(at: at) {
                say(
                    "[\(Int(at)) s] CRASH: the daemon (pid \(crash.pid)) exited with status \(crash.status.map(String.init) ?? "?"); started again as pid \(daemon.pid). Its log ended:\n\(crash.logTail)"
                )
                previous = nil
                continue
            }
            let pid = daemon.pid
            guard let figures = ProcessFigures.read(pid) else { continue }
            let player = await client.getAll("sampler: GetAll Player", SoakClient.player)
            let status = player?["PlaybackStatus"]?.stringValue ?? ""
            let position = player?["Position"]?.int64Value ?? 0
            let track = player?["Metadata"]?.stringVariantDictValue?["mpris:trackid"]?.objectPathValue ?? ""
            var advancing = false
            if status == "Playing", let previous, previous.pid == pid {
                advancing = track == previous.track ? position > previous.position : position > 0
            }
            let sample = Sample(
                at: at, pid: pid, figures: figures, status: status, position: position, track: track,
                advancing: advancing)
            samples.append(sample)
            previous = sample
            if !inventory.isTaken, at >= warmUp {
                inventory.take(pid)
                let heap = await holdingDaemon { $0.heap(trim: false) }
                warmUpHeap.withLock { $0 = heap }
            }
            if at - lastProgress >= 60 {
                lastProgress = at
                progress(sample)
            }
            if !captured, let first = ledger.unanswered.first {
                captured = true
                await captureStacks(after: first)
            }
        }
    }

    /// Closes the sampler's bus connection.
    func close() { client.close() }

    private func progress(_ sample: Sample) {
        let all = samples.all
        let minuteAgo =
            all.last { $0.at <= sample.at - 60 && $0.pid == sample.pid } ?? all.first { $0.pid == sample.pid }!
        let cpu =
            minuteAgo.at < sample.at
            ? Double(sample.figures.cpuTicks - minuteAgo.figures.cpuTicks) / ProcessFigures.ticksPerSecond
                / (sample.at - minuteAgo.at)
            : 0
        let playing = Double(all.filter(\.advancing).count) / Double(max(1, all.count))
        say(
            String(
                format:
                    "[%4.0f s] RSS %.1f MiB (anon %.1f), fds %ld, threads %ld, CPU %.0f %% (last minute), playing %.0f %%, actions %ld, polls %ld, unanswered %ld",
                sample.at, Double(sample.figures.rssKiB) / 1024, Double(sample.figures.anonKiB) / 1024,
                sample.figures.fds, sample.figures.threads, cpu * 100,
                playing * 100, ledger.count(prefix: "action:") { $0.answered + $0.refused + $0.unanswered },
                ledger.count(prefix: "poll:") { $0.answered + $0.refused + $0.unanswered }, ledger.unanswered.count))
    }

    /// Takes the daemon's stacks while it may still be stuck; calls that go unanswered while
    /// gdb holds it stopped are left out of the count.
    private func captureStacks(after first: Ledger.Unanswered) async {
        let file = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("spool-soak-stacks-\(Int(first.at))s-\(getpid()).txt")
        say(
            "[\(Int(ledger.elapsed)) s] unanswered: \(first.what) at \(Int(first.at)) s (\(first.why)); taking the daemon's stacks"
        )
        await holdingDaemon { $0.captureStacks(to: file) }
        capturedStacks.withLock { $0.append(file.path) }
        say("  stacks: \(file.path)")
    }

    /// Runs `body` (which stops the daemon under gdb) off the cooperative threads; calls that
    /// go unanswered meanwhile are the bench's doing and left out of the count.
    private func holdingDaemon<T: Sendable>(_ body: @escaping @Sendable (DaemonKeeper) -> T) async -> T {
        ledger.beginCapture()
        defer { ledger.endCapture() }
        let daemon = self.daemon
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: body(daemon)) }
        }
    }
}

/// The daemon's descriptors and threads by kind, taken once.
final class Inventory: Sendable {
    private let taken = Mutex<(fds: [String: Int], threads: [String: Int])?>(nil)

    var isTaken: Bool { taken.withLock { $0 != nil } }
    var fds: [String: Int] { taken.withLock { $0?.fds ?? [:] } }
    var threads: [String: Int] { taken.withLock { $0?.threads ?? [:] } }

    func take(_ pid: Int32) {
        let value = (ProcessInventory.descriptors(pid), ProcessInventory.threads(pid))
        taken.withLock { $0 = value }
    }
}

/// The files the queue is made of: a 30–44 s tone in each of the 8 fixture formats (MP3 CBR and
/// VBR, FLAC, Vorbis, Opus, M4A with `moov` first and last, WAV) and the 10 tagged 3.5-s
/// fixtures (two with embedded cover art; as local files they also have a `cover.png` beside them).
struct SoakMedia {
    let files: [URL]
    let summary: String

    static func make() throws -> SoakMedia {
        var files: [URL] = []
        for (index, format) in FixtureFormat.allCases.enumerated() {
            files.append(try NetworkMedia.tone(format, seconds: 30 + 2 * index, frequency: 300 + 40 * index))
        }
        if let folder = files.first?.deletingLastPathComponent() {
            Cleanup.register { try? FileManager.default.removeItem(at: folder) }
        }
        let fixtures = try Fixtures.shared().all.map(\.url)
        let summary =
            "\(files.count) tones of 30–44 s (\(FixtureFormat.allCases.map(\.rawValue).joined(separator: ", "))) "
            + "and \(fixtures.count) tagged fixtures of 3.5 s (2 with cover art)"
        return SoakMedia(files: files + fixtures, summary: summary)
    }
}

/// What must happen before the bench exits, however it exits: every server stopped, every
/// temporary folder removed. Runs once, on the normal path, on a failure and on SIGINT/SIGTERM.
enum Cleanup {
    private static let actions = Mutex<[@Sendable () -> Void]?>([])
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []

    /// Adds an action; they run last-registered first.
    static func register(_ action: @escaping @Sendable () -> Void) { actions.withLock { $0?.append(action) } }

    /// Runs every action once.
    static func run() {
        let pending = actions.withLock { actions in
            defer { actions = nil }
            return actions ?? []
        }
        for action in pending.reversed() { action() }
    }

    /// Stops everything on Ctrl-C or a kill: the servers run under `timeout` in their own
    /// process groups, so a terminal's SIGINT does not reach them.
    static func installSignalHandlers() {
        for signalNumber in [SIGINT, SIGTERM, SIGHUP] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                say("\nsignal \(signalNumber): stopping the daemon and every server")
                run()
                exit(130)
            }
            source.resume()
            sources.append(source)
        }
    }
}
