import Basics

/// A kind of value a setting can hold: parsed from the text of a config-file
/// line, an environment variable or a flag, and written back the same way.
public protocol ConfigValue: Sendable, Equatable {
    /// Parses `text` (already unquoted and trimmed); throws a message that
    /// quotes the text and says what was expected.
    init(configText text: String) throws(ConfigValueError)
    /// The value as it would be written in the file; parsing it gives the value back.
    var configText: String { get }
    /// A word naming the kind of value in `spool --help`, e.g. `SIZE`.
    static var placeholder: String { get }
    /// Every value there is, as written, when they are few words (shell completions offer
    /// them); empty for open-ended values such as sizes.
    static var choices: [String] { get }
}

extension ConfigValue {
    /// Open-ended by default.
    public static var choices: [String] { [] }
}

extension ConfigValue where Self: CaseIterable, Self: RawRepresentable, RawValue == String {
    /// Each case's name.
    public static var choices: [String] { allCases.map(\.rawValue) }
}

/// Why a text is not a valid value, in words for the user
/// (`'2 GB x' is not a size; write e.g. 2GiB, 500MB or 1048576`).
public struct ConfigValueError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The message, without the place the value came from.
    public let description: String
    /// Creates an error with a message for the user.
    public init(_ description: String) { self.description = description }
}

// MARK: Sizes

/// A number of bytes, written with an optional unit: `2GiB`, `500MB`,
/// `1.5 MiB`, `1048576`. Binary units (KiB, MiB, GiB, TiB) are powers of
/// 1024, decimal ones (KB, MB, GB, TB) powers of 1000; units ignore case.
public struct ByteCount: ConfigValue, Hashable, Comparable, CustomStringConvertible {
    /// The count itself.
    public var bytes: Int64

    /// Creates a count of `bytes`.
    public init(_ bytes: Int64) { self.bytes = bytes }

    /// `count` × 1024 bytes.
    public static func kibibytes(_ count: Int64) -> ByteCount { ByteCount(count << 10) }
    /// `count` × 1024² bytes.
    public static func mebibytes(_ count: Int64) -> ByteCount { ByteCount(count << 20) }
    /// `count` × 1024³ bytes.
    public static func gibibytes(_ count: Int64) -> ByteCount { ByteCount(count << 30) }

    /// Units from the largest, binary before decimal (the order `configText` prefers on a tie).
    private static let units: [(suffix: String, factor: Int64)] = [
        ("TiB", 1 << 40), ("TB", 1_000_000_000_000), ("GiB", 1 << 30), ("GB", 1_000_000_000),
        ("MiB", 1 << 20), ("MB", 1_000_000), ("KiB", 1 << 10), ("KB", 1000), ("B", 1),
    ]

    /// Parses a size such as `2GiB`, `500 MB`, `0.5GiB` or `1048576`.
    public init(configText text: String) throws(ConfigValueError) {
        let problem = ConfigValueError("'\(text)' is not a size; write e.g. 2GiB, 500MB or 1048576")
        let (number, unit) = splitNumberAndUnit(text)
        guard
            let factor = unit.isEmpty
                ? 1 : Self.units.first(where: { $0.suffix.lowercased() == unit.lowercased() })?.factor,
            let bytes = wholeUnits(number, times: factor)
        else { throw problem }
        self.bytes = bytes
    }

    /// The exact count with the unit that gives the smallest number: `2GiB`, `500MB`, `1000B`.
    public var configText: String {
        guard bytes != 0 else { return "0B" }
        let exact = Self.units.filter { bytes % $0.factor == 0 }
        let best = exact.min { bytes / $0.factor < bytes / $1.factor } ?? ("B", 1)
        return "\(bytes / best.factor)\(best.suffix)"
    }

    /// Same as `configText`.
    public var description: String { configText }
    /// The placeholder for sizes in `--help`.
    public static var placeholder: String { "SIZE" }
    /// Orders by byte count.
    public static func < (lhs: ByteCount, rhs: ByteCount) -> Bool { lhs.bytes < rhs.bytes }
}

