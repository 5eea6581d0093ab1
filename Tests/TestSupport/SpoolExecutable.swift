import Foundation

/// The repository's top-level folder, found from this file's path
/// (`Tests/TestSupport/SpoolExecutable.swift`).
public let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// The `spool` executable built next to the test bundle (a test target that
/// calls this depends on the `spool` target, so it is built first), or the one
/// `SPOOL_TEST_EXECUTABLE` names (a benchmark runs the tests against a release build).
public func spoolExecutable() throws -> String {
    if let chosen = ProcessInfo.processInfo.environment["SPOOL_TEST_EXECUTABLE"], !chosen.isEmpty { return chosen }
    let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    var directory = testBinary.deletingLastPathComponent()
    // The bundle may be a directory (`X.xctest/...`) or the executable itself.
    for _ in 0..<3 {
        let candidate = directory.appendingPathComponent("spool").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    throw RigError("the spool executable was not found near \(testBinary.path)")
}

/// A private bus whose activation file starts the built `spool daemon` (into a null
/// sink that keeps real time) with its XDG folders in a private home.
public final class ActivatableBus: Sendable {
    /// The bus.
    public let bus: PrivateBus
    /// The folder holding the activation file.
    public let services: TemporaryDirectory
    /// The activated daemon's home.
    public let home: TemporaryDirectory

    /// Writes the checked-in activation file with Exec pointing at the built binary, then starts the bus.
    public init() throws {
        services = try TemporaryDirectory(prefix: "spool-services")
        home = try TemporaryDirectory(prefix: "spool-activated")
        let template = try String(
            contentsOf: repositoryRoot.appendingPathComponent("dbus/org.mpris.MediaPlayer2.spool.service.in"),
            encoding: .utf8)
        let isolated =
            "/usr/bin/env -u SPOOL_LOG XDG_CONFIG_HOME=\(home.path) XDG_CACHE_HOME=\(home.path)/cache "
            + "XDG_STATE_HOME=\(home.path)/state \(try spoolExecutable()) daemon --audio-sink \"fakesink sync=true\""
        try template.replacingOccurrences(of: "@bindir@/spool daemon", with: isolated)
            .write(to: services.file("org.mpris.MediaPlayer2.spool.service"), atomically: true, encoding: .utf8)
        bus = try PrivateBus(servicesDirectory: services.path, selfStopAfter: 120)
    }
}

/// How every test and benchmark starts `spool daemon`: one place for its environment.
public struct SpoolDaemonLaunch {
    /// The bus environment the daemon joins (`PrivateBus.environment`).
    public var busEnvironment: [String: String]
    /// Holds its XDG cache, state and config folders; the same home is the same daemon restarted.
    public var home: URL
    /// The `--audio-sink`; nil leaves it to the configuration file.
    public var audioSink: String?
    /// `SPOOL_LOG`; nil leaves it to the configuration file.
    public var logLevel: String?
    /// Whether `SPOOL_*` variables of the test's own environment reach the daemon.
    public var inheritsSpoolVariables: Bool
    /// Whether each log line is stamped with its time since the start (`SPOOL_LOG_TIME`), so
    /// that a failure's log shows where the seconds went.
    public var timedLog = true
    /// Arguments after `daemon` and the sink.
    public var extraArguments: [String] = []
    /// Variables added last (a stand-in system bus, a sound server).
    public var extraEnvironment: [String: String] = [:]
    /// Where its stdout and stderr files go.
    public var logDirectory: URL
    /// Seconds after which it stops by itself, whatever happens to the test process.
    public var lifetime: Int

    /// A launch into a null sink that keeps real time, logging at `debug`.
    public init(
        busEnvironment: [String: String], home: URL, logDirectory: URL, lifetime: Int,
        audioSink: String? = "fakesink sync=true", logLevel: String? = "debug", inheritsSpoolVariables: Bool = false
    ) {
        self.busEnvironment = busEnvironment
        self.home = home
        self.logDirectory = logDirectory
        self.lifetime = lifetime
        self.audioSink = audioSink
        self.logLevel = logLevel
        self.inheritsSpoolVariables = inheritsSpoolVariables
    }

    /// The daemon's whole environment: the bus, its XDG folders in `home`, no system bus (a test
    /// that wants one passes its own), no journal (plain log lines), its log level and timing.
    public var environment: [String: String] {
        var environment = busEnvironment.filter { inheritsSpoolVariables || !$0.key.hasPrefix("SPOOL_") }
        environment["XDG_CACHE_HOME"] = home.appendingPathComponent("cache").path
        environment["XDG_STATE_HOME"] = home.appendingPathComponent("state").path
        environment["XDG_CONFIG_HOME"] = home.appendingPathComponent("config").path
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent/spool-test-system-bus"
        environment["JOURNAL_STREAM"] = nil
        if let logLevel { environment["SPOOL_LOG"] = logLevel }
        if timedLog { environment["SPOOL_LOG_TIME"] = ProcessInfo.processInfo.environment["SPOOL_LOG_TIME"] ?? "1" }
        environment.merge(extraEnvironment) { _, new in new }
        return environment
    }

    /// Starts `executable daemon` (the built `spool` unless said otherwise).
    public func start(executable: String? = nil) throws -> ChildProcess {
        let sink = audioSink.map { ["--audio-sink", $0] } ?? []
        return try ChildProcess(
            try executable ?? spoolExecutable(), ["daemon"] + sink + extraArguments, environment: environment,
            logDirectory: logDirectory, selfStopAfter: lifetime)
    }
}
