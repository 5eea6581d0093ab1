internal import CDBus
import DBusKit
import Glibc

/// One argument of a raw message: a `DBusValue`, or a large array written
/// straight into the message, so that a test can send megabytes without
/// building millions of values first.
public indirect enum RawArgument: Sendable {
    /// A value, marshalled as it is (nesting is not checked: the bus judges it).
    case value(DBusValue)
    /// `ay` with `count` bytes.
    case bytes(count: Int)
    /// An array of `count` copies of `element`.
    case repeated(DBusValue, count: Int)
    /// `v` holding `inner`.
    case variant(RawArgument)
}

/// A message as libdbus would put it on the wire, with nothing checked that the
/// bus does not check: unicast signals, replies nobody asked for, calls
/// without an interface, bodies of any signature.
public struct RawMessage: Sendable {
    /// The four message types.
    public enum Kind: Sendable {
        /// A method call (it may ask for no reply).
        case methodCall
        /// A signal, broadcast or unicast.
        case signal
        /// A method return, answering `replySerial`.
        case methodReturn
        /// An error reply named `errorName`, answering `replySerial`.
        case error
    }

    /// The message type.
    public var kind: Kind
    /// The bus name it is addressed to; nil broadcasts a signal.
    public var destination: String?
    /// The object path (calls and signals; must be a valid path, or libdbus aborts).
    public var path: String = "/"
    /// The interface, if any (must be a valid name).
    public var interface: String?
    /// The member (calls and signals; must be a valid name).
    public var member: String = "Member"
    /// The error name of an error message.
    public var errorName: String = "org.example.Error.Fuzz"
    /// The serial a reply claims to answer.
    public var replySerial: UInt32 = 1
    /// Whether a call says it wants no reply.
    public var noReply = false
    /// The body.
    public var body: [RawArgument] = []

    /// A message of `kind` with the other fields at their defaults.
    public init(_ kind: Kind, destination: String?) {
        self.kind = kind
        self.destination = destination
    }
}

/// How a call ended, as the caller saw it.
public enum RawCallOutcome: Sendable, Equatable {
    /// A method return, from `sender`.
    case returned(sender: String)
    /// An error reply named `name`, from `sender`.
    case failed(name: String, sender: String)
    /// Nothing within the timeout.
    case noReply
    /// The connection to the bus was lost (the bus drops a client that sends what it cannot accept).
    case disconnected
    /// libdbus would not queue the message (out of memory).
    case notSent
}

/// A bare libdbus connection to a bus, used by one thread at a time. It does
/// its own blocking I/O, so each client of a concurrent test needs a thread.
public final class RawBusClient: @unchecked Sendable {
    private let connection: OpaquePointer
    /// The unique name the bus gave this connection.
    public let uniqueName: String
    /// Messages received that answered nothing this client waited for.
    public private(set) var strays = 0
    /// How many of the strays were method returns or errors.
    public private(set) var strayReplies = 0
    /// The time from sending the last call to its reply (building the message not included).
    public private(set) var lastRoundTrip: Duration = .zero

