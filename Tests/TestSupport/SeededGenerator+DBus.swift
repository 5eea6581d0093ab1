import DBusKit

/// Random D-Bus material for fuzz tests: valid names and values of every type.
extension SeededGenerator {
    /// A valid D-Bus member or name element: a letter, then letters, digits and underscores.
    public mutating func identifier() -> String {
        let first = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
        let rest = first + Array("0123456789")
        return String(first[next(below: first.count)])
            + String((0..<next(below: 12)).map { _ in rest[next(below: rest.count)] })
    }

    /// Zero to three random values.
    public mutating func values() -> [DBusValue] { (0..<next(below: 4)).map { _ in value(depth: 0) } }

    /// A random value of any type but `h`, nested at most a few levels below `depth`;
    /// now and then a string of 100,000 characters.
    public mutating func value(depth: Int) -> DBusValue {
        let kinds = depth > 3 ? 12 : 17
        switch next(below: kinds) {
        case 0: return .byte(UInt8(truncatingIfNeeded: next()))
        case 1: return .boolean(next() & 1 == 0)
        case 2: return .int16(Int16(truncatingIfNeeded: next()))
        case 3: return .uint16(UInt16(truncatingIfNeeded: next()))
        case 4: return .int32(Int32(truncatingIfNeeded: next()))
        case 5: return .uint32(UInt32(truncatingIfNeeded: next()))
        case 6: return .int64(Int64(bitPattern: next()))
        case 7: return .uint64(next())
        case 8: return .double(Double(Int64(bitPattern: next())) / 1e3)
        case 9:
            return .string(
                identifier() + "ü\u{1F3B5}" + (next(below: 20) == 0 ? String(repeating: "z", count: 100_000) : ""))
        case 10: return .objectPath("/" + identifier())
        case 11: return .signature(["", "s", "a{sv}", "(ii)v"][next(below: 4)])
        case 12:
            let element = value(depth: depth + 1)
            let count = next(below: 4)
            let elements = (0..<count).map { _ in similar(to: element) }
            return .array(elementSignature: element.signature, elements)
        case 13:
            let inner = value(depth: depth + 1)
            return .dictionary(
                keySignature: "s", valueSignature: inner.signature,
                (0..<next(below: 3)).map { _ in DBusDictEntry(.string(identifier()), similar(to: inner)) })
        case 14: return .structure((0...next(below: 3)).map { _ in value(depth: depth + 1) })
        case 15: return .variant(value(depth: depth + 1))
        default: return .stringVariantDict((0..<next(below: 3)).map { _ in (identifier(), value(depth: depth + 1)) })
        }
    }

    /// Another value of the same type as `value` (arrays must be homogeneous).
    private mutating func similar(to value: DBusValue) -> DBusValue {
        switch value {
        case .int32: .int32(Int32(truncatingIfNeeded: next()))
        case .string: .string(identifier())
        case .variant: .variant(self.value(depth: 5))
        default: value
        }
    }
}
