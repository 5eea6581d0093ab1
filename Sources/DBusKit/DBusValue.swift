/// One D-Bus value of any type the protocol can carry. Containers carry their
/// element signatures so that empty arrays and dictionaries still have a
/// complete type.
public indirect enum DBusValue: Sendable, Equatable {
    /// `y`: an unsigned 8-bit integer.
    case byte(UInt8)
    /// `b`: a boolean.
    case boolean(Bool)
    /// `n`: a signed 16-bit integer.
    case int16(Int16)
    /// `q`: an unsigned 16-bit integer.
    case uint16(UInt16)
    /// `i`: a signed 32-bit integer.
    case int32(Int32)
    /// `u`: an unsigned 32-bit integer.
    case uint32(UInt32)
    /// `x`: a signed 64-bit integer.
    case int64(Int64)
    /// `t`: an unsigned 64-bit integer.
    case uint64(UInt64)
    /// `d`: an IEEE 754 double.
    case double(Double)
    /// `s`: a UTF-8 string without NUL characters.
    case string(String)
    /// `o`: an object path such as `/org/mpris/MediaPlayer2`.
    case objectPath(String)
    /// `g`: a type signature such as `a{sv}`.
    case signature(String)
    /// `h`: a Unix file descriptor; only connections that can pass them
    /// (`DBusConnection.canPassFileDescriptors`) send it.
    case unixFD(DBusFileDescriptor)
    /// `aT`: an array whose elements all have the single complete type `elementSignature`.
    case array(elementSignature: String, [DBusValue])
    /// `a{KV}`: a dictionary, as an ordered list of entries.
    case dictionary(keySignature: String, valueSignature: String, [DBusDictEntry])
    /// `(...)`: a structure of one or more fields.
    case structure([DBusValue])
    /// `v`: a value that carries its own type.
    case variant(DBusValue)

    /// The full D-Bus signature of this value, e.g. `"a{sv}"` or `"(ii)"`.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }

    /// The concatenated signature of a list of values, as a message header carries it.
    public static func signature(of values: [DBusValue]) -> String {
        values.map(\.signature).joined()
    }

    // MARK: Convenience constructors

    /// An `a{sv}` dictionary whose values are wrapped in variants, in the given order.
    public static func stringVariantDict(_ entries: [(String, DBusValue)]) -> DBusValue {
        .dictionary(
            keySignature: "s", valueSignature: "v",
            entries.map { DBusDictEntry(.string($0.0), .variant($0.1)) })
    }

    /// An `as` array of strings.
    public static func stringArray(_ strings: [String]) -> DBusValue {
        .array(elementSignature: "s", strings.map { .string($0) })
    }

    /// An `ao` array of object paths.
    public static func objectPathArray(_ paths: [String]) -> DBusValue {
        .array(elementSignature: "o", paths.map { .objectPath($0) })
    }

    // MARK: Convenience accessors

    /// The string of a `.string` value; nil for any other case.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The path of an `.objectPath` value; nil for any other case.
    public var objectPathValue: String? {
        if case .objectPath(let value) = self { return value }
        return nil
    }

    /// The signature of a `.signature` value; nil for any other case.
    public var signatureValue: String? {
        if case .signature(let value) = self { return value }
        return nil
    }

    /// The descriptor of a `.unixFD` value; nil for any other case.
    public var fileDescriptorValue: DBusFileDescriptor? {
        if case .unixFD(let value) = self { return value }
        return nil
    }

    /// Whether this value is or contains a Unix file descriptor.
    public var containsFileDescriptor: Bool {
        switch self {
        case .unixFD: true
        case .array(let element, let values):
            // The element type says whether to look (a large byte array costs nothing).
            (element.contains("h") || element.contains("v")) && values.contains { $0.containsFileDescriptor }
        case .dictionary(_, _, let entries):
            entries.contains { $0.key.containsFileDescriptor || $0.value.containsFileDescriptor }
        case .structure(let fields): fields.contains { $0.containsFileDescriptor }
        case .variant(let inner): inner.containsFileDescriptor
        default: false
        }
    }

    /// The flag of a `.boolean` value; nil for any other case.
    public var boolValue: Bool? {
        if case .boolean(let value) = self { return value }
        return nil
    }

    /// The value of a `.byte`; nil for any other case.
    public var byteValue: UInt8? {
        if case .byte(let value) = self { return value }
        return nil
    }

    /// The value of an `.int32`; nil for any other case.
    public var int32Value: Int32? {
        if case .int32(let value) = self { return value }
        return nil
    }

    /// The value of a `.uint32`; nil for any other case.
    public var uint32Value: UInt32? {
        if case .uint32(let value) = self { return value }
        return nil
    }

    /// The value of a `.uint64`; nil for any other case.
    public var uint64Value: UInt64? {
        if case .uint64(let value) = self { return value }
        return nil
    }

    /// Any integer case (`y n q i u x t`) as an `Int64`; nil for other cases
    /// and for a `uint64` too large to fit.
    public var int64Value: Int64? {
        switch self {
        case .byte(let value): Int64(value)
        case .int16(let value): Int64(value)
        case .uint16(let value): Int64(value)
        case .int32(let value): Int64(value)
        case .uint32(let value): Int64(value)
        case .int64(let value): value
        case .uint64(let value): Int64(exactly: value)
        default: nil
        }
    }

    /// A `.double`, or any integer case converted to `Double`; nil for other cases.
    /// Clients disagree on whether `1` or `1.0` is sent for a double property.
    public var doubleValue: Double? {
        if case .double(let value) = self { return value }
        return int64Value.map(Double.init) ?? uint64Value.map(Double.init)
    }

    /// The elements of an `.array`; nil for any other case.
    public var arrayValues: [DBusValue]? {
        if case .array(_, let values) = self { return values }
        return nil
    }

    /// The entries of a `.dictionary`; nil for any other case.
    public var dictionaryEntries: [DBusDictEntry]? {
        if case .dictionary(_, _, let entries) = self { return entries }
        return nil
    }

    /// The fields of a `.structure`; nil for any other case.
    public var structureFields: [DBusValue]? {
        if case .structure(let fields) = self { return fields }
        return nil
    }

    /// The content of a `.variant`; nil for any other case.
    public var variantValue: DBusValue? {
        if case .variant(let value) = self { return value }
        return nil
    }

    /// An `a{sv}` dictionary as a Swift dictionary of the unwrapped variant
    /// contents (a later duplicate key wins); nil for any other value.
    public var stringVariantDictValue: [String: DBusValue]? {
        guard case .dictionary("s", "v", let entries) = self else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.stringValue, let value = entry.value.variantValue else { return nil }
            result[key] = value
        }
        return result
    }

    /// An `as` array as Swift strings; nil for any other value.
    public var stringArrayValue: [String]? {
        guard case .array("s", let values) = self else { return nil }
        return values.compactMap(\.stringValue)
    }
}

/// One key/value pair of a `DBusValue.dictionary`.
public struct DBusDictEntry: Sendable, Equatable {
    /// The key: a basic (non-container) value.
    public var key: DBusValue
    /// The value: any value.
    public var value: DBusValue

    /// Creates an entry.
    public init(_ key: DBusValue, _ value: DBusValue) {
        self.key = key
        self.value = value
    }
}
