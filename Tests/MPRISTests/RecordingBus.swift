import DBusKit
import Foundation
import Synchronization
import Testing

@testable import MPRIS

/// A bus that is no bus: it keeps the interfaces the service exports and the signals it sends,
/// so a test calls methods and reads properties as a client would, and awaits signals.
final class RecordingBus: MPRISBus {
    /// A signal the service sent.
    struct Signal: Sendable {
        let interface: String
        let name: String
        let arguments: [DBusValue]

        /// For PropertiesChanged: the interface whose properties changed and their new values.
        var changes: (interface: String, values: [String: DBusValue])? {
            guard name == "PropertiesChanged", let interface = arguments.first?.stringValue,
                let values = arguments.dropFirst().first?.stringVariantDictValue
            else { return nil }
            return (interface, values)
        }
    }

    private struct Waiter {
        let from: Int
        let predicate: @Sendable (Signal) -> Bool
        let continuation: CheckedContinuation<Signal?, Never>
    }

    private struct State {
        var interfaces: [DBusInterface] = []
        var signals: [Signal] = []
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        var calls: [String] = []
    }

    private let state = Mutex(State())

    /// Every signal so far.
    var signals: [Signal] { state.withLock { $0.signals } }
    /// How many signals were sent so far (a mark to await later ones from).
    var mark: Int { state.withLock { $0.signals.count } }
    /// The methods the service called on others (`interface.method`).
    var calls: [String] { state.withLock { $0.calls } }

    func export(path: String, interfaces: [DBusInterface]) {
        #expect(path == MPRISService.objectPath)
        state.withLock { $0.interfaces = interfaces }
    }

    func emitSignal(path: String, interface: String, name: String, arguments: [DBusValue]) {
        let signal = Signal(interface: interface, name: name, arguments: arguments)
        let woken = state.withLock { state -> [CheckedContinuation<Signal?, Never>] in
            state.signals.append(signal)
            let index = state.signals.count - 1
            let due = state.waiters.filter { $0.value.from <= index && $0.value.predicate(signal) }
            for key in due.keys { state.waiters[key] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in woken { continuation.resume(returning: signal) }
    }

    func emitPropertiesChanged(path: String, interface: String, changed: [(String, DBusValue)], invalidated: [String]) {
        emitSignal(
            path: path, interface: "org.freedesktop.DBus.Properties", name: "PropertiesChanged",
            arguments: [.string(interface), .stringVariantDict(changed), .stringArray(invalidated)])
    }

    func call(
        destination: String, path: String, interface: String, method: String, arguments: [DBusValue],
        timeout: Duration
    ) async throws -> [DBusValue] {
        state.withLock { $0.calls.append("\(interface).\(method)") }
        throw DBusError(name: "org.freedesktop.DBus.Error.ServiceUnknown", message: "no such service here")
    }

    // MARK: What a client does

    /// The exported interface called `name`.
    func interface(_ name: String) throws -> DBusInterface {
        try #require(state.withLock { $0.interfaces.first { $0.name == name } }, "\(name) is not exported")
    }

    /// Reads a property, as Get does.
    func get(_ interface: String, _ property: String) throws -> DBusValue {
        try #require(try self.interface(interface).property(named: property), "no property \(property)").get()
    }

    /// Writes a property, as Set does; throws what the service answers.
    func set(_ interface: String, _ property: String, _ value: DBusValue) async throws {
        let setter = try #require(
            try self.interface(interface).property(named: property)?.set, "\(property) is read-only")
        try await setter(value)
    }

    /// Calls a method with `arguments`; throws the error the service answers.
    func call(_ interface: String, _ method: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        let method = try #require(try self.interface(interface).method(named: method), "no method \(method)")
        return try await method.handler(arguments)
    }

    // MARK: Waiting for signals

    /// The first signal from `mark` on that satisfies `predicate`, as soon as it is sent; nil
    /// when none came within `timeout` (a test failure, not a pace).
    func signal(
        from mark: Int = 0, timeout: Duration = .seconds(10), where predicate: @escaping @Sendable (Signal) -> Bool
    ) async -> Signal? {
        let key = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let expiry = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.expire(key)
        }
        defer { expiry.cancel() }
        return await withCheckedContinuation { continuation in
            let found = state.withLock { state -> Signal? in
                if let found = state.signals.dropFirst(mark).first(where: predicate) { return found }
                state.waiters[key] = Waiter(from: mark, predicate: predicate, continuation: continuation)
                return nil
            }
            if let found { continuation.resume(returning: found) }
        }
    }

    /// The next PropertiesChanged of `interface` from `mark` on that holds `property`: its changes.
    func changes(
        of interface: String = MPRISService.playerInterface, from mark: Int, holding property: String
    ) async -> [String: DBusValue]? {
        await signal(from: mark) { $0.changes?.interface == interface && $0.changes?.values[property] != nil }?.changes?
            .values
    }

    private func expire(_ key: UInt64) {
        state.withLock { $0.waiters.removeValue(forKey: key) }?.continuation.resume(returning: nil)
    }
}
