internal import CDBus

/// Converts between `DBusValue` and message bodies through `DBusMessageIter`
/// (never the variadic `dbus_message_append_args`).
enum Marshal {
    /// Appends validated `values` to the body of `message`; false when libdbus runs
    /// out of memory or cannot duplicate a file descriptor (closed since validation).
    static func append(_ values: [DBusValue], to message: OpaquePointer) -> Bool {
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for value in values where !append(value, to: &iter) { return false }
        return true
    }

    private static func appendBasic<T: BitwiseCopyable>(
        _ type: Int32, _ value: T, to iter: inout DBusMessageIter
    ) -> Bool {
        withUnsafeBytes(of: value) { dbus_message_iter_append_basic(&iter, type, $0.baseAddress) != 0 }
    }

    private static func appendString(_ type: Int32, _ text: String, to iter: inout DBusMessageIter) -> Bool {
        text.withCString { pointer in
            var cString: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(&iter, type, &cString) != 0
        }
    }

    private static func appendContainer(
        _ type: Int32, signature: String?, to iter: inout DBusMessageIter,
        _ body: (inout DBusMessageIter) -> Bool
    ) -> Bool {
        var sub = DBusMessageIter()
        let opened: Bool =
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

    private static func append(_ value: DBusValue, to iter: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(let v): return appendBasic(TypeCode.byte, v, to: &iter)
        case .boolean(let v): return appendBasic(TypeCode.boolean, dbus_bool_t(v ? 1 : 0), to: &iter)
        case .int16(let v): return appendBasic(TypeCode.int16, v, to: &iter)
        case .uint16(let v): return appendBasic(TypeCode.uint16, v, to: &iter)
        case .int32(let v): return appendBasic(TypeCode.int32, v, to: &iter)
        case .uint32(let v): return appendBasic(TypeCode.uint32, v, to: &iter)
        case .int64(let v): return appendBasic(TypeCode.int64, v, to: &iter)
        case .uint64(let v): return appendBasic(TypeCode.uint64, v, to: &iter)
        case .double(let v): return appendBasic(TypeCode.double, v, to: &iter)
        case .string(let v): return appendString(TypeCode.string, v, to: &iter)
        case .objectPath(let v): return appendString(TypeCode.objectPath, v, to: &iter)
        case .signature(let v): return appendString(TypeCode.signature, v, to: &iter)
        case .unixFD(let descriptor):
            // libdbus dup()s the descriptor into the message; ours stays ours. Under
            // its lock, so a close on another thread cannot slip in between.
            return descriptor.withUnsafeDescriptor { fd in fd >= 0 && appendBasic(TypeCode.unixFD, fd, to: &iter) }
        case .array(let element, let values):
            return appendContainer(TypeCode.array, signature: element, to: &iter) { sub in
                values.allSatisfy { append($0, to: &sub) }
            }
        case .dictionary(let key, let valueSignature, let entries):
            return appendContainer(TypeCode.array, signature: "{\(key)\(valueSignature)}", to: &iter) { sub in
                entries.allSatisfy { entry in
                    appendContainer(TypeCode.dictEntry, signature: nil, to: &sub) { pair in
                        append(entry.key, to: &pair) && append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            return appendContainer(TypeCode.structure, signature: nil, to: &iter) { sub in
                fields.allSatisfy { append($0, to: &sub) }
            }
        case .variant(let inner):
            return appendContainer(TypeCode.variant, signature: inner.signature, to: &iter) { sub in
                append(inner, to: &sub)
            }
        }
    }

    /// Reads the whole body of `message`. With a `limit`, a body of more values than that
    /// throws `LimitsExceeded`, and an array of fixed-size values (bytes, numbers) that
    /// would exceed it throws before any of it is read: each value costs far more memory
    /// than its bytes on the wire, so a megabyte array would cost tens of megabytes.
    static func read(_ message: OpaquePointer, limit: Int = .max) throws -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        var budget = Budget(remaining: limit, limit: limit)
        return try readAll(&iter, &budget)
    }

    /// How many more values a body may hold.
    private struct Budget {
        var remaining: Int
        let limit: Int

        mutating func spend(_ count: Int) throws {
            remaining -= count
            if remaining < 0 { throw DBusError.limitsExceeded("a message may carry at most \(limit) values") }
        }
    }

    private static func readAll(_ iter: inout DBusMessageIter, _ budget: inout Budget) throws -> [DBusValue] {
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iter) != TypeCode.invalid {
            values.append(try read(&iter, &budget))
            dbus_message_iter_next(&iter)
        }
        return values
    }

    private static func currentSignature(_ iter: inout DBusMessageIter) -> String {
        guard let pointer = dbus_message_iter_get_signature(&iter) else { return "" }
        defer { dbus_free(pointer) }
        return String(cString: pointer)
    }

    private static func read(_ iter: inout DBusMessageIter, _ budget: inout Budget) throws -> DBusValue {
        let type = dbus_message_iter_get_arg_type(&iter)
        try budget.spend(1)
        var basic = DBusBasicValue()
        switch type {
        case TypeCode.array, TypeCode.structure, TypeCode.variant:
            return try readContainer(type, &iter, &budget)
        case TypeCode.invalid:
            throw DBusError.invalidArgs("missing value")
        default:
            dbus_message_iter_get_basic(&iter, &basic)
        }
        switch type {
        case TypeCode.byte: return .byte(basic.byt)
        case TypeCode.boolean: return .boolean(basic.bool_val != 0)
        case TypeCode.int16: return .int16(basic.i16)
        case TypeCode.uint16: return .uint16(basic.u16)
        case TypeCode.int32: return .int32(basic.i32)
        case TypeCode.uint32: return .uint32(basic.u32)
        case TypeCode.int64: return .int64(Int64(basic.i64))
        case TypeCode.uint64: return .uint64(UInt64(basic.u64))
        case TypeCode.double: return .double(basic.dbl)
        case TypeCode.string: return .string(String(cString: basic.str))
        case TypeCode.objectPath: return .objectPath(String(cString: basic.str))
        case TypeCode.signature: return .signature(String(cString: basic.str))
        case TypeCode.unixFD:
            // libdbus hands out a duplicate that we own from here on (-1 when it could not dup).
            guard basic.fd >= 0 else { throw DBusError.failed("cannot take a file descriptor out of a message") }
            return .unixFD(DBusFileDescriptor(taking: basic.fd))
        default:
            throw DBusError.invalidArgs("unsupported type code \(type)")
        }
    }

    private static func readContainer(_ type: Int32, _ iter: inout DBusMessageIter, _ budget: inout Budget) throws
        -> DBusValue
    {
        var sub = DBusMessageIter()
        switch type {
        case TypeCode.variant:
            dbus_message_iter_recurse(&iter, &sub)
            return .variant(try read(&sub, &budget))
        case TypeCode.structure:
            dbus_message_iter_recurse(&iter, &sub)
            return .structure(try readAll(&sub, &budget))
        default:
            let element = String(currentSignature(&iter).dropFirst())  // drop the "a"
            let elementType = dbus_message_iter_get_element_type(&iter)
            if budget.limit < .max, dbus_type_is_fixed(elementType) != 0 {
                // libdbus counts fixed-size elements from the array's length, without walking it.
                guard Int(dbus_message_iter_get_element_count(&iter)) <= budget.remaining else {
                    throw DBusError.limitsExceeded("a message may carry at most \(budget.limit) values")
                }
            }
            let isDictionary = elementType == TypeCode.dictEntry
            dbus_message_iter_recurse(&iter, &sub)
            guard isDictionary else { return .array(elementSignature: element, try readAll(&sub, &budget)) }
            let inner = element.dropFirst().dropLast()  // "{kv}" → "kv"
            let key = String(inner.prefix(1))
            let valueSignature = String(inner.dropFirst())
            var entries: [DBusDictEntry] = []
            while dbus_message_iter_get_arg_type(&sub) != TypeCode.invalid {
                var pair = DBusMessageIter()
                dbus_message_iter_recurse(&sub, &pair)
                let fields = try readAll(&pair, &budget)
                guard fields.count == 2 else { throw DBusError.invalidArgs("malformed dictionary entry") }
                entries.append(DBusDictEntry(fields[0], fields[1]))
                dbus_message_iter_next(&sub)
            }
            return .dictionary(keySignature: key, valueSignature: valueSignature, entries)
        }
    }
}
