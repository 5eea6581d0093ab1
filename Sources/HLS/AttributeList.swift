/// An attribute list (RFC 8216 §4.2): the `NAME=value,NAME="value"` text after a tag's colon,
/// with typed readers for each value form.
///
/// Reading is lenient where servers are sloppy: spaces around names and unquoted values are
/// dropped, a pair without `=` or with an unterminated quote is skipped, and of a name given twice
/// the first counts. Names are case-sensitive, as the RFC says.
public struct AttributeList: Sendable, Equatable {
    /// One attribute's value as written.
    private struct Value: Sendable, Equatable {
        /// The value, without the quotes of a quoted-string.
        var text: String
        /// Whether it was a quoted-string.
        var quoted: Bool
    }

    private var values: [String: Value] = [:]
    /// The attribute names, in the order written.
    public private(set) var names: [String] = []

    /// Reads an attribute list.
    public init(parsing text: some StringProtocol) {
        let bytes = Array(text.utf8)
        var index = 0
        while index < bytes.count {
            let nameStart = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "="), bytes[index] != UInt8(ascii: ",") {
                index += 1
            }
            let name = Self.trimmed(bytes[nameStart..<index])
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else {
                index += 1  // a pair without a value: skip it and its comma
                continue
            }
            index += 1
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") {
                index += 1
            }
            let value: Value
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                let contentStart = index + 1
                guard let closing = bytes[contentStart...].firstIndex(of: UInt8(ascii: "\"")) else { break }
                value = Value(text: String(decoding: bytes[contentStart..<closing], as: UTF8.self), quoted: true)
                index = closing + 1
                // Anything between the closing quote and the next comma is junk.
                while index < bytes.count, bytes[index] != UInt8(ascii: ",") { index += 1 }
            } else {
                let valueStart = index
                while index < bytes.count, bytes[index] != UInt8(ascii: ",") { index += 1 }
                value = Value(text: Self.trimmed(bytes[valueStart..<index]), quoted: false)
            }
            index += 1  // the comma
            if !name.isEmpty, values[name] == nil {
                values[name] = value
                names.append(name)
            }
        }
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)[...].trimmingASCIIWhitespace().description
    }

    /// The value of `name` whether quoted or not, without quotes: how the parser reads
    /// attributes, since servers quote enumerated values and leave strings bare.
    public func string(_ name: String) -> String? {
        values[name]?.text
    }

    /// The value of `name` when it is a quoted-string, without the quotes.
    public func quotedString(_ name: String) -> String? {
        values[name].flatMap { $0.quoted ? $0.text : nil }
    }

    /// The value of `name` when it is an enumerated-string (unquoted), such as `YES` or `AUDIO`.
    public func enumeratedString(_ name: String) -> String? {
        values[name].flatMap { $0.quoted ? nil : $0.text }
    }

    /// The value of `name` as a decimal-integer; nil when absent, not digits, or above `Int.max`.
    public func decimalInteger(_ name: String) -> Int? {
        values[name].flatMap { HLS.decimalInteger($0.text[...]) }
    }

    /// The value of `name` as a hexadecimal-sequence (`0x…`), most significant byte first.
    public func hexadecimalSequence(_ name: String) -> [UInt8]? {
        values[name].flatMap { HLS.hexadecimalSequence($0.text[...]) }
    }

    /// The value of `name` as a decimal-floating-point (no sign, no exponent).
    public func decimalFloatingPoint(_ name: String) -> Double? {
        values[name].flatMap { HLS.decimalFloatingPoint($0.text[...]) }
    }

    /// The value of `name` as a signed-decimal-floating-point (a leading `-` allowed).
    public func signedDecimalFloatingPoint(_ name: String) -> Double? {
        values[name].flatMap { HLS.decimalFloatingPoint($0.text[...], signed: true) }
    }

    /// The value of `name`, a signed-decimal-floating-point number of seconds, as an exact
    /// `Duration` (`TIME-OFFSET`, `PLANNED-DURATION`).
    public func duration(_ name: String) -> Duration? {
        values[name].flatMap { decimalDuration($0.text[...], signed: true) }
    }

    /// The value of `name` as a decimal-resolution (`1280x720`).
    public func resolution(_ name: String) -> Resolution? {
        values[name].flatMap { decimalResolution($0.text[...]) }.map { Resolution(width: $0.width, height: $0.height) }
    }

    /// Whether the value of `name` is `YES`, quoted or not (absent or anything else is no).
    public func isYes(_ name: String) -> Bool {
        values[name]?.text == "YES"
    }
}
