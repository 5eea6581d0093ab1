import Basics
import FoundationEssentials
import Glibc

/// A seek target as the user writes it: `90`, `1:30`, `1h2m3s`, `50%`, each optionally `+`/`-` (relative).
enum SeekTarget: Equatable {
    /// Seconds from the start.
    case absolute(Double)
    /// Seconds forward (positive) or back (negative) from the current position.
    case relative(Double)
    /// A fraction of the track's length, 0...1.
    case fraction(Double)

    /// Parses `text`, or returns nil.
    init?(_ text: String) {
        if text.hasSuffix("%") {
            guard let percent = Double(text.dropLast()), (0...100).contains(percent) else { return nil }
            self = .fraction(percent / 100)
            return
        }
        let sign: Double? = text.hasPrefix("+") ? 1 : text.hasPrefix("-") ? -1 : nil
        guard let seconds = parseDuration(sign == nil ? text : String(text.dropFirst())) else { return nil }
        self = sign.map { .relative($0 * seconds) } ?? .absolute(seconds)
    }
}

/// Seconds in `90`, `1.5`, `1:30`, `1:02:03`, `1h2m3s`, `2m`, `90s`; nil when malformed.
func parseDuration(_ text: String) -> Double? {
    if text.contains(":") {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map { Double($0) }
        guard (2...3).contains(parts.count), parts.allSatisfy({ $0 != nil && $0! >= 0 }) else { return nil }
        return parts.reduce(0) { $0 * 60 + $1! }
    }
    if let plain = Double(text), plain >= 0, plain.isFinite { return plain }
    var total = 0.0
    var number = ""
    var units = Set<Character>()
    for character in text {
        if character.isNumber || character == "." {
            number.append(character)
        } else if let scale = ["h": 3600.0, "m": 60, "s": 1][character], let value = Double(number),
            units.insert(character).inserted
        {
            total += value * scale
            number = ""
        } else {
            return nil
        }
    }
    return number.isEmpty && !units.isEmpty ? total : nil
}

/// `m:ss`, or `h:mm:ss` from an hour on.
func formatTime(_ seconds: Double) -> String {
    let whole = max(0, Int(seconds))
    let (hours, minutes, secs) = (whole / 3600, whole / 60 % 60, whole % 60)
    return hours > 0
        ? cFormat("%ld:%02ld:%02ld", hours, minutes, secs)
        : cFormat("%ld:%02ld", minutes, secs)
}

/// `hh:mm:ss` of a moment (seconds since 1970) in the local time zone.
func formatClockTime(_ secondsSince1970: Double) -> String {
    var time = time_t(secondsSince1970.rounded(.down))
    var parts = tm()
    guard localtime_r(&time, &parts) != nil else { return "?" }
    return cFormat("%02d:%02d:%02d", parts.tm_hour, parts.tm_min, parts.tm_sec)
}

/// A byte count as `12.3 MiB`.
func formatBytes(_ bytes: Int64) -> String {
    var value = Double(bytes)
    for unit in ["B", "KiB", "MiB", "GiB"] {
        if value < 1024 || unit == "GiB" { return unit == "B" ? "\(bytes) B" : "\(cFormat("%.1f", value)) \(unit)" }
        value /= 1024
    }
    return "\(bytes) B"
}

/// A progress bar `[###===----]`: `#` played (up to `played`, a fraction), `=` cached
/// ahead (byte ranges as fractions of the length), `-` neither.
func progressBar(played: Double?, cached: [ClosedRange<Double>], width: Int = 30) -> String {
    let cells = (0..<width).map { cell -> Character in
        let middle = (Double(cell) + 0.5) / Double(width)
        if let played, middle <= played { return "#" }
        return cached.contains { $0.contains(middle) } ? "=" : "-"
    }
    return "[" + String(cells) + "]"
}

/// Byte ranges as fractions of `length` (nothing when the length is unknown).
func fractions(_ ranges: [(Int64, Int64)], length: Int64) -> [ClosedRange<Double>] {
    guard length > 0 else { return [] }
    return ranges.map { Double($0.0) / Double(length)...Double($0.1) / Double(length) }
}
