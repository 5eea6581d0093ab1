import Foundation

/// A private PulseAudio server for one test: Debian's `pulseaudio` started with
/// no default script (`-n`), so it loads only a native-protocol socket in the
/// test's own temporary directory and a null sink whose monitor can be recorded.
/// Its runtime, state and cookie folders live in that directory too, it exits
/// when idle, and it runs under `timeout`, so it stops by itself even if the
/// test process is killed. Clients reach it through `PULSE_SERVER`.
///
/// As root PulseAudio only warns ("not intended to be run as root") and runs
/// as a per-user server; `--system` is not needed.
public final class PulseServer: Sendable {
    /// The name of the null sink every stream plays into by default.
    public static let sinkName = "spool_test_null"
    /// The null sink's sample format, which its monitor records in: S16LE stereo at 44.1 kHz.
    public static let sampleRate = 44_100

    /// The server address, the value of `PULSE_SERVER` (`unix:/…/native`).
    public let server: String
    /// The test's environment with `PULSE_SERVER` pointing at this server.
    public let environment: [String: String]
    /// The daemon process.
    public let daemon: ChildProcess
    private let directory: TemporaryDirectory

    /// Starts the server and waits (tens of milliseconds) until `pactl info` answers.
    /// - Parameter selfStopAfter: seconds after which the daemon ends whatever happens.
    public init(selfStopAfter: Int = 180) throws {
        directory = try TemporaryDirectory(prefix: "spool-pulse")
        let runtime = directory.file("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        // PulseAudio refuses a runtime folder that others can enter.
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: runtime.path)
        let socket = directory.file("native").path
        server = "unix:\(socket)"

        var daemonEnvironment = ProcessInfo.processInfo.environment
        for name in ["PULSE_SERVER", "PULSE_SINK", "PULSE_SOURCE", "DBUS_SESSION_BUS_ADDRESS"] {
            daemonEnvironment[name] = nil
        }
        // The cookie (~/.config/pulse/cookie), state and runtime files stay in the test's folder.
        daemonEnvironment["HOME"] = directory.path
        daemonEnvironment["XDG_CONFIG_HOME"] = directory.file("config").path
        daemonEnvironment["XDG_RUNTIME_DIR"] = runtime.path
        daemonEnvironment["PULSE_RUNTIME_PATH"] = runtime.path
        daemonEnvironment["PULSE_STATE_PATH"] = directory.file("state").path
        daemon = try ChildProcess(
            "pulseaudio",
            [
                "--daemonize=no", "-n", "--exit-idle-time=30", "--use-pid-file=no", "--log-target=stderr",
                "--load=module-native-protocol-unix socket=\(socket) auth-anonymous=1",
                "--load=module-null-sink sink_name=\(Self.sinkName) format=s16le rate=\(Self.sampleRate) channels=2",
            ],
            environment: daemonEnvironment, logDirectory: directory.url, selfStopAfter: selfStopAfter)

        var environment = ProcessInfo.processInfo.environment
        environment["PULSE_SERVER"] = server
        self.environment = environment

        let daemon = self.daemon
        let server = self.server
        let answered = eventuallyBlocking(timeout: 10, interval: 0.01) {
            guard daemon.isRunning else { return true }
            guard FileManager.default.fileExists(atPath: socket) else { return false }
            return (try? runCommand("pactl", ["-s", server, "info"], timeout: 5).status) == 0
        }
        guard answered, daemon.isRunning else {
            daemon.stop(grace: 1)
            throw RigError("pulseaudio did not start; stderr: \(daemon.standardError)")
        }
    }

    /// Runs `pactl` against this server and returns its output; throws when it fails.
    public func pactl(_ arguments: String...) throws -> String {
        let result = try runCommand("pactl", ["-s", server] + arguments, timeout: 10)
        guard result.status == 0 else {
            throw RigError("pactl \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.stderr)")
        }
        return result.stdout
    }

    /// The playback streams the server holds now: each one's index, client index
    /// and properties (`application.name`, `media.role`, …), from `pactl -f json`.
    public func sinkInputs() throws -> [PulseStream] {
        try Self.streams(from: try pactl("-f", "json", "list", "sink-inputs"))
    }

