import DBusKit
import Foundation
import Synchronization
import TestSupport

/// The `spool daemon` under test: started on the rig's bus with its own XDG folders, watched
/// every second, and started again (same folders: the session is restored) when it exits.
final class DaemonKeeper: Sendable {
    /// An exit of the daemon that nobody asked for.
    struct Crash: Sendable {
        /// Seconds since the start of the soak.
        let at: Double
        let pid: Int32
        /// The exit status as `timeout` reports it (128 + N for signal N).
        let status: Int32?
        /// The end of its log.
        let logTail: String
    }

    private struct State {
        var player: PlayerProcess
        var pid: Int32
        var crashes: [Crash] = []
    }

    private let rig: NetworkRig
    private let executable: String
    private let home: TemporaryDirectory
    private let pulseServer: String
    private let logLevel: String?
    private let lifetime: Int
    private let state: Mutex<State>

    /// Starts the daemon and waits until it owns its bus name.
    init(rig: NetworkRig, executable: String, pulseServer: String, logLevel: String?, lifetime: Int) async throws {
        self.rig = rig
        self.executable = executable
        self.pulseServer = pulseServer
        self.logLevel = logLevel
        self.lifetime = lifetime
        let home = try TemporaryDirectory(prefix: "spool-soak-home")
        self.home = home
        Cleanup.register { try? FileManager.default.removeItem(at: home.url) }
        let (player, pid) = try await Self.start(
            rig: rig, executable: executable, home: home, pulseServer: pulseServer, logLevel: logLevel,
            lifetime: lifetime)
        state = Mutex(State(player: player, pid: pid))
    }

    private static func start(
        rig: NetworkRig, executable: String, home: TemporaryDirectory, pulseServer: String, logLevel: String?,
        lifetime: Int
    ) async throws -> (PlayerProcess, Int32) {
        let player = try rig.startSpool(
            executable: executable, home: home, audioSink: "pulsesink", logLevel: logLevel,
            extraEnvironment: ["PULSE_SERVER": pulseServer, "GST_REGISTRY": registry], lifetime: lifetime)
        let connection = try DBusConnection(address: rig.bus.address)
        defer { connection.close() }
        for _ in 0..<1000 {
            if try await connection.nameHasOwner(SoakClient.busName), let pid = player.process.programPID {
                return (player, pid)
            }
            guard player.process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw RigError("spool daemon did not take its bus name; its log:\n\(player.logTail(30))")
    }

    /// GStreamer's registry as the user's own daemon finds it (GST_REGISTRY, else under the
    /// user's cache folder), not under the daemon's fresh XDG_CACHE_HOME: a fresh registry
    /// makes the daemon scan every plugin, which maps all of them and inflates its RSS.
    static var registry: String {
        let environment = ProcessInfo.processInfo.environment
        if let set = environment["GST_REGISTRY"], !set.isEmpty { return set }
        let cache =
            environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? NSHomeDirectory() + "/.cache"
        var name = utsname()
        uname(&name)
        let machine = withUnsafeBytes(of: &name.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return "\(cache)/gstreamer-1.0/registry.\(machine).bin"
    }

    /// The daemon's own process id (not the `timeout` wrapping it).
    var pid: Int32 { state.withLock { $0.pid } }
    /// Its log so far (this run's process).
    var log: String { state.withLock { $0.player.log } }
    /// Every unrequested exit so far.
    var crashes: [Crash] { state.withLock { $0.crashes } }
    /// The process, for stopping it.
    var process: ChildProcess { state.withLock { $0.player.process } }

    /// When the daemon has exited: records the crash and starts it again (returning the crash).
    func checkAlive(at seconds: Double) async -> Crash? {
        let (player, pid) = state.withLock { ($0.player, $0.pid) }
        guard !player.process.isRunning else { return nil }
        let crash = Crash(
            at: seconds, pid: pid, status: await player.process.waitForExit(timeout: 1), logTail: player.logTail(30))
        state.withLock { $0.crashes.append(crash) }
        do {
            let (next, nextPID) = try await Self.start(
                rig: rig, executable: executable, home: home, pulseServer: pulseServer, logLevel: logLevel,
                lifetime: lifetime)
            state.withLock {
                $0.player = next
                $0.pid = nextPID
            }
        } catch {
            print("could not start the daemon again: \(error)")
        }
        return crash
    }

    /// The allocator's account of the heap (see `HeapFigures`); blocks while gdb holds the daemon.
    func heap(trim: Bool) -> Result<HeapFigures, RigError> {
        let (pid, log) = state.withLock { ($0.pid, $0.player.process.stderrURL) }
        return HeapFigures.probe(pid: pid, log: log, trim: trim)
    }

    /// Writes the stacks of every thread of the daemon (gdb) to `file`; blocks while gdb holds
    /// the daemon stopped (seconds).
    func captureStacks(to file: URL) {
        let result = try? runCommand(
            "gdb", ["-p", String(pid), "-batch", "-ex", "set pagination off", "-ex", "thread apply all bt"],
            timeout: 120)
        try? Data(((result?.stdout ?? "") + (result?.stderr ?? "")).utf8).write(to: file)
    }
}
