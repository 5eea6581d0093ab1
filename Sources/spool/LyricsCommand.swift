import DBusKit
import FoundationEssentials
import MPRIS

/// What `spool lyrics` shows of the current track: its timed lines, its unsynced text, or neither.
struct ShownLyrics: Equatable {
    /// The track id the lyrics belong to (MPRIS's NoTrack when nothing is queued).
    var track: String
    /// The title to name the track by.
    var title: String
    /// Timed lines: start in seconds and text.
    var lines: [(seconds: Double, text: String)]
    /// The current line's index into `lines`, −1 before the first.
    var current: Int
    /// The text of unsynced lyrics ("" when the lyrics are timed or there are none).
    var plainText: String

    /// Reads them from the Player's `Metadata` and Spool1's `Lyrics` and `LyricsLine`.
    init(metadata: [String: DBusValue], lyrics: DBusValue?, line: DBusValue?) {
        track = metadata["mpris:trackid"]?.objectPathValue ?? MPRISService.noTrack
        title = metadata["xesam:title"]?.stringValue ?? metadata["xesam:url"]?.stringValue ?? "?"
        lines =
            lyrics?.arrayValues?.compactMap { value in
                guard let fields = value.structureFields, fields.count == 2, let time = fields[0].int64Value,
                    let text = fields[1].stringValue
                else { return nil }
                return (Double(time) / 1e6, text)
            } ?? []
        current = Int(line?.int32Value ?? -1)
        plainText = lines.isEmpty ? metadata["xesam:asText"]?.stringValue ?? "" : ""
    }

    static func == (lhs: ShownLyrics, rhs: ShownLyrics) -> Bool {
        lhs.track == rhs.track && lhs.current == rhs.current && lhs.plainText == rhs.plainText
            && lhs.lines.elementsEqual(rhs.lines) { $0.seconds == $1.seconds && $0.text == $1.text }
    }

    /// Every line, the current one marked `> ` and each with its time; unsynced text as it is.
    var allLines: [String] {
        guard track != MPRISService.noTrack else { return ["nothing queued"] }
        if !lines.isEmpty {
            return lines.enumerated().map { index, line in
                (index == current ? "> " : "  ") + formatTime(line.seconds) + "  " + line.text
            }
        }
        if !plainText.isEmpty {
            return plainText.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        }
        return ["no lyrics for \(title)"]
    }

    /// What `--follow` shows: the current line alone ("" before the first line or at a timed
    /// blank), or a note when the track has no timed lyrics.
    var currentLine: String {
        guard track != MPRISService.noTrack else { return "nothing queued" }
        if lines.isEmpty { return plainText.isEmpty ? "no lyrics for \(title)" : "no timed lyrics for \(title)" }
        return lines.indices.contains(current) ? lines[current].text : ""
    }
}

/// `spool lyrics [--follow]`.
@Sendable func runLyrics(_ arguments: [String]) async throws(CommandFailure) {
    var follow = false
    for argument in arguments {
        guard argument == "--follow" || argument == "-f" else {
            throw .usage("unknown option '\(argument)' for 'spool lyrics'\(hint(argument, among: ["--follow"]))")
        }
        follow = true
    }
    let client = try SpoolClient.connect()
    func read() async throws(CommandFailure) -> ShownLyrics {
        func get(_ interface: String, _ name: String) async throws(CommandFailure) -> DBusValue? {
            try await client.call("org.freedesktop.DBus.Properties", "Get", [.string(interface), .string(name)]).first?
                .variantValue
        }
        let metadata = try await get(MPRISService.playerInterface, "Metadata")?.stringVariantDictValue ?? [:]
        return ShownLyrics(
            metadata: metadata, lyrics: try await get(MPRISService.spoolInterface, "Lyrics"),
            line: try await get(MPRISService.spoolInterface, "LyricsLine"))
    }
    let screen = Screen()
    guard follow else {
        screen.draw(try await read().allLines)
        return
    }
    // The daemon signals every line change: redraw only when what is shown changes.
    var shown: String?
    func update() async throws(CommandFailure) {
        let line = try await read().currentLine
        guard line != shown else { return }
        shown = line
        screen.draw([line])
    }
    try await update()
    try await followDaemon(client, everySecond: false, update)
}
