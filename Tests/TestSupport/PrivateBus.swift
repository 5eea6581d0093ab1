import Foundation

/// A private `dbus-daemon` for one test: its socket and config live in its
/// own temporary directory, it runs under `timeout` so it stops by itself even
/// if the test process is killed, and it is ready when `init` returns.
public final class PrivateBus: Sendable {
    /// The bus address, for `DBusConnection(address:)`.
    public let address: String
    /// The test's environment with `DBUS_SESSION_BUS_ADDRESS` pointing at this
    /// bus, for child processes such as `playerctl` or `dbus-send`.
    public let environment: [String: String]
    /// The daemon process.
    public let daemon: ChildProcess
    private let directory: TemporaryDirectory

    /// Starts the daemon and waits (milliseconds) until it prints its address.
    /// - Parameters:
    ///   - servicesDirectory: a folder of D-Bus activation files (`*.service`) the bus
    ///     starts services from when a call names them; nil starts nothing.
    ///   - selfStopAfter: seconds after which the daemon ends whatever happens.
    public init(servicesDirectory: String? = nil, selfStopAfter: Int = 600) throws {
        directory = try TemporaryDirectory(prefix: "spool-bus")
        let config = directory.file("session.conf")
        try Self.configuration(listeningIn: directory.path, servicesDirectory: servicesDirectory)
            .write(to: config, atomically: true, encoding: .utf8)
        daemon = try ChildProcess(
            "dbus-daemon", ["--nofork", "--print-address=1", "--config-file=\(config.path)"],
            logDirectory: directory.url, selfStopAfter: selfStopAfter)
        let daemon = self.daemon
        let printed = eventuallyBlocking(timeout: 10, interval: 0.002) {
            daemon.standardOutput.contains("\n") || !daemon.isRunning
        }
        let line = daemon.standardOutput.split(separator: "\n").first.map(String.init) ?? ""
        guard printed, !line.isEmpty else {
            daemon.stop(grace: 1)
            throw RigError("dbus-daemon printed no address; stderr: \(daemon.standardError)")
        }
        address = line
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = line
        self.environment = environment
    }

    /// Stops the daemon (SIGTERM, then SIGKILL). Idempotent.
    public func stop() {
        if daemon.isRunning { daemon.stop(grace: 2) }
    }

    deinit { stop() }

    /// A minimal session-bus configuration listening on a socket in `directory`,
    /// with the session bus's limits, activating services from `servicesDirectory`.
    static func configuration(listeningIn directory: String, servicesDirectory: String?) -> String {
        let services = servicesDirectory.map { "<servicedir>\($0)</servicedir>" } ?? ""
        return """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <keep_umask/>
              <listen>unix:dir=\(directory)</listen>
              \(services)
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
              <!-- the generous limits of Debian's session.conf, so tests meet the limits a real session bus has -->
              <limit name="max_incoming_bytes">1000000000</limit>
              <limit name="max_outgoing_bytes">1000000000</limit>
              <limit name="max_message_size">1000000000</limit>
              <limit name="max_names_per_connection">50000</limit>
              <limit name="max_match_rules_per_connection">50000</limit>
              <limit name="max_replies_per_connection">50000</limit>
            </busconfig>
            """
    }
}
