import Basics
internal import CDBus
import Dispatch
import FoundationEssentials
import Synchronization

/// A signal received through `DBusConnection.signals(matching:)`.
public struct DBusSignalMessage: Sendable {
    /// The sender's unique name (nil on peer-to-peer connections).
    public let sender: String?
    /// The object path the signal was emitted from.
    public let path: String
    /// The signal's interface.
    public let interface: String
    /// The signal's name.
    public let member: String
    /// The signal's arguments.
    public let arguments: [DBusValue]

    /// Creates a signal description (for tests and fakes).
    public init(sender: String?, path: String, interface: String, member: String, arguments: [DBusValue]) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}

/// A private connection to a message bus, owned by one thread that does all
/// of its I/O. Every method may be called from any thread (except the
/// blocking `requestName`/`releaseName` from inside a property getter or
/// setter, which run on that thread). Dropping the last reference closes it;
/// handlers that capture the connection keep it alive until `close()`.
public final class DBusConnection: Sendable {
    private static let threadsInitialized: Bool = dbus_threads_init_default() != 0

    let core: ConnectionCore

    /// The bus's well-known name, where the bus's own methods live.
    private static let bus = (name: "org.freedesktop.DBus", path: "/org/freedesktop/DBus")

    /// Connects to the session bus named by `DBUS_SESSION_BUS_ADDRESS` (dbus_bus_get_private).
    public static func session() throws -> DBusConnection {
        _ = threadsInitialized
        let connection = try withCError { dbus_bus_get_private(DBUS_BUS_SESSION, $0) }
        return try DBusConnection(registered: connection)
    }

    /// Connects to the bus at `address` (dbus_connection_open_private) and registers with it (Hello).
    public convenience init(address: String) throws {
        _ = DBusConnection.threadsInitialized
        guard !address.utf8.contains(0) else { throw DBusError.invalidArgs("invalid bus address") }
        let connection = try withCError { dbus_connection_open_private(address, $0) }
        do {
            _ = try withCError { dbus_bus_register(connection, $0) != 0 ? true : nil }
        } catch {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw error
        }
        try self.init(registered: connection)
    }

    /// Takes over a registered connection and starts its thread.
    private init(registered connection: OpaquePointer) throws {
        dbus_connection_set_exit_on_disconnect(connection, 0)
        let name = dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? ""
        do {
            // Known once authenticated (dbus_bus_register waited for that); the thread has not started yet.
            let canPass = dbus_connection_can_send_type(connection, TypeCode.unixFD) != 0
            core = try ConnectionCore(uniqueName: name, canPassFileDescriptors: canPass, logger: Logger(label: "dbus"))
        } catch {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw error
        }
        let core = self.core
        let handOver = UncheckedConnection(pointer: connection)
        core.finished.enter()
        startThread(name: "dbus \(name)") {
            ConnectionLoop(core: core, connection: handOver.pointer).run()
        }
    }

    deinit { close() }

    /// The unique name the bus gave this connection, e.g. `:1.42`.
    public var uniqueName: String { core.uniqueName }

    /// Sends what is queued, stops the connection thread and closes the
    /// connection. Pending calls fail with `Disconnected`, signal streams end.
    /// Idempotent; returns once the thread has ended (unless called on it).
    public func close() {
        core.shared.withLock { state in
            state.closing = true
            state.objects = [:]
        }
        core.wake()
        if !core.isConnectionThread { core.finished.wait() }
    }

    /// Calls `handler` once, on a queue of its own, when the connection ends without `close()`:
    /// the bus went away (a session ending) or dropped this connection. Calls it at once when
    /// that has already happened; never after `close()`. A later call replaces the handler.
    public func whenLost(_ handler: @escaping @Sendable () -> Void) {
        let alreadyLost = core.shared.withLock { state -> Bool in
            guard !state.finished else { return state.lost }
            state.onLost = handler
            return false
        }
        if alreadyLost { DispatchQueue.global().async(execute: handler) }
    }

    /// Whether `.unixFD` values can travel over this connection (both ends negotiated
    /// descriptor passing, which needs a Unix socket). Sending one where they cannot
    /// throws `NotSupported`.
    public var canPassFileDescriptors: Bool { core.canPassFileDescriptors }

    /// Whether the connection thread is still running (false after `close()` or once the bus went away).
    public var isConnected: Bool { !core.shared.withLock { $0.finished } }