/// How much free space the cache leaves on its filesystem: the larger of a
/// fixed size and a percentage of the filesystem's size. Written as one or
/// both, comma-separated: `1GiB, 5%`, `10%`, `500MB`; `0` means no floor.
public struct FreeSpaceFloor: ConfigValue, Hashable, CustomStringConvertible {
    /// The fixed part (zero when not given).
    public var size: ByteCount
    /// The percentage of the filesystem's size, 0 ≤ percent < 100 (zero when not given).
    public var percent: Double

    /// Creates a floor from its two parts.
    public init(size: ByteCount, percent: Double) {
        self.size = size
        self.percent = percent
    }

    /// The bytes to keep free on a filesystem of `filesystemSize` bytes.
    public func minimumFreeBytes(filesystemSize: Int64) -> Int64 {
        max(size.bytes, Int64((Double(filesystemSize) * percent / 100).rounded(.up)))
    }

    /// Parses `1GiB, 5%`, `5%`, `1GiB` or `0`.
    public init(configText text: String) throws(ConfigValueError) {
        let problem = ConfigValueError(
            "'\(text)' is not a free-space floor; write a size, a percentage or both, e.g. 1GiB, 5%")
        var size: ByteCount?
        var percent: Double?
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmed }
        guard (1...2).contains(parts.count) else { throw problem }
        for part in parts {
            if part.hasSuffix("%") {
                guard percent == nil, let value = Double(part.dropLast().trimmed), value >= 0, value < 100,
                    part.dropLast().trimmed.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") })
                else { throw problem }
                percent = value
            } else {
                guard size == nil, let value = try? ByteCount(configText: part) else { throw problem }
                size = value
            }
        }
        self.init(size: size ?? ByteCount(0), percent: percent ?? 0)
    }

    /// The parts that are set, `1GiB, 5%`; `0B` when neither is.
    public var configText: String {
        var parts: [String] = []
        if size.bytes > 0 { parts.append(size.configText) }
        if percent > 0 { parts.append("\(percent.formatted(maximumFractionDigits: 3))%") }
        return parts.isEmpty ? "0B" : parts.joined(separator: ", ")
    }

    /// Same as `configText`.
    public var description: String { configText }
    /// The placeholder for floors in `--help`.
    public static var placeholder: String { "SIZE,PERCENT" }
}

// MARK: Bit rates

/// A bit rate, written with an optional decimal unit: `128k`, `96kbps`, `0.5M`, `1.5 Mbit/s`, or a
/// bare number of bit/s (`128000`). `k` is a thousand and `M` a million (bit rates are decimal);
/// `bps`, `bit/s` or `b/s` may follow; case does not matter, except that a capital `B` means bytes
/// and is refused rather than read as bits eight times too small.
public struct BitRate: ConfigValue, Hashable, Comparable, CustomStringConvertible {
    /// The rate in bits per second.
    public var bitsPerSecond: Int

    /// Creates a rate of `bitsPerSecond`.
    public init(bitsPerSecond: Int) { self.bitsPerSecond = bitsPerSecond }

    /// `count` × 1000 bit/s.
    public static func kilobits(_ count: Int) -> BitRate { BitRate(bitsPerSecond: count * 1000) }

    /// The prefixes from the largest (the order `configText` prefers), as written back.
    private static let prefixes: [(prefix: String, factor: Int64)] = [("M", 1_000_000), ("k", 1000), ("", 1)]
    /// What may follow a prefix, lowercased; a bare `k` or `M` means bit/s too.
    private static let suffixes: Set<String> = ["", "bps", "bit/s", "b/s"]

    /// Parses a rate such as `128k`, `96 kbps`, `0.5M` or `128000`.
    public init(configText text: String) throws(ConfigValueError) {
        let problem = ConfigValueError("'\(text)' is not a bit rate; write e.g. 128k, 96kbps, 0.5M or 128000")
        let (number, unit) = splitNumberAndUnit(text)
        let lowered = unit.lowercased()
        guard !unit.contains("B"),
            let factor = Self.prefixes.first(where: { entry in
                lowered.hasPrefix(entry.prefix.lowercased())
                    && Self.suffixes.contains(String(lowered.dropFirst(entry.prefix.count)))
            })?.factor,
            let bits = wholeUnits(number, times: factor), let rate = Int(exactly: bits)
        else { throw problem }
        bitsPerSecond = rate
    }

