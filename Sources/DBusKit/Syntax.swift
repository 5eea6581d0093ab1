internal import CDBus

/// D-Bus type codes, as the `int` the libdbus iterator functions take.
enum TypeCode {
    static let invalid: Int32 = 0
    static let byte = code("y")
    static let boolean = code("b")
    static let int16 = code("n")
    static let uint16 = code("q")
    static let int32 = code("i")
    static let uint32 = code("u")
    static let int64 = code("x")
    static let uint64 = code("t")
    static let double = code("d")
    static let string = code("s")
    static let objectPath = code("o")
    static let signature = code("g")
    static let unixFD = code("h")
    static let array = code("a")
    static let variant = code("v")
    static let structure = code("r")
    static let dictEntry = code("e")

    private static func code(_ character: Unicode.Scalar) -> Int32 { Int32(UInt8(ascii: character)) }
}

/// Checks of names, paths and signatures, so that nothing invalid ever
/// reaches libdbus (which aborts the process on API misuse).
enum Syntax {
    private static func check(_ text: String, _ validate: (UnsafePointer<CChar>) -> dbus_bool_t) -> Bool {
        !text.utf8.contains(0) && text.withCString { validate($0) != 0 }
    }

    /// Whether `path` is a valid object path (dbus_validate_path).
    static func isObjectPath(_ path: String) -> Bool { check(path) { dbus_validate_path($0, nil) } }
    /// Whether `name` is a valid interface name (dbus_validate_interface).
    static func isInterfaceName(_ name: String) -> Bool { check(name) { dbus_validate_interface($0, nil) } }
    /// Whether `name` is a valid member name (dbus_validate_member).
    static func isMemberName(_ name: String) -> Bool { check(name) { dbus_validate_member($0, nil) } }
    /// Whether `name` is a valid error name (dbus_validate_error_name).
    static func isErrorName(_ name: String) -> Bool { check(name) { dbus_validate_error_name($0, nil) } }
    /// Whether `name` is a valid unique or well-known bus name (dbus_validate_bus_name).
    static func isBusName(_ name: String) -> Bool { check(name) { dbus_validate_bus_name($0, nil) } }
    /// Whether `signature` is a valid signature of zero or more complete types (dbus_signature_validate).
    static func isSignature(_ signature: String) -> Bool { check(signature) { dbus_signature_validate($0, nil) } }
    /// Whether `signature` is exactly one complete type (dbus_signature_validate_single).
    static func isSingleCompleteType(_ signature: String) -> Bool {
        check(signature) { dbus_signature_validate_single($0, nil) }
    }
    /// Whether `signature` is one basic (non-container) type, as dictionary keys must be.
    static func isBasicType(_ signature: String) -> Bool {
        signature.count == 1 && "ybnqiuxtdsogh".contains(signature)
    }

    /// Splits a valid signature into its complete types: `"sa{sv}(ii)"` → `["s", "a{sv}", "(ii)"]`.
    static func completeTypes(_ signature: String) -> [String] {
        let characters = Array(signature.utf8)
        var types: [String] = []
        var index = 0
        while index < characters.count {
            let start = index
            index = endOfCompleteType(characters, from: index)
            types.append(String(decoding: characters[start..<index], as: UTF8.self))
        }
        return types
    }

    private static func endOfCompleteType(_ characters: [UInt8], from start: Int) -> Int {
        var index = start
        while index < characters.count, characters[index] == UInt8(ascii: "a") { index += 1 }
        guard index < characters.count else { return index }
        let opener = characters[index]
        guard opener == UInt8(ascii: "(") || opener == UInt8(ascii: "{") else { return index + 1 }
        let closer = opener == UInt8(ascii: "(") ? UInt8(ascii: ")") : UInt8(ascii: "}")
        var depth = 0
        while index < characters.count {
            if characters[index] == opener { depth += 1 }
            if characters[index] == closer { depth -= 1 }
            index += 1
            if depth == 0 { break }
        }
        return index
    }
}

extension DBusValue {
    /// The deepest container nesting a message may carry (variants included).
    static let maximumDepth = 64

    /// Throws `InvalidArgs` unless this value can be marshalled: strings
    /// without NUL, valid paths and signatures, containers whose contents match
    /// their declared signatures, non-empty structures, bounded nesting.
    func validate(depth: Int = 0) throws {
        guard depth <= DBusValue.maximumDepth else { throw DBusError.invalidArgs("values nested too deeply") }
        switch self {
        case .string(let text):
            guard !text.utf8.contains(0) else { throw DBusError.invalidArgs("string contains a NUL character") }
        case .objectPath(let path):
            guard Syntax.isObjectPath(path) else { throw DBusError.invalidArgs("invalid object path '\(path)'") }
        case .signature(let signature):
            guard Syntax.isSignature(signature) else { throw DBusError.invalidArgs("invalid signature '\(signature)'") }
        case .array(let element, let values):
            guard Syntax.isSingleCompleteType(element), !element.hasPrefix("{") else {
                throw DBusError.invalidArgs("invalid array element signature '\(element)'")
            }
            for value in values {
                try value.validate(depth: depth + 1, expecting: element)
            }
        case .dictionary(let key, let valueSignature, let entries):
            guard Syntax.isBasicType(key), Syntax.isSingleCompleteType(valueSignature) else {
                throw DBusError.invalidArgs("invalid dictionary signature '{\(key)\(valueSignature)}'")
            }
            for entry in entries {
                try entry.key.validate(depth: depth + 2, expecting: key)
                try entry.value.validate(depth: depth + 2, expecting: valueSignature)
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw DBusError.invalidArgs("empty structure") }
            for field in fields { try field.validate(depth: depth + 1) }
        case .variant(let inner):
            try inner.validate(depth: depth + 1)
        case .unixFD(let descriptor):
            guard descriptor.isOpen else { throw DBusError.invalidArgs("file descriptor is closed") }
        case .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double:
            break
        }
    }

    private func validate(depth: Int, expecting expected: String) throws {
        guard signature == expected else {
            throw DBusError.invalidArgs("container element of type '\(signature)' where '\(expected)' was declared")
        }
        try validate(depth: depth)
    }

    /// Throws `InvalidArgs` unless every value is valid and together they form a valid message signature.
    static func validate(_ values: [DBusValue]) throws {
        for value in values { try value.validate() }
        let signature = DBusValue.signature(of: values)
        guard Syntax.isSignature(signature) else {
            throw DBusError.invalidArgs("arguments form an invalid signature '\(signature)'")
        }
    }
}
