import DBusKit
import FoundationEssentials
import Glibc
import MPRIS
import SpoolLog

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

/// The status block: what plays, where, and how much of it is cached.
func statusLines(
    player: [String: DBusValue], spool: [String: DBusValue], queue: [[String: DBusValue]] = []
) -> [String] {
    let status = player["PlaybackStatus"]?.stringValue ?? "Stopped"
    let metadata = player["Metadata"]?.stringVariantDictValue ?? [:]
    // Said whenever the rules are in force: they change what the daemon fetches, playing or not.
    let network = spool["Metered"]?.boolValue == true
        ? ["network: metered (no preload but the next track's head near the end; read-ahead limited to a window)"] : []
    guard let track = metadata["mpris:trackid"]?.objectPathValue, track != MPRISService.noTrack else {
        return ["\(status): nothing queued"] + network
    }
    let title = metadata["xesam:title"]?.stringValue ?? metadata["xesam:url"]?.stringValue ?? "?"
    let artist = metadata["xesam:artist"]?.stringArrayValue?.joined(separator: ", ")
    let position = Double(player["Position"]?.int64Value ?? 0) / 1e6
    let length = metadata["mpris:length"]?.int64Value.map { Double($0) / 1e6 }
    let ranges = spool["CachedRanges"]?.arrayValues?.compactMap { value -> (Int64, Int64)? in
        guard let fields = value.structureFields, fields.count == 2, let start = fields[0].int64Value,
            let end = fields[1].int64Value
        else { return nil }
        return (start, end)
    } ?? []
    let contentLength = spool["ContentLength"]?.int64Value ?? -1
    let isLocal = metadata["xesam:url"]?.stringValue?.hasPrefix("file:") == true
    let cached = isLocal ? [0.0...1.0] : fractions(ranges, length: contentLength)
    let played = length.map { $0 > 0 ? min(1, position / $0) : 0 }
    let time = "\(formatTime(position)) / \(length.map(formatTime) ?? "?")"
    let buffering = spool["Buffering"]?.boolValue == true ? " (buffering)" : ""
    let interrupted = spool["Interrupted"]?.boolValue == true ? " (interrupted by the sound server)" : ""
    var lines = [
        "\(status)\(interrupted)\(buffering): \(title)\(artist.map { " - \($0)" } ?? "")",
        "\(time) \(progressBar(played: played, cached: cached))"
            + (isLocal || contentLength <= 0 ? "" : " cached \(ranges.reduce(0) { $0 + $1.1 - $1.0 } * 100 / contentLength)%"),
    ]
    // The track that follows in list order (with shuffle on, the order is the daemon's secret).
    if player["Shuffle"]?.boolValue != true, let current = queue.firstIndex(where: { $0["spool:current"]?.boolValue == true }),
        current + 1 < queue.count
    {
        let next = queue[current + 1]
        let nextTitle = next["xesam:title"]?.stringValue ?? next["xesam:url"]?.stringValue ?? "?"
        lines.append("next: \(nextTitle)  \(cacheNote(next))")
    }
    // The preload window: each upcoming track's stage and how much of it is here.
    let preloads = spool["Preloads"]?.arrayValues?.compactMap(\.stringVariantDictValue) ?? []
    if !preloads.isEmpty {
        lines.append("preload: " + preloads.map(preloadNote).joined(separator: ", "))
    }
    lines += network
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
    if let length = row["spool:contentLength"]?.int64Value, length > 0, let cached = row["spool:cachedBytes"]?.int64Value {
        note += " \(cached * 100 / length)%"
    }
    return note
}

/// `spool status [--follow]`.
@Sendable func runStatus(_ arguments: [String]) async throws(CommandFailure) {
    var follow = false
    for argument in arguments {
        guard argument == "--follow" || argument == "-f" else {
            throw .usage("unknown option '\(argument)' for 'spool status'\(hint(argument, among: ["--follow"]))")
        }
        follow = true
    }
    let client = try SpoolClient.connect()
    let screen = Screen()
    func redraw() async throws(CommandFailure) {
        let player = try await client.properties(MPRISService.playerInterface)
        let spool = try await client.properties(MPRISService.spoolInterface)
        let queue = (try? await client.spool("Queue"))?.first?.arrayValues?.compactMap(\.stringVariantDictValue) ?? []
        screen.draw(statusLines(player: player, spool: spool, queue: queue))
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
