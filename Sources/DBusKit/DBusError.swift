/// A D-Bus error: a dotted error name and a human message. Thrown by calls
/// that got an error reply, and thrown by method handlers to send one.
public struct DBusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The error name, e.g. `org.freedesktop.DBus.Error.InvalidArgs`.
    public let name: String
    /// The human-readable message.
    public let message: String

    /// Creates an error with any valid error name.
    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    /// `name: message`, for logs and test failures.
    public var description: String { "\(name): \(message)" }

    private static func standard(_ suffix: String, _ message: String) -> DBusError {
        DBusError(name: "org.freedesktop.DBus.Error." + suffix, message: message)
    }

    /// `org.freedesktop.DBus.Error.Failed`: a generic failure.
    public static func failed(_ message: String) -> DBusError { standard("Failed", message) }
    /// `org.freedesktop.DBus.Error.InvalidArgs`: arguments of the wrong type or value.
    public static func invalidArgs(_ message: String) -> DBusError { standard("InvalidArgs", message) }
    /// `org.freedesktop.DBus.Error.NotSupported`: the operation is not supported now.
    public static func notSupported(_ message: String) -> DBusError { standard("NotSupported", message) }
    /// `org.freedesktop.DBus.Error.UnknownMethod`: no such method on the interface.
    public static func unknownMethod(_ message: String) -> DBusError { standard("UnknownMethod", message) }
    /// `org.freedesktop.DBus.Error.UnknownInterface`: no such interface on the object.
    public static func unknownInterface(_ message: String) -> DBusError { standard("UnknownInterface", message) }
    /// `org.freedesktop.DBus.Error.UnknownObject`: no object at that path.
    public static func unknownObject(_ message: String) -> DBusError { standard("UnknownObject", message) }
    /// `org.freedesktop.DBus.Error.UnknownProperty`: no such property on the interface.
    public static func unknownProperty(_ message: String) -> DBusError { standard("UnknownProperty", message) }
    /// `org.freedesktop.DBus.Error.PropertyReadOnly`: Set on a read-only property.
    public static func propertyReadOnly(_ message: String) -> DBusError { standard("PropertyReadOnly", message) }
    /// `org.freedesktop.DBus.Error.AccessDenied`: the caller may not do that.
    public static func accessDenied(_ message: String) -> DBusError { standard("AccessDenied", message) }
    /// `org.freedesktop.DBus.Error.NoReply`: the call timed out.
    public static func noReply(_ message: String) -> DBusError { standard("NoReply", message) }
    /// `org.freedesktop.DBus.Error.Disconnected`: the connection is closed or the bus went away.
    public static func disconnected(_ message: String) -> DBusError { standard("Disconnected", message) }
    /// `org.freedesktop.DBus.Error.ServiceUnknown`: no owner for the destination name.
    public static func serviceUnknown(_ message: String) -> DBusError { standard("ServiceUnknown", message) }
    /// `org.freedesktop.DBus.Error.MatchRuleInvalid`: a match rule that does not parse.
    public static func matchRuleInvalid(_ message: String) -> DBusError { standard("MatchRuleInvalid", message) }
    /// `org.freedesktop.DBus.Error.LimitsExceeded`.
    public static func limitsExceeded(_ message: String) -> DBusError { standard("LimitsExceeded", message) }
}