    /// Connects to the bus at `address` and registers (Hello).
    public init(address: String) throws {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let connection = dbus_connection_open_private(address, &error) else {
            throw RigError("cannot connect to \(address): \(error.message.map { String(cString: $0) } ?? "?")")
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        guard dbus_bus_register(connection, &error) != 0 else {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw RigError("Hello failed: \(error.message.map { String(cString: $0) } ?? "?")")
        }
        self.connection = connection
        uniqueName = dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? ""
    }

    deinit {
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    /// Whether the bus still has this client.
    public var isConnected: Bool { dbus_connection_get_is_connected(connection) != 0 }

    /// Sends `message` and waits until it has left; returns its serial, nil when it could not be sent.
    @discardableResult
    public func send(_ message: RawMessage) -> UInt32? {
        guard let built = build(message) else { return nil }
        defer { dbus_message_unref(built) }
        var serial: UInt32 = 0
        guard dbus_connection_send(connection, built, &serial) != 0 else { return nil }
        dbus_connection_flush(connection)
        discardIncoming()
        return serial
    }

    /// Sends a method call and waits up to `timeout` for its reply, setting other messages aside.
    public func call(_ message: RawMessage, timeout: Duration) -> RawCallOutcome {
        guard let built = build(message) else { return .notSent }
        var serial: UInt32 = 0
        let started = ContinuousClock.now
        let sent = dbus_connection_send(connection, built, &serial) != 0
        dbus_message_unref(built)
        guard sent else { return .notSent }
        let deadline = started + timeout
        defer { lastRoundTrip = ContinuousClock.now - started }
        while true {
            while let received = dbus_connection_pop_message(connection) {
                defer { dbus_message_unref(received) }
                guard dbus_message_get_reply_serial(received) == serial else {
                    countStray(received)
                    continue
                }
                let sender = dbus_message_get_sender(received).map { String(cString: $0) } ?? ""
                if dbus_message_get_type(received) == DBUS_MESSAGE_TYPE_ERROR {
                    let name = dbus_message_get_error_name(received).map { String(cString: $0) } ?? ""
                    return .failed(name: name, sender: sender)
                }
                return .returned(sender: sender)
            }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return .noReply }
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + 1)
            guard dbus_connection_read_write(connection, min(milliseconds, 100)) != 0, isConnected else {
                return .disconnected
            }
        }
    }

    /// Drops whatever has arrived (errors the bus sent back for fire-and-forget messages).
    private func discardIncoming() {
        _ = dbus_connection_read_write(connection, 0)
        while let received = dbus_connection_pop_message(connection) {
            countStray(received)
            dbus_message_unref(received)
        }
    }

    private func countStray(_ message: OpaquePointer) {
        strays += 1
        let type = dbus_message_get_type(message)
        if type == DBUS_MESSAGE_TYPE_METHOD_RETURN || type == DBUS_MESSAGE_TYPE_ERROR { strayReplies += 1 }
    }

    // MARK: Building

    private func build(_ message: RawMessage) -> OpaquePointer? {
        let built: OpaquePointer?
        switch message.kind {
        case .methodCall:
            built = dbus_message_new_method_call(message.destination, message.path, message.interface, message.member)
        case .signal:
            built = dbus_message_new_signal(message.path, message.interface ?? "org.example.Fuzz", message.member)
            if let built, let destination = message.destination { dbus_message_set_destination(built, destination) }
        case .methodReturn, .error:
            built = dbus_message_new(message.kind == .error ? DBUS_MESSAGE_TYPE_ERROR : DBUS_MESSAGE_TYPE_METHOD_RETURN)
            if let built {
                dbus_message_set_reply_serial(built, max(1, message.replySerial))  // libdbus aborts on 0
                dbus_message_set_no_reply(built, 1)
                if let destination = message.destination { dbus_message_set_destination(built, destination) }
                if message.kind == .error { dbus_message_set_error_name(built, message.errorName) }
            }
        }
        guard let built else { return nil }
        if message.noReply { dbus_message_set_no_reply(built, 1) }
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(built, &iter)
        for argument in message.body where !Self.append(argument, to: &iter) {
            dbus_message_unref(built)
            return nil
        }
        return built
    }

    private static func signature(of argument: RawArgument) -> String {
        switch argument {
        case .value(let value): value.signature
        case .bytes: "ay"
        case .repeated(let element, _): "a" + element.signature
        case .variant: "v"
        }
    }