    // MARK: Calls

    /// Calls a method and returns its results; throws the `DBusError` of an
    /// error reply, `NoReply` after `timeout`, `Disconnected` when the
    /// connection ends first, `InvalidArgs` for names or values that
    /// cannot be sent, and `NotSupported` for file descriptors the connection
    /// cannot pass. An empty `interface` leaves the interface field out.
    public func call(
        destination: String, path: String, interface: String, method: String,
        arguments: [DBusValue] = [], timeout: Duration = .seconds(5)
    ) async throws -> [DBusValue] {
        try core.checkCanSend(arguments)
        let message = try OutgoingMessage.methodCall(
            destination: destination, path: path, interface: interface, method: method, arguments: arguments)
        let result = await withCheckedContinuation { continuation in
            core.startCall(message, timeout: timeout) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Sends a method call flagged NO_REPLY_EXPECTED and returns at once.
    public func callWithoutReply(
        destination: String, path: String, interface: String, method: String, arguments: [DBusValue] = []
    ) throws {
        try core.checkCanSend(arguments)
        core.send(
            try OutgoingMessage.methodCall(
                destination: destination, path: path, interface: interface, method: method,
                arguments: arguments, noReply: true))
    }

    /// Calls a method of the bus itself and blocks the calling thread for the answer.
    private func callBusBlocking(_ method: String, _ arguments: [DBusValue]) throws -> [DBusValue] {
        precondition(!core.isConnectionThread, "blocking D-Bus call on the connection thread")
        let message = try OutgoingMessage.methodCall(
            destination: Self.bus.name, path: Self.bus.path, interface: Self.bus.name, method: method,
            arguments: arguments)
        let outcome = Mutex<CallResult?>(nil)
        let answered = DispatchSemaphore(value: 0)
        core.startCall(message, timeout: .seconds(25)) { result in
            outcome.withLock { $0 = result }
            answered.signal()
        }
        answered.wait()
        return try outcome.withLock { $0 }?.get() ?? []
    }

    private func callBus(_ method: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
        try await call(
            destination: Self.bus.name, path: Self.bus.path, interface: Self.bus.name, method: method,
            arguments: arguments)
    }

    // MARK: Names

    /// Asks for a well-known name without queueing (DBUS_NAME_FLAG_DO_NOT_QUEUE);
    /// true iff this connection is now its primary owner. Blocks briefly.
    public func requestName(_ name: String) throws -> Bool {
        let doNotQueue: UInt32 = 0x4
        let reply = try callBusBlocking("RequestName", [.string(name), .uint32(doNotQueue)])
        let primaryOwner: UInt32 = 1
        let alreadyOwner: UInt32 = 4
        return reply.first?.uint32Value == primaryOwner || reply.first?.uint32Value == alreadyOwner
    }

    /// Whether some connection owns `name` now. Blocks briefly; for start-up code that must
    /// know before it goes on (the async ``nameHasOwner(_:)`` serves everyone else).
    public func nameHasOwnerBlocking(_ name: String) throws -> Bool {
        try callBusBlocking("NameHasOwner", [.string(name)]).first?.boolValue ?? false
    }

    /// Gives up a well-known name. Blocks briefly.
    public func releaseName(_ name: String) throws {
        _ = try callBusBlocking("ReleaseName", [.string(name)])
    }

    /// Whether some connection owns `name` on the bus.
    public func nameHasOwner(_ name: String) async throws -> Bool {
        try await callBus("NameHasOwner", [.string(name)]).first?.boolValue ?? false
    }

    // MARK: Objects

    /// Exports `interfaces` at `path`, replacing what was there. The path also
    /// answers `org.freedesktop.DBus.Properties`, `Introspectable` and `Peer`;
    /// its parent paths answer `Introspect` listing their children.
    /// Traps on invalid paths, names or signatures (a programming error).
    public func export(path: String, interfaces: [DBusInterface]) {
        precondition(Syntax.isObjectPath(path), "invalid D-Bus object path '\(path)'")
        for interface in interfaces { interface.checkDescription() }
        core.shared.withLock { $0.objects[path] = interfaces }
    }

    /// Stops exporting anything at `path`.
    public func unexport(path: String) {
        _ = core.shared.withLock { $0.objects.removeValue(forKey: path) }
    }

    /// What `Introspect` returns for `path`: standard and exported interfaces
    /// in declaration order, then child nodes sorted by name.
    public func introspectionXML(path: String) -> String {
        let node = core.node(at: path)
        return Introspection.xml(interfaces: node.interfaces, children: node.children)
    }

    // MARK: Signals

    /// Emits a signal. Invalid names or values are logged and dropped.
    public func emitSignal(path: String, interface: String, name: String, arguments: [DBusValue]) {
        do {
            try core.checkCanSend(arguments)
            core.send(try OutgoingMessage.signal(path: path, interface: interface, name: name, arguments: arguments))
        } catch {
            core.logger.error("cannot emit \(interface).\(name) from \(path): \(error)")
        }
    }

    /// Emits `org.freedesktop.DBus.Properties.PropertiesChanged` for `interface` at `path`.
    public func emitPropertiesChanged(
        path: String, interface: String, changed: [(String, DBusValue)], invalidated: [String] = []
    ) {
        emitSignal(
            path: path, interface: StandardInterfaces.properties, name: "PropertiesChanged",
            arguments: [.string(interface), .stringVariantDict(changed), .stringArray(invalidated)])
    }

    /// The signals matching `rule` (a D-Bus match rule such as
    /// `"type='signal',interface='org.example.I'"`), until the connection
    /// closes or the stream is dropped. The bus starts sending them shortly
    /// after this returns; use `subscribe(matching:)` to wait until it does.
    public func signals(matching rule: String) -> AsyncStream<DBusSignalMessage> {
        let logger = core.logger
        return openStream(rule) { result in
            if case .failure(let error) = result { logger.error("AddMatch \(rule) failed: \(error)") }
        }
    }

    /// Like `signals(matching:)`, but returns only once the bus has accepted
    /// the rule, so that no signal emitted afterwards is missed.
    public func subscribe(matching rule: String) async throws -> AsyncStream<DBusSignalMessage> {
        let accepted = Mutex<AsyncStream<DBusSignalMessage>?>(nil)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<CallResult, Never>) in
            let stream = openStream(rule) { continuation.resume(returning: $0) }
            accepted.withLock { $0 = stream }
        }
        _ = try result.get()
        return accepted.withLock { $0! }
    }

