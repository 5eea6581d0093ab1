import Basics
import DBusKit
import FoundationEssentials
import PlayerCore
import Synchronization

/// Follows whether the network is metered and applies the answer at once: with
/// `network.metered = auto`, NetworkManager's `Metered` property on the system bus (read at
/// start, then its PropertiesChanged, and again whenever NetworkManager starts or stops);
/// with `yes` or `no`, that alone. No system bus or no NetworkManager means not metered.
/// The decision itself is ``MeteredNetwork``'s.
final class MeteredWatcher: Sendable {
    /// NetworkManager's bus name, also the name of its manager interface.
    static let networkManager = "org.freedesktop.NetworkManager"
    /// The manager object, which has the global `Metered` property.
    static let path = "/org/freedesktop/NetworkManager"
    private static let properties = "org.freedesktop.DBus.Properties"

    private let connection: DBusConnection?
    private let listeners: [Task<Void, Never>]

    /// Applies the forced value, or starts following NetworkManager; `apply` gets every
    /// decision (the first one before this returns) and runs one at a time.
    init(forced: Bool?, apply: @escaping @Sendable (Bool) async -> Void) async {
        let log = Logger(label: "network")
        guard forced == nil else {
            log.info("network.metered = \(forced == true ? "yes" : "no"): NetworkManager is not asked")
            await apply(forced == true)
            connection = nil
            listeners = []
            return
        }
        let address =
            ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"]
            ?? "unix:path=/run/dbus/system_bus_socket"
        let nm = Self.networkManager
        guard let connection = try? DBusConnection(address: address),
            let changes = try? await connection.subscribe(
                matching:
                    "type='signal',sender='\(nm)',path='\(Self.path)',interface='\(Self.properties)',member='PropertiesChanged',arg0='\(nm)'"
            ),
            let owners = try? await connection.subscribe(
                matching:
                    "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(nm)'"
            )
        else {
            log.debug("no system bus: the network counts as not metered")
            await apply(false)
            connection = nil
            listeners = []
            return
        }
        self.connection = connection
        // Both streams feed one consumer, so decisions are taken and applied in the order
        // the signals came, one at a time.
        let (events, sink) = AsyncStream.makeStream(of: Event.self)
        let read = { await Self.read(on: connection) }
        // Subscribed first, so a change sent while the first answer travels waits in the streams.
        let initial = MeteredNetwork.inForce(forced: nil, reported: await read())
        log.info("the network is \(initial ? "metered: preload and read-ahead limited" : "not metered")")
        await apply(initial)
        listeners = [
            Task {
                for await signal in changes {
                    guard signal.arguments.count >= 2, signal.arguments[0].stringValue == nm,
                        let raw = signal.arguments[1].stringVariantDictValue?["Metered"]?.uint32Value
                    else { continue }
                    sink.yield(.reported(MeteredNetwork.reported(raw)))
                }
            },
            Task {
                for await signal in owners {
                    guard signal.arguments.count == 3, signal.arguments[0].stringValue == nm else { continue }
                    sink.yield(.owner(running: !(signal.arguments[2].stringValue ?? "").isEmpty))
                }
            },
            Task {
                var current = initial
                for await event in events {
                    let reported: NetworkManagerMetered?
                    switch event {
                    case .reported(let value): reported = value
                    case .owner(let running): reported = running ? await read() : nil
                    }
                    let metered = MeteredNetwork.inForce(forced: nil, reported: reported)
                    log.debug("NetworkManager says metered: \(reported.map { "\($0)" } ?? "not running")")
                    guard metered != current else { continue }
                    current = metered
                    log.info("the network is \(metered ? "metered: preload and read-ahead limited" : "not metered")")
                    await apply(metered)
                }
            },
        ]
    }

    /// What the streams say, in order.
    private enum Event: Sendable {
        /// NetworkManager's new `Metered` value.
        case reported(NetworkManagerMetered)
        /// NetworkManager started (its value is read again) or stopped (not metered).
        case owner(running: Bool)
    }

    deinit {
        listeners.forEach { $0.cancel() }
        connection?.close()
    }

    /// NetworkManager's `Metered` now; nil when it is not running. Asked only when its name has
    /// an owner: a call to an unowned name would have the bus start NetworkManager.
    private static func read(on connection: DBusConnection) async -> NetworkManagerMetered? {
        guard (try? await connection.nameHasOwner(networkManager)) == true,
            let reply = try? await connection.call(
                destination: networkManager, path: path, interface: properties, method: "Get",
                arguments: [.string(networkManager), .string("Metered")], timeout: .seconds(2)),
            let raw = reply.first?.variantValue?.uint32Value
        else { return nil }
        return MeteredNetwork.reported(raw)
    }
}
