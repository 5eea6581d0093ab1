/// Durations and positions as people read them in messages and log lines: `0.38 s`,
/// `2.5 s`, `12.4 s`, `1:05.3`. A raw `Double` or `Duration` prints fifteen digits
/// (`0.383994267854884 s`) that no one reads; every message that shows a time
/// goes through here so they all round the same way.
public enum HumanTime {
    /// `seconds` rounded to what a reader can use: two decimals below 10 s, one below a
    /// minute, then `m:ss.s` (or `h:mm:ss`); trailing zeros are dropped ("2.5 s", "1 s").
    public static func seconds(_ seconds: Double) -> String {
        guard seconds.isFinite else { return seconds.isNaN ? "? s" : (seconds < 0 ? "-∞ s" : "∞ s") }
        let magnitude = abs(seconds)
        let sign = seconds < 0 ? "-" : ""
        if magnitude < 10 { return sign + trimmed(cFormat("%.2f", magnitude)) + " s" }
        if magnitude < 60 { return sign + trimmed(cFormat("%.1f", magnitude)) + " s" }
        let tenths = Int((magnitude * 10).rounded())
        let (hours, minutes, secs, tenth) = (tenths / 36_000, tenths / 600 % 60, tenths / 10 % 60, tenths % 10)
        if hours > 0 { return sign + cFormat("%ld:%02ld:%02ld", hours, minutes, secs) }
        return sign + cFormat("%ld:%02ld", minutes, secs) + (tenth == 0 ? "" : ".\(tenth)")
    }

    /// A `Duration` the same way.
    public static func duration(_ duration: Duration) -> String {
        let (whole, fraction) = duration.components
        return seconds(Double(whole) + Double(fraction) / 1e18)
    }

    private static func trimmed(_ number: String) -> String {
        guard number.contains(".") else { return number }
        var text = Substring(number)
        while text.hasSuffix("0") { text = text.dropLast() }
        if text.hasSuffix(".") { text = text.dropLast() }
        return String(text)
    }
}

extension Duration {
    /// This duration rounded for a message (``HumanTime/duration(_:)``).
    public var forPeople: String { HumanTime.duration(self) }

    /// This duration in seconds, as a `Double`.
    public var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}