    /// The exact rate with the prefix that gives the smallest whole number: `128kbps`, `1Mbps`,
    /// `1500bps`.
    public var configText: String {
        let best = Self.prefixes.first { Int64(bitsPerSecond) % $0.factor == 0 && bitsPerSecond != 0 } ?? ("", 1)
        return "\(Int64(bitsPerSecond) / best.factor)\(best.prefix)bps"
    }

    /// Same as `configText`.
    public var description: String { configText }
    /// The placeholder for bit rates in `--help`.
    public static var placeholder: String { "BITRATE" }
    /// Orders by rate.
    public static func < (lhs: BitRate, rhs: BitRate) -> Bool { lhs.bitsPerSecond < rhs.bitsPerSecond }
}

// MARK: Durations

extension Duration: ConfigValue {
    private static let durationUnits: [(suffix: String, milliseconds: Int64)] = [
        ("h", 3_600_000), ("min", 60_000), ("m", 60_000), ("s", 1000), ("ms", 1),
    ]

    /// Parses a duration to the millisecond: `60s`, `1m30s`, `500ms`, `2h`,
    /// `1.5s`, or a bare number of seconds (`90`).
    public init(configText text: String) throws(ConfigValueError) {
        let problem = ConfigValueError("'\(text)' is not a duration; write e.g. 60s, 1m30s, 500ms or 2h")
        let compact = text.filter { !$0.isWhitespace }
        if let seconds = Double(compact), seconds >= 0, compact.allSatisfy({ $0.isNumber || $0 == "." }) {
            self = .milliseconds(Int64((seconds * 1000).rounded()))
            return
        }
        var rest = Substring(compact)
        var milliseconds = 0.0
        while !rest.isEmpty {
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            rest = rest.dropFirst(number.count)
            let unit = rest.prefix { $0.isLetter }
            rest = rest.dropFirst(unit.count)
            guard let value = Double(number),
                let factor = Self.durationUnits.first(where: { $0.suffix == unit.lowercased() })?.milliseconds
            else { throw problem }
            milliseconds += value * Double(factor)
        }
        guard !compact.isEmpty, milliseconds < 1e15 else { throw problem }
        self = .milliseconds(Int64(milliseconds.rounded()))
    }

    /// The duration in hours, minutes, seconds and milliseconds: `1m30s`, `2s500ms`, `0s`.
    public var configText: String {
        var remaining = components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
        guard remaining > 0 else { return "0s" }
        var text = ""
        for (suffix, size) in Self.durationUnits where suffix != "min" && remaining >= size {
            text += "\(remaining / size)\(suffix)"
            remaining %= size
        }
        return text
    }

    /// The placeholder for durations in `--help`.
    public static var placeholder: String { "DURATION" }
}

// MARK: Plain values

extension Int: ConfigValue {
    /// Parses a count: a whole number from 0 up.
    public init(configText text: String) throws(ConfigValueError) {
        guard let value = Int(text), value >= 0, text.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw ConfigValueError("'\(text)' is not a count; write a whole number such as 0, 2 or 10")
        }
        self = value
    }

    /// The number in decimal.
    public var configText: String { String(self) }
    /// The placeholder for counts in `--help`.
    public static var placeholder: String { "COUNT" }
}

extension String: ConfigValue {
    /// Takes the text as it is.
    public init(configText text: String) { self = text }
    /// The text itself.
    public var configText: String { self }
    /// The placeholder for free text in `--help`.
    public static var placeholder: String { "TEXT" }
}

extension Array: ConfigValue where Element == String {
    /// Parses a comma-separated list; items are trimmed, empty items dropped,
    /// so an empty text is an empty list.
    public init(configText text: String) {
        self = text.split(separator: ",").map { $0.trimmed }.filter { !$0.isEmpty }
    }

    /// The items joined by `, `.
    public var configText: String { joined(separator: ", ") }
    /// The placeholder for lists in `--help`.
    public static var placeholder: String { "LIST" }
}

extension LogLevel: ConfigValue {
    /// Parses a level name: trace, debug, info, notice, warning (or warn), error.
    public init(configText text: String) throws(ConfigValueError) {
        guard let level = LogLevel(name: text) else {
            throw ConfigValueError(
                "'\(text)' is not a log level; use \(LogLevel.allCases.map(\.name).joined(separator: ", "))")
        }
        self = level
    }

