import Basics
import FoundationEssentials

/// What a list (or any input) stands for: the tracks to queue, and what was left out and why.
public struct PlaylistEntries: Sendable, Equatable {
    /// The tracks to queue, in order.
    public var items: [TrackItem]
    /// Entries not played, each with its reason (see ``ListTrust``).
    public var dropped: [DroppedEntry]
    /// How many entries past ``PlaylistParser/maximumEntries`` were left out.
    public var leftOut: Int

    /// Entries with `items`, nothing left out.
    public init(items: [TrackItem] = [], dropped: [DroppedEntry] = [], leftOut: Int = 0) {
        self.items = items
        self.dropped = dropped
        self.leftOut = leftOut
    }

    /// Dropped entries named in a summary; the rest are counted.
    static let namedInSummary = 2

    /// What was left out, as one line for the user (`LastError`, `spool play`); nil when nothing
    /// was. Only the count and the first few dropped entries are named.
    public var problems: String? {
        var parts: [String] = []
        if !dropped.isEmpty {
            let reasons = Set(dropped.map(\.reason))
            let shown = dropped.prefix(Self.namedInSummary)
            let more = dropped.count > Self.namedInSummary ? " and \(dropped.count - Self.namedInSummary) more" : ""
            if dropped.count > 1, reasons.count == 1, let reason = reasons.first {
                // One reason for them all: said once.
                parts.append(
                    "\(dropped.count) entries dropped (\(reason)): \(shown.map(\.entry).joined(separator: ", "))\(more)"
                )
            } else {
                let named = shown.map(\.description).joined(separator: "; ")
                let count = "\(dropped.count) \(dropped.count == 1 ? "entry" : "entries")"
                parts.append("\(count) dropped: \(named)\(more.isEmpty ? "" : ";\(more)")")
            }
        }
        if leftOut > 0 {
            let maximum = PlaylistParser.maximumEntries
            parts.append(
                "only the first \(maximum) of \(maximum + leftOut) entries queued (a list holds at most \(maximum))")
        }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    /// ``problems`` of the list `name` as a warning: "NAME: 1 entry dropped: …"; nil when nothing
    /// was left out.
    public func warning(name: String) -> String? {
        problems.map { "\(name): \($0)" }
    }

    /// Whether `text` is a ``warning(name:)`` (the tracks that were kept play on), not an error.
    public static func isWarning(_ text: String) -> Bool {
        guard let colon = text.firstRange(of: ": ") else { return false }
        let rest = text[colon.upperBound...]
        if rest.hasPrefix("only the first \(PlaylistParser.maximumEntries) of ") { return true }
        let digits = rest.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty else { return false }
        let after = rest.dropFirst(digits.count)
        return after.hasPrefix(" entry dropped: ") || after.hasPrefix(" entries dropped: ")
            || after.hasPrefix(" entries dropped (")
    }
}
