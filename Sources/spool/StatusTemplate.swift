import Basics
import FoundationEssentials

/// A `spool status --format` template in playerctl's style: text with `{{name}}`
/// placeholders, optionally wrapped in one function (`{{lc(status)}}`,
/// `{{markup_escape(title)}}`). Parsed once, so a typo fails before the daemon is asked
/// and `--follow` renders without parsing again.
struct StatusTemplate: Equatable {
    /// The placeholder names and what each shows, in the order `--help` lists them.
    static let fields: [(name: String, meaning: String)] = [
        ("status", "Playing, Paused or Stopped"),
        ("title", "the title tag, else the URL"),
        ("artist", "the artists, joined with \", \""),
        ("album", "the album tag"),
        ("track", "\"Title – Artist\" (the title alone without an artist)"),
        ("url", "the track's URL"),
        ("trackid", "the track's MPRIS object path"),
        ("position", "the position as status shows it (1:05, 1:02:03)"),
        ("length", "the length, ? when unknown"),
        ("remaining", "the time left, ? when the length is unknown"),
        ("volume", "the volume in percent (0-100)"),
        ("rate", "the playback rate (1, 1.25)"),
        ("loop", "none, track or playlist"),
        ("shuffle", "on or off"),
        ("cached", "45% cached, or the bytes of a stream of unknown length (3.2 MiB)"),
        ("download", "what the download is doing, empty when nothing runs"),
        ("buffering", "true while a read waits for the network, else false"),
        ("interrupted", "true while paused for a call, else false"),
        ("metered", "true while metered-network rules are in force, else false"),
        ("error", "the daemon's last error, empty when none"),
    ]

    /// playerctl's names for the same fields, so a playerctl format works unchanged.
    static let aliases: [String: String] = [
        "xesam:title": "title", "xesam:artist": "artist", "xesam:album": "album", "xesam:url": "url",
        "mpris:trackid": "trackid", "mpris:length": "length", "playerName": "player",
    ]

    /// Functions a placeholder may apply, playerctl's names.
    static let functions = ["lc", "uc", "markup_escape", "duration"]

    /// A piece of the template.
    enum Part: Equatable {
        /// Text written as it is.
        case text(String)
        /// A field's value, passed through `function` when one is named.
        case field(String, function: String?)
    }

    /// Why a template cannot be used; `description` is the one line `spool` prints.
    enum Problem: Error, Equatable, CustomStringConvertible {
        /// A `{{name}}` that is not a field or an alias.
        case unknownPlaceholder(String)
        /// A `{{f(name)}}` whose `f` is not one of `functions`.
        case unknownFunction(String)
        /// A `{{` without its `}}`.
        case unclosed

        /// The line `spool` prints for the mistake.
        var description: String {
            switch self {
            case .unknownPlaceholder(let name):
                let names = StatusTemplate.fields.map(\.name) + StatusTemplate.aliases.keys.sorted()
                let suggestion = hint(name, among: names)
                return "unknown placeholder '{{\(name)}}' in the format"
                    + (suggestion.isEmpty ? "; 'spool status --help' lists the names" : suggestion)
            case .unknownFunction(let name):
                return
                    "unknown function '\(name)' in the format\(hint(name, among: StatusTemplate.functions)); use \(StatusTemplate.functions.joined(separator: ", "))"
            case .unclosed:
                return "a '{{' in the format has no matching '}}'"
            }
        }
    }

    /// The parsed pieces.
    let parts: [Part]

    /// Parses `text`, or says which placeholder is wrong.
    init(_ text: String) throws(Problem) {
        var parts: [Part] = []
        var literal = ""
        var rest = Substring(text)
        while !rest.isEmpty {
            guard rest.hasPrefix("{{") else {
                literal.append(rest.removeFirst())
                continue
            }
            guard let close = Self.firstClose(in: rest.dropFirst(2)) else { throw .unclosed }
            if !literal.isEmpty { parts.append(.text(literal)) }
            literal = ""
            parts.append(try Self.placeholder(rest[rest.index(rest.startIndex, offsetBy: 2)..<close]))
            rest = rest[rest.index(close, offsetBy: 2)...]
        }
        if !literal.isEmpty { parts.append(.text(literal)) }
        self.parts = parts
    }

    /// Where the first `}}` in `text` starts.
    private static func firstClose(in text: Substring) -> Substring.Index? {
        var index = text.startIndex
        while index < text.endIndex {
            if text[index...].hasPrefix("}}") { return index }
            index = text.index(after: index)
        }
        return nil
    }

