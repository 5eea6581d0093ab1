import EngineAPI

/// A track's lyrics: time-stamped lines when the text is LRC, else plain text. Built by
/// ``parse(_:)`` from LRC as people write it (several stamps a line, offsets, metadata tags,
/// BOMs, CRLF, unsorted lines); what cannot be read is skipped, never fatal. Every text is
/// cleaned of control characters, so it can go out over D-Bus as it is.
public struct Lyrics: Sendable, Equatable {
    /// One timed line: when it starts and what it says ("" for a timed blank, which LRC uses to
    /// clear the display between verses).
    public struct Line: Sendable, Equatable {
        /// Where in the track the line starts (the file's offset applied).
        public var time: Duration
        /// The line's text, without its time stamps or word-level stamps.
        public var text: String

        /// Creates a line.
        public init(time: Duration, text: String) {
            self.time = time
            self.text = text
        }
    }

    /// The most timed lines kept: a file that repeats its stamps cannot make a signal of megabytes.
    public static let maximumLines = 5_000

    /// The timed lines in time order (lines with equal times in file order); empty for unsynced lyrics.
    public var lines: [Line]
    /// The lyrics as text to show: the timed lines' texts in order, or the unsynced text.
    public var plainText: String

    /// Creates lyrics from parts.
    public init(lines: [Line] = [], plainText: String = "") {
        self.lines = lines
        self.plainText = plainText
    }

    /// Whether the lyrics carry time stamps (so a current line can be followed).
    public var isTimed: Bool { !lines.isEmpty }
    /// Whether there is nothing to show.
    public var isEmpty: Bool { lines.isEmpty && plainText.isEmpty }

    /// The index of the line showing at `position`: the last line starting at or before it, −1
    /// before the first line (and always for unsynced lyrics).
    public func lineIndex(at position: Duration) -> Int {
        var low = 0
        var high = lines.count  // the first line starting after `position` is in low...high
        while low < high {
            let middle = (low + high) / 2
            if lines[middle].time <= position { low = middle + 1 } else { high = middle }
        }
        return low - 1
    }

    /// When the line after the one showing at `position` starts; nil when none follows.
    public func nextChange(after position: Duration) -> Duration? {
        let next = lineIndex(at: position) + 1
        return next < lines.count ? lines[next].time : nil
    }

    // MARK: Parsing

    /// Lyrics read from `text`: LRC when any line carries a time stamp (lines without one are
    /// then skipped), else the text as unsynced lyrics. `[offset:±ms]` moves every line: a
    /// positive offset makes lyrics appear sooner (LRC's convention), so it is subtracted from
    /// each stamp, stopping at zero. Metadata tags (`[ar:]`, `[ti:]`, `[al:]`, `[by:]`,
    /// `[length:]`, …) are ignored; word-level `<mm:ss.xx>` stamps are removed from the text.
    public static func parse(_ text: String) -> Lyrics {
        var timed: [(time: Duration, text: String)] = []
        var untimed: [String] = []
        var offset = Duration.zero
        var body = Substring(text)
        if body.unicodeScalars.first == "\u{FEFF}" { body = Substring(body.unicodeScalars.dropFirst()) }
        // Splitting on Character keeps "\r\n" as one break; a lone "\r" (old Mac files) breaks too.
        for rawLine in body.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            var rest = rawLine.drop { $0.isWhitespace }
            var stamps: [Duration] = []
            var isTag = false
            while rest.first == "[", let close = rest.firstIndex(of: "]") {
                let inside = rest[rest.index(after: rest.startIndex)..<close]
                if let time = timeStamp(inside) {
                    stamps.append(time)
                } else if stamps.isEmpty, let (key, value) = metadataTag(inside) {
                    if key == "offset", let milliseconds = Int(value.filter { !$0.isWhitespace }.drop { $0 == "+" }) {
                        offset = .milliseconds(milliseconds)
                    }
                    isTag = true
                } else {
                    break  // "[Chorus]" and the like: text, not a tag
                }
                rest = rest[rest.index(after: close)...].drop { $0.isWhitespace }
            }
            if !stamps.isEmpty {
                guard timed.count < maximumLines else { continue }
                let line = TagText.clean(String(withoutWordStamps(rest))) ?? ""
                for stamp in stamps where timed.count < maximumLines {
                    timed.append((stamp, line))
                }
            } else if !isTag {
                untimed.append(TagText.clean(String(rawLine)) ?? "")
            }
        }
        guard !timed.isEmpty else { return Lyrics(plainText: joined(untimed)) }
        let lines = timed.map { entry in
            Line(time: max(.zero, entry.time - offset), text: entry.text)
        }.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        return Lyrics(lines: lines, plainText: joined(lines.map(\.text)))
    }

    /// `[mm:ss]`, `[mm:ss.x]`, `[mm:ss.xx]` or `[mm:ss.xxx]` (also with `:` before the fraction), any
    /// number of minutes; nil for anything else.
    static func timeStamp(_ text: Substring) -> Duration? {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, let minutes = digits(parts[0], count: 1...6) else { return nil }
        var secondsPart = parts[1]
        var fraction: Substring?
        if parts.count == 3 {
            fraction = parts[2]
        } else if let dot = secondsPart.firstIndex(of: ".") {
            fraction = secondsPart[secondsPart.index(after: dot)...]
            secondsPart = secondsPart[..<dot]
        }
        guard let seconds = digits(secondsPart, count: 1...2), seconds < 60 else { return nil }
        var milliseconds = 0
        if let fraction {
            guard let value = digits(fraction, count: 1...3) else { return nil }
            milliseconds = value * [100, 10, 1][fraction.count - 1]
        }
        return .seconds(minutes * 60 + seconds) + .milliseconds(milliseconds)
    }

    /// The value of ASCII digits, `count` of them; nil otherwise.
    private static func digits(_ text: Substring, count: ClosedRange<Int>) -> Int? {
        guard count.contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(text)
    }

    /// `key:value` with a key of ASCII letters or `#` (`ar`, `ti`, `offset`, `length`, …), lowercased.
    private static func metadataTag(_ text: Substring) -> (String, Substring)? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let key = text[..<colon]
        guard !key.isEmpty, key.count <= 16, key.allSatisfy({ $0.isASCII && ($0.isLetter || $0 == "#") }) else {
            return nil
        }
        return (key.lowercased(), text[text.index(after: colon)...])
    }

    /// `text` without the `<mm:ss.xx>` stamps of word-by-word LRC.
    private static func withoutWordStamps(_ text: Substring) -> Substring {
        guard text.contains("<") else { return text }
        var result = Substring()
        var rest = text
        while let open = rest.firstIndex(of: "<") {
            result += rest[..<open]
            let after = rest.index(after: open)
            if let close = rest[after...].firstIndex(of: ">"), timeStamp(rest[after..<close]) != nil {
                rest = rest[rest.index(after: close)...]
            } else {
                result.append("<")
                rest = rest[after...]
            }
        }
        return result + rest
    }

    /// Lines joined with line breaks, runs of blank lines as one, none at either end.
    private static func joined(_ lines: [String]) -> String {
        var kept: [String] = []
        for line in lines where !(line.isEmpty && (kept.last?.isEmpty ?? true)) { kept.append(line) }
        if kept.last?.isEmpty == true { kept.removeLast() }
        return kept.joined(separator: "\n")
    }
}