    private static func append(_ argument: RawArgument, to iter: inout DBusMessageIter) -> Bool {
        switch argument {
        case .value(let value):
            return append(value, to: &iter)
        case .bytes(let count):
            let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                for index in 0..<count { buffer[index] = UInt8(truncatingIfNeeded: index &* 31) }
                initialized = count
            }
            return container(TypeCode.array, "y", &iter) { sub in
                bytes.withUnsafeBufferPointer { buffer in
                    var base = buffer.baseAddress
                    return dbus_message_iter_append_fixed_array(&sub, TypeCode.byte, &base, Int32(count)) != 0
                }
            }
        case .repeated(let element, let count):
            return container(TypeCode.array, element.signature, &iter) { sub in
                (0..<count).allSatisfy { _ in append(element, to: &sub) }
            }
        case .variant(let inner):
            return container(TypeCode.variant, signature(of: inner), &iter) { sub in append(inner, to: &sub) }
        }
    }

    private static func container(
        _ type: Int32, _ signature: String?, _ iter: inout DBusMessageIter, _ body: (inout DBusMessageIter) -> Bool
    ) -> Bool {
        var sub = DBusMessageIter()
        let opened =
            if let signature {
                signature.withCString { dbus_message_iter_open_container(&iter, type, $0, &sub) != 0 }
            } else {
                dbus_message_iter_open_container(&iter, type, nil, &sub) != 0
            }
        guard opened else { return false }
        guard body(&sub) else {
            dbus_message_iter_abandon_container(&iter, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iter, &sub) != 0
    }

    private static func basic<T: BitwiseCopyable>(_ type: Int32, _ value: T, _ iter: inout DBusMessageIter) -> Bool {
        withUnsafeBytes(of: value) { dbus_message_iter_append_basic(&iter, type, $0.baseAddress) != 0 }
    }

    private static func text(_ type: Int32, _ value: String, _ iter: inout DBusMessageIter) -> Bool {
        value.withCString { pointer in
            var cString: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(&iter, type, &cString) != 0
        }
    }

    private static func append(_ value: DBusValue, to iter: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(let v): return basic(TypeCode.byte, v, &iter)
        case .boolean(let v): return basic(TypeCode.boolean, dbus_bool_t(v ? 1 : 0), &iter)
        case .int16(let v): return basic(TypeCode.int16, v, &iter)
        case .uint16(let v): return basic(TypeCode.uint16, v, &iter)
        case .int32(let v): return basic(TypeCode.int32, v, &iter)
        case .uint32(let v): return basic(TypeCode.uint32, v, &iter)
        case .int64(let v): return basic(TypeCode.int64, v, &iter)
        case .uint64(let v): return basic(TypeCode.uint64, v, &iter)
        case .double(let v): return basic(TypeCode.double, v, &iter)
        case .string(let v): return text(TypeCode.string, v, &iter)
        case .objectPath(let v): return text(TypeCode.objectPath, v, &iter)
        case .signature(let v): return text(TypeCode.signature, v, &iter)
        case .unixFD: return false  // the fuzz passes no descriptors
        case .array(let element, let values):
            return container(TypeCode.array, element, &iter) { sub in values.allSatisfy { append($0, to: &sub) } }
        case .dictionary(let key, let valueSignature, let entries):
            return container(TypeCode.array, "{\(key)\(valueSignature)}", &iter) { sub in
                entries.allSatisfy { entry in
                    container(TypeCode.dictEntry, nil, &sub) { pair in
                        append(entry.key, to: &pair) && append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            return container(TypeCode.structure, nil, &iter) { sub in fields.allSatisfy { append($0, to: &sub) } }
        case .variant(let inner):
            return container(TypeCode.variant, inner.signature, &iter) { sub in append(inner, to: &sub) }
        }
    }
}

/// The D-Bus type codes, as the `Int32`s libdbus takes.
private enum TypeCode {
    static let byte = Int32(UInt8(ascii: "y"))
    static let boolean = Int32(UInt8(ascii: "b"))
    static let int16 = Int32(UInt8(ascii: "n"))
    static let uint16 = Int32(UInt8(ascii: "q"))
    static let int32 = Int32(UInt8(ascii: "i"))
    static let uint32 = Int32(UInt8(ascii: "u"))
    static let int64 = Int32(UInt8(ascii: "x"))
    static let uint64 = Int32(UInt8(ascii: "t"))
    static let double = Int32(UInt8(ascii: "d"))
    static let string = Int32(UInt8(ascii: "s"))
    static let objectPath = Int32(UInt8(ascii: "o"))
    static let signature = Int32(UInt8(ascii: "g"))
    static let array = Int32(UInt8(ascii: "a"))
    static let structure = Int32(UInt8(ascii: "r"))
    static let variant = Int32(UInt8(ascii: "v"))
    static let dictEntry = Int32(UInt8(ascii: "e"))
}
