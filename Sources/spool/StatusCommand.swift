import Basics
import DBusKit
import FoundationEssentials
import Glibc
import MPRIS

/// Where a block of status lines goes: redrawn in place on a terminal, appended when piped.
final class Screen: @unchecked Sendable {
    /// Whether stdout is a terminal (then ANSI escapes redraw in place).
    let isTerminal = isatty(STDOUT_FILENO) == 1
    /// Lines drawn last time (only touched by the one task that draws).
    private var drawn = 0

    /// The terminal's width in characters (80 when it cannot be asked).
    static func columns() -> Int {
        var size = winsize()
        return ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 80
    }

    /// Writes `lines`, replacing the previous block on a terminal.
    func draw(_ lines: [String]) {
        var text = ""
        if isTerminal && drawn > 0 { text += "\u{1B}[\(drawn)A\r\u{1B}[J" }
        // A line wider than the terminal would wrap and throw off the cursor-up count.
        let shown = isTerminal ? lines.map { String($0.prefix(max(20, Self.columns() - 1))) } : lines
        text += shown.map { $0 + "\n" }.joined()
        drawn = lines.count
        writeAll(text, to: STDOUT_FILENO)
    }
}

/// The status block: what plays, where, and how much of it is cached. With a `width`
/// (a terminal's, or COLUMNS) the title and artist are shortened and the bar narrowed so
/// each line fits; numbers are never cut.
func statusLines(
    player: [String: DBusValue], spool: [String: DBusValue], queue: [[String: DBusValue]] = [], width: Int? = nil
) -> [String] {
    let snapshot = StatusSnapshot(player: player, spool: spool)
    // Said whenever the rules are in force: they change what the daemon fetches, playing or not.
    let network =
        snapshot.metered
        ? ["network: metered (no preload but the next track's head near the end; read-ahead limited to a window)"] : []
    guard snapshot.hasTrack else { return ["\(snapshot.status): nothing queued"] + network }
    let buffering = snapshot.buffering ? " (buffering)" : ""
    // Which of a presentation's bit rates plays, when it has several.
    let variant =
        snapshot.variant.flatMap {
            $0.count > 1 ? ["variant: \($0.number) of \($0.count), \($0.bitrate) kbit/s"] : nil
        } ?? []
    let interrupted = snapshot.interrupted ? " (interrupted by the sound server)" : ""
    if let station = snapshot.station {
        // A live stream: the station and its song, the time listened; no length, nothing cached.
        let heading =
            "Live\(snapshot.status == "Playing" ? "" : " (\(snapshot.status.lowercased()))")\(interrupted)\(buffering): "
        let song = snapshot.song.flatMap { $0.isEmpty ? nil : " – " + $0 } ?? ""
        let label = fitted(title: station + song, artist: nil, width: width.map { $0 - heading.count })
        // A stream that dates its audio: when what is heard went on air, in local time.
        let aired = snapshot.aired.map { " · on air at \(formatClockTime($0))" } ?? ""
        return ["\(heading)\(label)", "listening \(formatTime(snapshot.position))\(aired)"]
            + joined(snapshot.settings, separator: " · ", width: width) + variant + network
    }
    let heading = "\(snapshot.status)\(interrupted)\(buffering): "
    let label = fitted(title: snapshot.title ?? "", artist: snapshot.artist, width: width.map { $0 - heading.count })
    let played = snapshot.length.map { $0 > 0 ? min(1, snapshot.position / $0) : 0 }
    let time = "\(formatTime(snapshot.position)) / \(snapshot.length.map(formatTime) ?? "?")"
    let cached = snapshot.isLocal ? [0.0...1.0] : fractions(snapshot.cachedRanges, length: snapshot.contentLength ?? -1)
    // A stream of unknown length has no share to show: how much has arrived instead.
    let amount =
        snapshot.isLocal
        ? ""
        : snapshot.contentLength != nil
            ? " cached \(snapshot.cachedText)"
            : snapshot.cachedBytes > 0 ? " downloaded \(snapshot.cachedText)" : ""
    // The bar takes what the numbers leave; too little room and it goes.
    let cells = min(30, (width ?? Int.max) - time.count - amount.count - 3)
    let bar = cells >= 5 ? " " + progressBar(played: played, cached: cached, width: cells) : ""
    var lines = ["\(heading)\(label)", time + bar + amount] + joined(snapshot.settings, separator: " · ", width: width)
    // The track that follows in list order (with shuffle on, the order is the daemon's secret).
    if player["Shuffle"]?.boolValue != true,
        let current = queue.firstIndex(where: { $0["spool:current"]?.boolValue == true }),
        current + 1 < queue.count
    {
        let next = queue[current + 1]
        let nextTitle = next["xesam:title"]?.stringValue ?? next["xesam:url"]?.stringValue ?? "?"
        let nextArtist = next["xesam:artist"]?.stringArrayValue?.joined(separator: ", ")
        lines.append("next: \(trackLabel(title: nextTitle, artist: nextArtist))  \(cacheNote(next))")
    }
    // The preload window: each upcoming track's stage and how much of it is here.
    let preloads = spool["Preloads"]?.arrayValues?.compactMap(\.stringVariantDictValue) ?? []
    if !preloads.isEmpty {
        lines.append("preload: " + preloads.map(preloadNote).joined(separator: ", "))
    }
    lines += variant + network
    if let download = spool["DownloadState"]?.stringValue, !download.isEmpty, download != "complete" {
        lines.append("download: \(download)")
    }
    if let error = spool["LastError"]?.stringValue, !error.isEmpty { lines.append("error: \(error)") }
    return lines
}

