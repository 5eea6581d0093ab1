internal import CDBus

/// Runs a libdbus function that reports failure through a `DBusError *`
/// and turns that failure into a thrown `DBusError`: the one funnel for
/// such calls. A nil result without an error set becomes `Failed`.
func withCError<T>(_ body: (UnsafeMutablePointer<CDBus.DBusError>) -> T?) throws -> T {
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    let result = body(&error)
    if dbus_error_is_set(&error) != 0 {
        throw DBusError(
            name: error.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed",
            message: error.message.map { String(cString: $0) } ?? "")
    }
    guard let result else { throw DBusError.failed("libdbus failed without an error") }
    return result
}

/// Where a method reply goes: the caller's unique name and the call's serial.
struct ReplyAddress: Sendable {
    /// The caller's unique name (absent only on peer-to-peer connections).
    let sender: String?
    /// The serial of the call being answered.
    let serial: UInt32
    /// False when the call was flagged NO_REPLY_EXPECTED.
    let wantsReply: Bool
}

/// A message built (and validated) on any thread and handed to the
/// connection thread to send. It owns one libdbus reference: exactly one
/// party calls `send` (on the connection thread) or `discard`.
struct OutgoingMessage: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Gives up the message without sending it (dbus_message_unref is thread-safe).
    func discard() { dbus_message_unref(pointer) }

    private static func build(_ pointer: OpaquePointer?, body: [DBusValue]) throws -> OutgoingMessage {
        guard let pointer else { throw DBusError.failed("out of memory building a message") }
        guard Marshal.append(body, to: pointer) else {
            dbus_message_unref(pointer)
            throw DBusError.failed("cannot marshal a message (out of memory, or a file descriptor closed meanwhile)")
        }
        return OutgoingMessage(pointer: pointer)
    }

    /// A method call. An empty `interface` leaves the interface field out.
    static func methodCall(
        destination: String?, path: String, interface: String, method: String, arguments: [DBusValue],
        noReply: Bool = false
    ) throws -> OutgoingMessage {
        if let destination, !Syntax.isBusName(destination) {
            throw DBusError.invalidArgs("invalid destination '\(destination)'")
        }
        guard Syntax.isObjectPath(path) else { throw DBusError.invalidArgs("invalid object path '\(path)'") }
        guard interface.isEmpty || Syntax.isInterfaceName(interface) else {
            throw DBusError.invalidArgs("invalid interface name '\(interface)'")
        }
        guard Syntax.isMemberName(method) else { throw DBusError.invalidArgs("invalid method name '\(method)'") }
        try DBusValue.validate(arguments)
        let message = try build(
            dbus_message_new_method_call(destination, path, interface.isEmpty ? nil : interface, method),
            body: arguments)
        if noReply { dbus_message_set_no_reply(message.pointer, 1) }
        return message
    }

    /// A signal from `path`.
    static func signal(path: String, interface: String, name: String, arguments: [DBusValue]) throws
        -> OutgoingMessage
    {
        guard Syntax.isObjectPath(path) else { throw DBusError.invalidArgs("invalid object path '\(path)'") }
        guard Syntax.isInterfaceName(interface) else {
            throw DBusError.invalidArgs("invalid interface name '\(interface)'")
        }
        guard Syntax.isMemberName(name) else { throw DBusError.invalidArgs("invalid signal name '\(name)'") }
        try DBusValue.validate(arguments)
        return try build(dbus_message_new_signal(path, interface, name), body: arguments)
    }

    private static func response(type: Int32, to address: ReplyAddress, body: [DBusValue]) throws
        -> OutgoingMessage
    {
        try DBusValue.validate(body)
        let message = try build(dbus_message_new(type), body: body)
        dbus_message_set_no_reply(message.pointer, 1)
        dbus_message_set_reply_serial(message.pointer, address.serial)
        if let sender = address.sender, Syntax.isBusName(sender) {
            dbus_message_set_destination(message.pointer, sender)
        }
        return message
    }

    /// A method return carrying `values`.
    static func reply(to address: ReplyAddress, _ values: [DBusValue]) throws -> OutgoingMessage {
        try response(type: DBUS_MESSAGE_TYPE_METHOD_RETURN, to: address, body: values)
    }

    /// An error reply; an invalid error name becomes `Failed` and NULs are dropped from the message.
    static func error(to address: ReplyAddress, _ error: DBusError) -> OutgoingMessage? {
        let name = Syntax.isErrorName(error.name) ? error.name : DBusError.failed("").name
        let text = error.message.filter { $0 != "\0" }
        guard let message = try? response(type: DBUS_MESSAGE_TYPE_ERROR, to: address, body: [.string(text)]) else {
            return nil
        }
        dbus_message_set_error_name(message.pointer, name)
        return message
    }
}

/// Header fields of a received message, read on the connection thread.
struct IncomingHeader {
    let type: Int32
    let sender: String?
    /// Set for a unicast message (and every method call), nil for a broadcast signal.
    let destination: String?
    let path: String?
    let interface: String?
    let member: String?
    let signature: String
    let serial: UInt32
    let replySerial: UInt32
    let errorName: String?
    let noReply: Bool

    init(_ message: OpaquePointer) {
        func text(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }
        type = dbus_message_get_type(message)
        sender = text(dbus_message_get_sender(message))
        destination = text(dbus_message_get_destination(message))
        path = text(dbus_message_get_path(message))
        interface = text(dbus_message_get_interface(message))
        member = text(dbus_message_get_member(message))
        signature = text(dbus_message_get_signature(message)) ?? ""
        serial = dbus_message_get_serial(message)
        replySerial = dbus_message_get_reply_serial(message)
        errorName = text(dbus_message_get_error_name(message))
        noReply = dbus_message_get_no_reply(message) != 0
    }

    var replyAddress: ReplyAddress { ReplyAddress(sender: sender, serial: serial, wantsReply: !noReply) }
}
