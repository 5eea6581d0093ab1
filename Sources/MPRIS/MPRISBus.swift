import DBusKit

/// What the service needs of its bus connection: to export its object, send signals and call
/// the notification server. The daemon passes its `DBusConnection`; a test can pass a recorder
/// and reach the exported interfaces' methods and properties without a bus.
public protocol MPRISBus: Sendable {
    /// Exports `interfaces` at `path` (see `DBusConnection.export(path:interfaces:)`).
    func export(path: String, interfaces: [DBusInterface])
    /// Emits a signal (see `DBusConnection.emitSignal(path:interface:name:arguments:)`).
    func emitSignal(path: String, interface: String, name: String, arguments: [DBusValue])
    /// Emits PropertiesChanged for `interface` at `path`.
    func emitPropertiesChanged(path: String, interface: String, changed: [(String, DBusValue)], invalidated: [String])
    /// Calls a method and returns its results (see `DBusConnection.call`).
    func call(
        destination: String, path: String, interface: String, method: String, arguments: [DBusValue],
        timeout: Duration
    ) async throws -> [DBusValue]
}

extension MPRISBus {
    /// Emits PropertiesChanged for `interface` at `path`, invalidating nothing.
    func emitPropertiesChanged(path: String, interface: String, changed: [(String, DBusValue)]) {
        emitPropertiesChanged(path: path, interface: interface, changed: changed, invalidated: [])
    }
}

extension DBusConnection: MPRISBus {}