    /// The connected clients: each one's index and properties.
    public func clients() throws -> [PulseStream] {
        try Self.streams(from: try pactl("-f", "json", "list", "clients"))
    }

    private static func streams(from json: String) throws -> [PulseStream] {
        guard let list = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]] else {
            throw RigError("pactl printed no JSON list: \(json)")
        }
        return list.map { entry in
            PulseStream(
                index: entry["index"] as? Int ?? -1,
                client: (entry["client"] as? String).flatMap(Int.init) ?? entry["client"] as? Int,
                properties: (entry["properties"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String })
        }
    }

    /// Loads `module-role-cork`, as a desktop's sound server has a policy for calls: while a
    /// stream with `media.role=phone` plays, the server mutes the `music` and `video` streams and
    /// asks their clients to cork (pause) them; when it ends, it unmutes them and asks to uncork.
    public func loadRoleCork() throws {
        _ = try pactl("load-module", "module-role-cork")
    }

    /// Plays `file` (a WAV) as a phone call: `paplay` with `media.role=phone`, which exits
    /// once the file has played. The caller awaits its exit.
    public func playCall(_ file: URL) throws -> ChildProcess {
        try ChildProcess(
            "paplay", ["--server=\(server)", "--property=media.role=phone", file.path],
            logDirectory: directory.url, selfStopAfter: 60)
    }

    /// Starts recording the null sink's monitor: from now on, everything the
    /// server plays is written as raw S16LE stereo PCM at 44.1 kHz.
    /// Returns once the server lists the capture stream, so nothing played after it is missed.
    public func recordOutput() throws -> PulseRecording {
        let recording = try PulseRecording(
            server: server, source: "\(Self.sinkName).monitor", logDirectory: directory.url)
        let connected = try eventuallyBlocking(timeout: 10, interval: 0.01) {
            try !Self.streams(from: try pactl("-f", "json", "list", "source-outputs")).isEmpty
        }
        guard connected else { throw RigError("parec never connected to \(server)") }
        return recording
    }

    /// Stops the server (SIGTERM, then SIGKILL). Idempotent.
    public func stop() {
        if daemon.isRunning { daemon.stop(grace: 2) }
    }

    deinit { stop() }
}

/// A PulseAudio stream or client as `pactl -f json` lists it.
public struct PulseStream: Sendable, CustomStringConvertible {
    /// The server's index for it.
    public let index: Int
    /// For a stream, the index of the client that owns it.
    public let client: Int?
    /// Its property list (`application.name`, `application.icon_name`, `media.role`, …).
    public let properties: [String: String]
    /// For failure messages.
    public var description: String { "#\(index) (client \(client.map(String.init) ?? "-")) \(properties)" }
}

/// A running `parec` capture of a PulseAudio source into a file.
public final class PulseRecording: Sendable {
    private let recorder: ChildProcess

    init(server: String, source: String, logDirectory: URL) throws {
        // A short capture latency makes the monitor hand over small fragments as they are
        // mixed; the content is the same whatever the latency.
        recorder = try ChildProcess(
            "parec",
            [
                "--server=\(server)", "--device=\(source)", "--raw", "--format=s16le",
                "--rate=\(PulseServer.sampleRate)", "--channels=2", "--latency-msec=20",
            ],
            logDirectory: logDirectory, selfStopAfter: 120)
    }

    /// Bytes of PCM recorded so far.
    public var recordedBytes: Int {
        ((try? FileManager.default.attributesOfItem(atPath: recorder.stdoutURL.path)[.size]) as? Int) ?? 0
    }

    /// Waits until the recording holds `milliseconds` more audio than it does now: the
    /// server's own clock, so a test waits for the output, not for the wall.
    public func waitToGrow(byMilliseconds milliseconds: Int) async throws {
        let target = recordedBytes + milliseconds * PulseServer.sampleRate * 4 / 1000
        guard await eventually(timeout: Double(milliseconds) / 1000 + 5, { self.recordedBytes >= target }) else {
            throw RigError("the recording stalled at \(recordedBytes) bytes")
        }
    }

    /// Stops the capture and returns what it recorded (S16LE stereo, 44.1 kHz).
    public func stop() throws -> Data {
        recorder.stop(grace: 2)
        return try Data(contentsOf: recorder.stdoutURL)
    }
}