/// One track of `Preloads`: `name complete`, `name failed (why)`, or `name stage` and, for a
/// remote file, the share cached.
func preloadNote(_ row: [String: DBusValue]) -> String {
    let url = row["spool:url"]?.stringValue ?? "?"
    let name = URL(string: url)?.lastPathComponent ?? url
    let stage = row["spool:stage"]?.stringValue ?? "?"
    // One verdict a track: every byte here, or why it stopped, or how far it is.
    if stage == "complete" || row["spool:complete"]?.boolValue == true { return "\(name) complete" }
    if let error = row["spool:error"]?.stringValue { return "\(name) failed (\(error))" }
    var note = "\(name) \(stage)"
    if let length = row["spool:contentLength"]?.int64Value, length > 0,
        let cached = row["spool:cachedBytes"]?.int64Value
    {
        note += " \(cached * 100 / length)%"
    }
    return note
}

/// How `spool status` prints: the block of lines, one JSON object, or a template.
enum StatusOutput {
    /// The block of status lines, redrawn in place on a terminal.
    case lines
    /// One JSON object a line; a template, when given, fills its `text`.
    case json(StatusTemplate?)
    /// The template filled in, one line.
    case template(StatusTemplate)

    /// Reads `--follow`, `--json` and `--format TEMPLATE` (or `--format=TEMPLATE`).
    static func parse(_ arguments: [String]) throws(CommandFailure) -> (output: StatusOutput, follow: Bool) {
        var follow = false
        var json = false
        var format: String?
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--follow", "-f": follow = true
            case "--json": json = true
            case "--format":
                guard let value = rest.popFirst() else {
                    throw .usage("'--format' needs a template, e.g. '{{title}} – {{artist}}'")
                }
                format = value
            default:
                guard argument.hasPrefix("--format=") else {
                    throw .usage(
                        "unknown option '\(argument)' for 'spool status'\(hint(argument, among: ["--follow", "--json", "--format"]))"
                    )
                }
                format = String(argument.dropFirst("--format=".count))
            }
        }
        let template: StatusTemplate?
        do throws(StatusTemplate.Problem) {
            template = try format.map { text throws(StatusTemplate.Problem) in try StatusTemplate(text) }
        } catch {
            throw .usage(error.description)
        }
        if json { return (.json(template), follow) }
        return (template.map(StatusOutput.template) ?? .lines, follow)
    }

    /// The line `--json` or `--format` prints for `snapshot`, and the part of it whose change is
    /// worth a new line when following: the position only counts where the text shows it.
    func line(_ snapshot: StatusSnapshot) -> (text: String, key: String) {
        switch self {
        case .lines:
            return ("", "")
        case .template(let template):
            let text = template.render(snapshot)
            return (text, text)
        case .json(let template):
            let text = template?.render(snapshot)
            var still = snapshot
            still.position = 0
            return (snapshot.json(text: text), still.json(text: text))
        }
    }
}

