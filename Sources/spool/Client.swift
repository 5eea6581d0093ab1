import DBusKit
import FoundationEssentials
import MPRIS

/// A failure the user sees as one line on stderr, with the exit status it maps to.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    let status: Int32

    /// A usage mistake (exit 1).
    static func usage(_ message: String) -> CommandFailure {
        CommandFailure(description: message, status: ExitStatus.usageOrConfiguration)
    }
    /// A failure at run time: no daemon, or the daemon refused (exit 2).
    static func failed(_ message: String) -> CommandFailure {
        CommandFailure(description: message, status: ExitStatus.runtimeFailure)
    }
}

/// The `spool` commands' view of the daemon: calls over the session bus to
/// its well-known name, so the first call starts it through D-Bus activation.
struct SpoolClient: Sendable {
    /// The bus name to talk to (`SPOOL_BUS_NAME` picks another instance).
    let name: String
    let connection: DBusConnection
    /// False when `SPOOL_NO_ACTIVATION` is set, as shell completions do: a call then fails at
    /// once when no daemon runs instead of starting one through D-Bus activation.
    var mayStartDaemon = true

    /// How long the first call may take: it may have to start the daemon.
    static let callTimeout: Duration = .seconds(25)

    /// Connects to the session bus, or fails with exit status 2.
    static func connect() throws(CommandFailure) -> SpoolClient {
        do {
            let connection = try DBusConnection.session()
            let name = ProcessInfo.processInfo.environment["SPOOL_BUS_NAME"].flatMap { $0.isEmpty ? nil : $0 }
            let quiet = ProcessInfo.processInfo.environment["SPOOL_NO_ACTIVATION"].map { !$0.isEmpty } ?? false
            return SpoolClient(name: name ?? MPRISService.busName, connection: connection, mayStartDaemon: !quiet)
        } catch {
            throw .failed("cannot connect to the D-Bus session bus (\(error)); is DBUS_SESSION_BUS_ADDRESS set?")
        }
    }

    /// Calls `method` of `interface` on the daemon's MPRIS object.
    @discardableResult
    func call(_ interface: String, _ method: String, _ arguments: [DBusValue] = []) async throws(CommandFailure)
        -> [DBusValue]
    {
        if !mayStartDaemon, (try? await connection.nameHasOwner(name)) != true {
            throw .failed("the Spool daemon is not running")
        }
        do {
            return try await connection.call(
                destination: name, path: MPRISService.objectPath, interface: interface, method: method,
                arguments: arguments, timeout: Self.callTimeout)
        } catch let error as DBusError {
            throw .failed(Self.explain(error))
        } catch {
            throw .failed("\(error)")
        }
    }

    /// Calls a method of `org.mpris.MediaPlayer2.Player`.
    @discardableResult
    func player(_ method: String, _ arguments: [DBusValue] = []) async throws(CommandFailure) -> [DBusValue] {
        try await call(MPRISService.playerInterface, method, arguments)
    }

    /// Calls a method of `org.spool.Spool1`.
    @discardableResult
    func spool(_ method: String, _ arguments: [DBusValue] = []) async throws(CommandFailure) -> [DBusValue] {
        try await call(MPRISService.spoolInterface, method, arguments)
    }

    /// Every property of `interface`.
    func properties(_ interface: String) async throws(CommandFailure) -> [String: DBusValue] {
        let reply = try await call("org.freedesktop.DBus.Properties", "GetAll", [.string(interface)])
        return reply.first?.stringVariantDictValue ?? [:]
    }

    /// Sets a property of `org.mpris.MediaPlayer2.Player`.
    func setPlayerProperty(_ name: String, _ value: DBusValue) async throws(CommandFailure) {
        try await call(
            "org.freedesktop.DBus.Properties", "Set",
            [.string(MPRISService.playerInterface), .string(name), .variant(value)])
    }

    /// A D-Bus error as the user should read it.
    static func explain(_ error: DBusError) -> String {
        switch error.name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
            "org.freedesktop.DBus.Error.Spawn.ChildExited", "org.freedesktop.DBus.Error.Spawn.ExecFailed":
            return
                "the Spool daemon is not running and could not be started (\(error.message)); start it with 'spool daemon'"
        case "org.freedesktop.DBus.Error.NoReply":
            return "the Spool daemon did not answer in time"
        default:
            return error.message
        }
    }
}
