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