    /// `name` or `function(name)`, with spaces allowed around either.
    private static func placeholder(_ inside: Substring) throws(Problem) -> Part {
        let trimmed = inside.trimmingWhitespace()
        var function: String?
        var name = trimmed
        if trimmed.hasSuffix(")"), let paren = trimmed.firstIndex(of: "(") {
            let called = trimmed[..<paren].trimmingWhitespace()
            guard functions.contains(called) else { throw .unknownFunction(called) }
            function = called
            name = trimmed[trimmed.index(after: paren)..<trimmed.index(before: trimmed.endIndex)].trimmingWhitespace()
        }
        let canonical = aliases[name] ?? name
        guard canonical == "player" || fields.contains(where: { $0.name == canonical }) else {
            throw .unknownPlaceholder(name)
        }
        return .field(canonical, function: function)
    }

    /// Whether the text changes with the position, so `--follow` must render every second.
    var showsPosition: Bool {
        parts.contains { part in
            if case .field(let name, _) = part { return name == "position" || name == "remaining" }
            return false
        }
    }

    /// The template filled in from `snapshot`.
    func render(_ snapshot: StatusSnapshot) -> String {
        parts.map { part in
            switch part {
            case .text(let text): return text
            case .field(let name, let function): return Self.apply(function, to: Self.value(name, snapshot))
            }
        }.joined()
    }

    /// One field's text. Durations look as `spool status` shows them.
    static func value(_ name: String, _ snapshot: StatusSnapshot) -> String {
        let flag = { (value: Bool) in value ? "true" : "false" }
        switch name {
        case "status": return snapshot.status
        case "title": return snapshot.title ?? ""
        case "artist": return snapshot.artist ?? ""
        case "album": return snapshot.album ?? ""
        case "track": return snapshot.hasTrack ? snapshot.label : ""
        case "url": return snapshot.url ?? ""
        case "trackid": return snapshot.trackID ?? ""
        case "player": return "spool"
        case "position": return formatTime(snapshot.position)
        case "length": return snapshot.length.map(formatTime) ?? "?"
        case "remaining": return snapshot.length.map { formatTime(max(0, $0 - snapshot.position)) } ?? "?"
        case "volume": return cFormat("%.0f", snapshot.volume * 100)
        case "rate": return cFormat("%g", snapshot.rate)
        case "loop": return snapshot.loop
        case "shuffle": return snapshot.shuffle ? "on" : "off"
        case "cached": return snapshot.hasTrack ? snapshot.cachedText : ""
        case "download": return snapshot.download == "complete" ? "" : snapshot.download
        case "buffering": return flag(snapshot.buffering)
        case "interrupted": return flag(snapshot.interrupted)
        case "metered": return flag(snapshot.metered)
        case "error": return snapshot.error
        default: return ""
        }
    }

    private static func apply(_ function: String?, to text: String) -> String {
        switch function {
        case "lc": return text.lowercased()
        case "uc": return text.uppercased()
        case "markup_escape":
            let entities: [Character: String] = ["&": "&amp;", "<": "&lt;", ">": "&gt;", "'": "&#39;", "\"": "&quot;"]
            return text.map { entities[$0] ?? String($0) }.joined()
        default: return text  // `duration` and none: durations are already formatted
        }
    }
}

/// The details of `spool status --help`: the modes, then every placeholder from the one list
/// the parser accepts, so the help cannot name a field that does not exist.
let statusHelp = """
    On a terminal the status is redrawn in place; when piped, plain lines are written.
    The bar shows # played, = cached, - not yet downloaded. Lines fit the terminal (or
    COLUMNS): the title is shortened, never the numbers.

      --follow           keep printing: the block on every change and each second; with
                         --json or --format a line only when it differs from the last
      --json             one JSON object a line (keys sorted; text, tooltip and class for
                         waybar's return-type json); with --format, text is the template
      --format TEMPLATE  the template with {{name}} placeholders filled in; an unknown
                         name is an error (exit 1). lc(), uc(), markup_escape() and
                         duration() may wrap a name, as in playerctl.

    Placeholders:

    """ + StatusTemplate.fields.map { "  " + $0.name.padding(12) + $0.meaning + "\n" }.joined()
    + "  playerctl's xesam:title, xesam:artist, xesam:album, xesam:url, mpris:trackid,\n"
    + "  mpris:length and playerName work too.\n"

extension String {
    /// The string followed by spaces up to `width` characters (never cut).
    fileprivate func padding(_ width: Int) -> String { self + String(repeating: " ", count: max(1, width - count)) }
}
