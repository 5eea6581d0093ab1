import DBusKit
import Foundation
import TestSupport

/// One D-Bus client of the daemon on its own connection, as a separate MPRIS client would be;
/// every call has a timeout and its outcome goes to the ledger.
struct SoakClient: Sendable {
    static let busName = "org.mpris.MediaPlayer2.spool"
    static let path = "/org/mpris/MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"
    static let trackList = "org.mpris.MediaPlayer2.TrackList"
    static let spool = "org.spool.Spool1"
    static let properties = "org.freedesktop.DBus.Properties"
    /// Far beyond any answer a healthy daemon gives (MPRIS answers in about a millisecond), so
    /// that only a hang or a lost call reaches it, even on a busy machine.
    static let timeout = Duration.seconds(5)
    /// Errors that mean nobody answered: the timeout, or the daemon gone from the bus.
    static let unansweredErrors: Set<String> = [
        "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Disconnected",
        "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
        "org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.TimedOut",
    ]

    let connection: DBusConnection
    let ledger: Ledger

    /// Connects to the bus at `address`.
    init(address: String, ledger: Ledger) throws {
        connection = try DBusConnection(address: address)
        self.ledger = ledger
    }

    /// Calls `method` on the daemon's MPRIS object and records the outcome under `kind`.
    @discardableResult
    func call(_ kind: String, _ interface: String, _ method: String, _ arguments: [DBusValue] = []) async -> CallOutcome
    {
        let at = ledger.elapsed
        let started = ContinuousClock.now
        let outcome: CallOutcome
        do {
            outcome = .answered(
                try await connection.call(
                    destination: Self.busName, path: Self.path, interface: interface, method: method,
                    arguments: arguments, timeout: Self.timeout))
        } catch let error as DBusError {
            outcome =
                Self.unansweredErrors.contains(error.name)
                ? .unanswered(error.description) : .refused(error.description)
        } catch {
            outcome = .refused("\(error)")
        }
        let shortInterface = interface.split(separator: ".").last.map(String.init) ?? interface
        let what = "\(shortInterface).\(method)(\(arguments.map(Self.describe).joined(separator: ", ")))"
        ledger.record(kind, outcome, what: what, at: at, latency: seconds(from: started))
        return outcome
    }

    /// Properties.Get; nil unless answered.
    func get(_ kind: String, _ interface: String, _ name: String) async -> DBusValue? {
        await call(kind, Self.properties, "Get", [.string(interface), .string(name)]).values?.first?.variantValue
    }

    /// Properties.GetAll; nil unless answered.
    func getAll(_ kind: String, _ interface: String) async -> [String: DBusValue]? {
        await call(kind, Self.properties, "GetAll", [.string(interface)]).values?.first?.stringVariantDictValue
    }

    /// Properties.Set.
    @discardableResult
    func set(_ kind: String, _ interface: String, _ name: String, _ value: DBusValue) async -> CallOutcome {
        await call(kind, Self.properties, "Set", [.string(interface), .string(name), .variant(value)])
    }

    /// The queue's track ids, nil when not answered.
    func tracks(_ kind: String) async -> [String]? {
        await get(kind, Self.trackList, "Tracks")?.arrayValues?.compactMap(\.objectPathValue)
    }

    /// The current track's id and length in microseconds.
    func nowPlaying(_ kind: String) async -> (id: String, length: Int64?)? {
        guard let metadata = await get(kind, Self.player, "Metadata")?.stringVariantDictValue,
            let id = metadata["mpris:trackid"]?.objectPathValue
        else { return nil }
        return (id, metadata["mpris:length"]?.int64Value)
    }

    func close() { connection.close() }

    /// A short form of an argument for the unanswered list.
    static func describe(_ value: DBusValue) -> String {
        switch value {
        case .string(let text): "\"\(text.count > 60 ? "…" + text.suffix(50) : Substring(text))\""
        case .objectPath(let path): path
        case .int64(let number): String(number)
        case .double(let number): String(number)
        case .boolean(let flag): String(flag)
        case .variant(let inner): describe(inner)
        case .array(_, let values): "[\(values.count) items]"
        default: value.signature
        }
    }
}
