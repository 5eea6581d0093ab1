/// A method an exported interface offers. Its handler runs asynchronously
/// (one task per call); a thrown `DBusError` becomes that error reply, any
/// other error becomes `org.freedesktop.DBus.Error.Failed`.
public struct DBusMethod: Sendable {
    /// The member name, e.g. `PlayPause`.
    public let name: String
    /// The signature the arguments must have; calls with another get `InvalidArgs`.
    public let inSignature: String
    /// The signature the handler's results must have.
    public let outSignature: String
    /// Names for the input arguments, for introspection (may be shorter than the signature).
    public let argumentNames: [String]
    /// Names for the results, for introspection (may be shorter than the signature).
    public let resultNames: [String]
    /// Computes the results from the arguments, which already match `inSignature`.
    public let handler: @Sendable ([DBusValue]) async throws -> [DBusValue]

    /// Describes a method.
    public init(
        _ name: String, in inSignature: String = "", out outSignature: String = "",
        argumentNames: [String] = [], resultNames: [String] = [],
        handler: @escaping @Sendable ([DBusValue]) async throws -> [DBusValue]
    ) {
        self.name = name
        self.inSignature = inSignature
        self.outSignature = outSignature
        self.argumentNames = argumentNames
        self.resultNames = resultNames
        self.handler = handler
    }
}

/// Whether a property can be read, written, or both through `org.freedesktop.DBus.Properties`.
public enum DBusPropertyAccess: Sendable {
    /// Get and GetAll only; Set gets `PropertyReadOnly`.
    case read
    /// Set only; Get gets `InvalidArgs` and GetAll leaves it out.
    case write
    /// Get, GetAll and Set.
    case readWrite

    var isReadable: Bool { self != .write }
    var isWritable: Bool { self != .read }

    var introspectionName: String {
        switch self {
        case .read: "read"
        case .write: "write"
        case .readWrite: "readwrite"
        }
    }
}

/// A property an exported interface offers. The getter runs synchronously on
/// the connection's thread and must be cheap (return a snapshot); the setter
/// too, receiving a value already checked against `signature`.
public struct DBusProperty: Sendable {
    /// The property name, e.g. `PlaybackStatus`.
    public let name: String
    /// The single complete type of the property's value.
    public let signature: String
    /// Which of Get and Set are allowed.
    public let access: DBusPropertyAccess
    /// Returns the current value; it must have type `signature`.
    public let get: @Sendable () -> DBusValue
    /// Applies a new value, in the order of the caller's calls; nil makes the property
    /// read-only whatever `access` says.
    public let set: (@Sendable (DBusValue) async throws -> Void)?

    /// Describes a property.
    public init(
        _ name: String, signature: String, access: DBusPropertyAccess = .read,
        get: @escaping @Sendable () -> DBusValue,
        set: (@Sendable (DBusValue) async throws -> Void)? = nil
    ) {
        self.name = name
        self.signature = signature
        self.access = access
        self.get = get
        self.set = set
    }
}

/// A signal an exported interface may emit, for introspection.
public struct DBusSignal: Sendable {
    /// The member name, e.g. `Seeked`.
    public let name: String
    /// The signal's arguments in order.
    public let arguments: [(name: String, signature: String)]

    /// Describes a signal.
    public init(_ name: String, arguments: [(name: String, signature: String)] = []) {
        self.name = name
        self.arguments = arguments
    }
}

/// An interface exported on an object path: methods, properties and signals,
/// kept in declaration order (which is also the introspection order).
public struct DBusInterface: Sendable {
    /// The interface name, e.g. `org.mpris.MediaPlayer2.Player`.
    public let name: String
    /// The methods, in declaration order.
    public let methods: [DBusMethod]
    /// The properties, in declaration order.
    public let properties: [DBusProperty]
    /// The signals, in declaration order.
    public let signals: [DBusSignal]

    /// Describes an interface.
    public init(
        _ name: String, methods: [DBusMethod] = [], properties: [DBusProperty] = [], signals: [DBusSignal] = []
    ) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }

    /// The method called `name`, if any.
    public func method(named name: String) -> DBusMethod? { methods.first { $0.name == name } }
    /// The property called `name`, if any.
    public func property(named name: String) -> DBusProperty? { properties.first { $0.name == name } }

    /// Traps on a description no correct program produces: invalid names or signatures.
    func checkDescription() {
        precondition(Syntax.isInterfaceName(name), "invalid D-Bus interface name '\(name)'")
        for method in methods {
            precondition(Syntax.isMemberName(method.name), "invalid method name '\(method.name)' in \(name)")
            precondition(
                Syntax.isSignature(method.inSignature) && Syntax.isSignature(method.outSignature),
                "invalid signature on \(name).\(method.name)")
        }
        for property in properties {
            precondition(Syntax.isMemberName(property.name), "invalid property name '\(property.name)' in \(name)")
            precondition(
                Syntax.isSingleCompleteType(property.signature), "invalid signature on \(name).\(property.name)")
        }
        for signal in signals {
            precondition(Syntax.isMemberName(signal.name), "invalid signal name '\(signal.name)' in \(name)")
            precondition(
                signal.arguments.allSatisfy { Syntax.isSingleCompleteType($0.signature) },
                "invalid signature on \(name).\(signal.name)")
        }
    }
}

