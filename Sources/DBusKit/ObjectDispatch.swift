internal import CDBus

/// Routing of method calls to exported objects and the standard interfaces
/// (Peer, Introspectable, Properties), with the error replies the D-Bus
/// specification names for each way a call can miss.
enum ObjectDispatch {
    typealias Node = (interfaces: [DBusInterface]?, children: [String])

    /// Finds the method a call addresses. Returns the standard interface's
    /// name for members the connection answers itself, nil for user methods.
    static func resolve(_ header: IncomingHeader, path: String, node: Node) throws -> (String?, DBusMethod) {
        let member = header.member ?? ""
        let exported = node.interfaces ?? []
        let isNode = node.interfaces != nil || path == "/" || !node.children.isEmpty
        var available: [(isStandard: Bool, interface: DBusInterface)] = exported.map { (false, $0) }
        for standard in StandardInterfaces.all {
            switch standard.name {
            case StandardInterfaces.peer: available.append((true, standard))
            case StandardInterfaces.introspectable where isNode: available.append((true, standard))
            case StandardInterfaces.properties where node.interfaces != nil: available.append((true, standard))
            default: break
            }
        }
        if !isNode, header.interface != StandardInterfaces.peer {
            throw DBusError.unknownObject("No object at path '\(path)'")
        }
        let candidates: [(isStandard: Bool, interface: DBusInterface)]
        if let name = header.interface {
            candidates = available.filter { $0.interface.name == name }
            guard !candidates.isEmpty else {
                throw DBusError.unknownInterface("No interface '\(name)' at path '\(path)'")
            }
        } else {
            candidates = available
        }
        let methods = candidates.lazy.compactMap { entry in entry.interface.method(named: member).map { (entry, $0) } }
        guard let found = methods.first else {
            let scope = header.interface.map { "interface '\($0)'" } ?? "path '\(path)'"
            throw DBusError.unknownMethod("No method '\(member)' with signature '\(header.signature)' on \(scope)")
        }
        let (entry, method) = found
        guard header.signature == method.inSignature else {
            throw DBusError.invalidArgs(
                "\(entry.interface.name).\(member) expects arguments '\(method.inSignature)', got '\(header.signature)'"
            )
        }
        return (entry.isStandard ? entry.interface.name : nil, method)
    }

    /// Answers a member of a standard interface, synchronously (property getters run here; a
    /// Set is ``propertySetter(_:in:)``'s, run in the caller's inbox).
    static func standard(
        _ interface: String, _ method: DBusMethod, _ arguments: [DBusValue], _ path: String, _ node: Node
    ) throws -> [DBusValue] {
        let exported = node.interfaces ?? []
        switch (interface, method.name) {
        case (StandardInterfaces.peer, "Ping"):
            return []
        case (StandardInterfaces.peer, "GetMachineId"):
            guard let id = dbus_get_local_machine_id() else { throw DBusError.failed("no machine id") }
            defer { dbus_free(id) }
            return [.string(String(cString: id))]
        case (StandardInterfaces.introspectable, "Introspect"):
            return [.string(Introspection.xml(interfaces: node.interfaces, children: node.children))]
        case (StandardInterfaces.properties, "Get"):
            let property = try findProperty(arguments, in: exported)
            guard property.access.isReadable else {
                throw DBusError.invalidArgs("Property '\(property.name)' is write-only")
            }
            return [.variant(try value(of: property))]
        case (StandardInterfaces.properties, "GetAll"):
            return [try allProperties(interface: arguments[0].stringValue ?? "", in: exported)]
        default:
            throw DBusError.unknownMethod("No method '\(method.name)' on interface '\(interface)'")
        }
    }

    private static func value(of property: DBusProperty) throws -> DBusValue {
        let value = property.get()
        guard value.signature == property.signature else {
            throw DBusError.failed(
                "Property '\(property.name)' produced a value of type '\(value.signature)', "
                    + "declared '\(property.signature)'")
        }
        do {
            try value.validate()
        } catch let error as DBusError {
            // Say what is wrong (a NUL in a string), not just that something is.
            throw DBusError.failed("Property '\(property.name)' produced a value D-Bus cannot carry: \(error.message)")
        }
        return value
    }

    /// The interfaces a Properties call names: all of them for an empty name.
    private static func interfaces(named name: String, in exported: [DBusInterface]) throws -> [DBusInterface] {
        if name.isEmpty { return exported }
        if let found = exported.first(where: { $0.name == name }) { return [found] }
        if StandardInterfaces.all.contains(where: { $0.name == name }) { return [] }
        throw DBusError.unknownInterface("No interface '\(name)'")
    }

    private static func findProperty(_ arguments: [DBusValue], in exported: [DBusInterface]) throws -> DBusProperty {
        let interfaceName = arguments[0].stringValue ?? ""
        let name = arguments[1].stringValue ?? ""
        let scope = try interfaces(named: interfaceName, in: exported)
        guard let property = scope.lazy.compactMap({ $0.property(named: name) }).first else {
            throw DBusError.unknownProperty("No property '\(name)' on interface '\(interfaceName)'")
        }
        return property
    }

    private static func allProperties(interface name: String, in exported: [DBusInterface]) throws -> DBusValue {
        var entries: [(String, DBusValue)] = []
        for interface in try interfaces(named: name, in: exported) {
            for property in interface.properties where property.access.isReadable {
                guard let value = try? value(of: property) else { continue }
                entries.append((property.name, value))
            }
        }
        return .stringVariantDict(entries)
    }

    /// Checks a Properties.Set call (the property exists, is writable, the value has its type)
    /// and returns what applies it, to run in the order of the caller's calls.
    static func propertySetter(_ arguments: [DBusValue], in exported: [DBusInterface]) throws
        -> @Sendable () async throws -> Void
    {
        let property = try findProperty(arguments, in: exported)
        guard property.access.isWritable, let set = property.set else {
            throw DBusError.propertyReadOnly("Property '\(property.name)' is read-only")
        }
        let value = arguments[2].variantValue ?? arguments[2]
        guard value.signature == property.signature else {
            throw DBusError.invalidArgs(
                "Property '\(property.name)' has type '\(property.signature)', got '\(value.signature)'")
        }
        return { try await set(value) }
    }
}