    /// The level's name.
    public var configText: String { name }
    /// The placeholder for log levels in `--help`.
    public static var placeholder: String { "LEVEL" }
    /// The level names.
    public static var choices: [String] { allCases.map(\.name) }
}

/// What the sound server's requests to make way for another stream (a call) do: `pause`
/// follows them, `ignore` does not.
public enum InterruptionHandling: String, ConfigChoice {
    /// Pause for the other stream and play on after it, unless the listener acted meanwhile.
    case pause
    /// Keep playing (the server may still mute the stream meanwhile).
    case ignore

    /// Names the setting in messages.
    public static let choiceName = "way to take interruptions"
    /// The placeholder in `--help`.
    public static var placeholder: String { "MODE" }
}

/// A setting that is one of a few words: parsed in any case, written as the word, and a wrong
/// word answered with the choices (`'x' is not a metered setting; use auto, yes or no`).
public protocol ConfigChoice: ConfigValue, CaseIterable, RawRepresentable where RawValue == String {
    /// What the setting is, for messages ("metered setting").
    static var choiceName: String { get }
}

extension ConfigChoice {
    /// Parses one of the words, in any case.
    public init(configText text: String) throws(ConfigValueError) {
        guard let value = Self(rawValue: text.lowercased()) else {
            let words = Self.allCases.map(\.rawValue)
            let choices =
                words.count > 1 ? words.dropLast().joined(separator: ", ") + " or " + words.last! : words.joined()
            throw ConfigValueError("'\(text)' is not a \(Self.choiceName); use \(choices)")
        }
        self = value
    }

    /// The word.
    public var configText: String { rawValue }
    /// The words, in `--help`.
    public static var placeholder: String { allCases.map(\.rawValue).joined(separator: "|") }
}

/// A switch: `true`/`false`, also `yes`/`no`, `on`/`off` and `1`/`0`, in any case.
extension Bool: ConfigValue {
    /// Parses one of the words for on or off.
    public init(configText text: String) throws(ConfigValueError) {
        switch text.lowercased() {
        case "true", "yes", "on", "1": self = true
        case "false", "no", "off", "0": self = false
        default: throw ConfigValueError("'\(text)' is neither true nor false (also: yes/no, on/off, 1/0)")
        }
    }

    /// `true` or `false`.
    public var configText: String { self ? "true" : "false" }
    /// The placeholder in `--help`.
    public static var placeholder: String { "BOOL" }
    /// The two words `spool config` writes.
    public static var choices: [String] { ["true", "false"] }
}

// MARK: Helpers

/// Splits `"1.5 GiB"` into `("1.5", "GiB")`; whitespace between them is allowed.
private func splitNumberAndUnit(_ text: String) -> (number: Substring, unit: String) {
    let number = text.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
    return (number, text[number.endIndex...].trimmed)
}

/// `number` (decimal digits with at most one point) times `factor`, rounded to
/// a whole count; nil when it is not such a number or does not fit in 63 bits.
private func wholeUnits(_ number: Substring, times factor: Int64) -> Int64? {
    let halves = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
    guard let whole = Int64(halves[0].isEmpty ? "0" : halves[0]), !(halves[0].isEmpty && halves.count == 1) else {
        return nil
    }
    let (scaled, overflow) = whole.multipliedReportingOverflow(by: factor)
    guard !overflow else { return nil }
    guard halves.count == 2 else { return scaled }
    guard !halves[1].isEmpty, let fraction = Double("0.\(halves[1])") else { return nil }
    let (total, overflowAgain) = scaled.addingReportingOverflow(Int64((fraction * Double(factor)).rounded()))
    return overflowAgain ? nil : total
}

extension StringProtocol {
    /// The text without leading and trailing whitespace.
    var trimmed: String {
        let start = firstIndex { !$0.isWhitespace } ?? endIndex
        let end = lastIndex { !$0.isWhitespace }.map { index(after: $0) } ?? start
        return String(self[start..<Swift.max(start, end)])
    }
}

extension Double {
    /// The number without trailing zeros: `5`, `2.5`.
    func formatted(maximumFractionDigits digits: Int) -> String {
        let scale = (0..<digits).reduce(1.0) { result, _ in result * 10 }
        let rounded = (self * scale).rounded() / scale
        return rounded == rounded.rounded() ? String(Int64(rounded)) : String(rounded)
    }
}