/// The width status lines must fit: COLUMNS when set, else the terminal's, less the last
/// column (a full line would wrap the cursor and throw off the redraw); nil when piped.
func statusWidth(isTerminal: Bool) -> Int? {
    if let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap({ Int($0) }), columns > 0 {
        return columns - 1
    }
    return isTerminal ? Screen.columns() - 1 : nil
}

/// `items` joined with `separator` on as few lines as fit in `width` (one line when nil),
/// so a narrow terminal wraps the settings between items instead of cutting a number.
func joined(_ items: [String], separator: String, width: Int?) -> [String] {
    var lines: [String] = []
    for item in items {
        if let last = lines.last, (last + separator + item).count <= (width ?? Int.max) {
            lines[lines.count - 1] = last + separator + item
        } else {
            lines.append(item)
        }
    }
    return lines
}

/// "Title – Artist" in `width` characters: the title gives way first, then the artist;
/// nil fits anything.
func fitted(title: String, artist: String?, width: Int?) -> String {
    let full = trackLabel(title: title, artist: artist)
    guard let width, full.count > width else { return full }
    func shortened(_ text: String, _ count: Int) -> String {
        text.count <= count ? text : String(text.prefix(max(0, count - 1))) + "…"
    }
    let tail = String(full.dropFirst(title.count))
    if width - tail.count >= 6 { return shortened(title, width - tail.count) + tail }
    return shortened(full, max(1, width))
}

/// `spool status [--follow] [--json] [--format TEMPLATE]`.
@Sendable func runStatus(_ arguments: [String]) async throws(CommandFailure) {
    let (output, follow) = try StatusOutput.parse(arguments)
    let client = try SpoolClient.connect()
    let screen = Screen()
    var lastKey: String?
    func redraw() async throws(CommandFailure) {
        let player = try await client.properties(MPRISService.playerInterface)
        let spool = try await client.properties(MPRISService.spoolInterface)
        guard case .lines = output else {
            // One line per change: a bar redraws nothing, a script reads each line as news.
            let (text, key) = output.line(StatusSnapshot(player: player, spool: spool))
            if key != lastKey { writeAll(text + "\n", to: STDOUT_FILENO) }
            lastKey = key
            return
        }
        let queue = (try? await client.spool("Queue"))?.first?.arrayValues?.compactMap(\.stringVariantDictValue) ?? []
        screen.draw(
            statusLines(player: player, spool: spool, queue: queue, width: statusWidth(isTerminal: screen.isTerminal)))
    }
    try await redraw()
    guard follow else { return }
    try await followDaemon(client, everySecond: true, redraw)
}

/// Calls `redraw` on every signal the daemon sends at its MPRIS object (and once a second when
/// `everySecond`, for what changes without a signal, such as the position), until interrupted.
func followDaemon(
    _ client: SpoolClient, everySecond: Bool, _ redraw: () async throws(CommandFailure) -> Void
) async throws(CommandFailure) {
    let (ticks, tick) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    let rule = "type='signal',path='\(MPRISService.objectPath)',sender='\(client.name)'"
    let signals: AsyncStream<DBusSignalMessage>
    do {
        signals = try await client.connection.subscribe(matching: rule)
    } catch {
        throw .failed("cannot follow the daemon's signals: \(error)")
    }
    let forward = Task {
        for await _ in signals { tick.yield() }
    }
    let clock = Task {
        while everySecond && !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            tick.yield()
        }
    }
    defer {
        forward.cancel()
        clock.cancel()
    }
    for await _ in ticks { try await redraw() }
}