    private func openStream(
        _ rule: String, addMatchCompleted: @escaping CallCompletion
    ) -> AsyncStream<DBusSignalMessage> {
        let (stream, continuation) = AsyncStream.makeStream(of: DBusSignalMessage.self)
        let addMatch: OutgoingMessage
        let parsed: MatchRule
        do {
            guard let matchRule = MatchRule(rule) else {
                throw DBusError.matchRuleInvalid("cannot parse '\(rule)'")
            }
            parsed = matchRule
            addMatch = try OutgoingMessage.methodCall(
                destination: Self.bus.name, path: Self.bus.path, interface: Self.bus.name, method: "AddMatch",
                arguments: [.string(rule)])
        } catch {
            continuation.finish()
            addMatchCompleted(.failure(error as? DBusError ?? .failed("\(error)")))
            return stream
        }
        let core = self.core
        let id = core.shared.withLock { state in
            state.nextSubscription += 1
            return state.nextSubscription
        }
        let removeMatch = try? OutgoingMessage.methodCall(
            destination: Self.bus.name, path: Self.bus.path, interface: Self.bus.name, method: "RemoveMatch",
            arguments: [.string(rule)], noReply: true)
        continuation.onTermination = { _ in
            core.post { loop in
                loop?.unsubscribe(id)
                if let removeMatch {
                    if let loop { loop.send(removeMatch) } else { removeMatch.discard() }
                }
            }
        }
        core.post { loop in
            guard let loop else {
                addMatch.discard()
                continuation.finish()
                return addMatchCompleted(.failure(.disconnected("the D-Bus connection is closed")))
            }
            loop.subscribe(id, rule: parsed, continuation: continuation)
            loop.sendCall(addMatch, timeout: .seconds(25), completion: addMatchCompleted)
        }
        return stream
    }

    /// How many method returns and error replies this connection has sent.
    var repliesSent: Int { core.repliesSent.load(ordering: .relaxed) }

    /// How many received signal bodies this connection has unmarshalled.
    var signalBodiesRead: Int { core.signalBodiesRead.load(ordering: .relaxed) }
}

/// The libdbus connection on its way to the thread that will own it.
private struct UncheckedConnection: @unchecked Sendable {
    let pointer: OpaquePointer
}