/// The standard interfaces every exported object also answers, served by the
/// connection itself. Their handlers are placeholders: the connection
/// dispatches these members before it would call them.
enum StandardInterfaces {
    static let peer = "org.freedesktop.DBus.Peer"
    static let introspectable = "org.freedesktop.DBus.Introspectable"
    static let properties = "org.freedesktop.DBus.Properties"

    private static let unused: @Sendable ([DBusValue]) async throws -> [DBusValue] = { _ in [] }

    static let all: [DBusInterface] = [
        DBusInterface(
            peer,
            methods: [
                DBusMethod("Ping", handler: unused),
                DBusMethod("GetMachineId", out: "s", resultNames: ["machine_uuid"], handler: unused),
            ]),
        DBusInterface(
            introspectable,
            methods: [DBusMethod("Introspect", out: "s", resultNames: ["xml_data"], handler: unused)]),
        DBusInterface(
            properties,
            methods: [
                DBusMethod(
                    "Get", in: "ss", out: "v", argumentNames: ["interface_name", "property_name"],
                    resultNames: ["value"], handler: unused),
                DBusMethod(
                    "GetAll", in: "s", out: "a{sv}", argumentNames: ["interface_name"], resultNames: ["properties"],
                    handler: unused),
                DBusMethod(
                    "Set", in: "ssv", argumentNames: ["interface_name", "property_name", "value"], handler: unused),
            ],
            signals: [
                DBusSignal(
                    "PropertiesChanged",
                    arguments: [
                        ("interface_name", "s"), ("changed_properties", "a{sv}"), ("invalidated_properties", "as"),
                    ])
            ]),
    ]
}

/// Builds introspection XML in a fixed layout: standard interfaces, then the
/// object's interfaces as declared, then child nodes sorted by name.
enum Introspection {
    static let header = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
        "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">

        """

    static func xml(interfaces: [DBusInterface]?, children: [String]) -> String {
        var xml = header + "<node>\n"
        if let interfaces {
            for interface in StandardInterfaces.all + interfaces {
                describe(interface, into: &xml)
            }
        }
        for child in children {
            xml += "  <node name=\"\(escape(child))\"/>\n"
        }
        return xml + "</node>\n"
    }

    private static func describe(_ interface: DBusInterface, into xml: inout String) {
        xml += "  <interface name=\"\(escape(interface.name))\">\n"
        for method in interface.methods {
            let arguments =
                arguments(method.inSignature, names: method.argumentNames, direction: "in")
                + arguments(method.outSignature, names: method.resultNames, direction: "out")
            element("method", name: method.name, children: arguments, into: &xml)
        }
        for property in interface.properties {
            xml +=
                "    <property name=\"\(escape(property.name))\" type=\"\(escape(property.signature))\""
                + " access=\"\(property.access.introspectionName)\"/>\n"
        }
        for signal in interface.signals {
            let arguments = signal.arguments.map {
                "<arg name=\"\(escape($0.name))\" type=\"\(escape($0.signature))\"/>"
            }
            element("signal", name: signal.name, children: arguments, into: &xml)
        }
        xml += "  </interface>\n"
    }

    private static func element(_ tag: String, name: String, children: [String], into xml: inout String) {
        guard !children.isEmpty else {
            xml += "    <\(tag) name=\"\(escape(name))\"/>\n"
            return
        }
        xml += "    <\(tag) name=\"\(escape(name))\">\n"
        for child in children { xml += "      \(child)\n" }
        xml += "    </\(tag)>\n"
    }

    private static func arguments(_ signature: String, names: [String], direction: String) -> [String] {
        Syntax.completeTypes(signature).enumerated().map { index, type in
            let name = index < names.count ? " name=\"\(escape(names[index]))\"" : ""
            return "<arg\(name) type=\"\(escape(type))\" direction=\"\(direction)\"/>"
        }
    }

    static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
