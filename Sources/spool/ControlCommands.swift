import Basics
import DBusKit
import Dispatch
import FoundationEssentials
import Glibc
import MPRIS
import PlayerCore
import SpoolConfig

/// One `spool` subcommand that talks to the daemon: its usage line, its help and what it does.
struct ControlCommand: Sendable {
    let name: String
    let usage: String
    let summary: String
    let run: @Sendable ([String]) async throws(CommandFailure) -> Void

    /// Every control command, in the order `spool --help` lists them.
    static let all: [ControlCommand] = [
        ControlCommand(
            name: "play", usage: "play [--no-wait] URL|PATH|PLAYLIST|DIR...",
            summary: "Replace the queue with these and play",
            run: { arguments throws(CommandFailure) in
                try await runPlay(arguments, command: "play")
            }),
        ControlCommand(
            name: "open", usage: "open [--no-wait] URL|PATH|PLAYLIST|DIR...", summary: "The same as play",
            run: { arguments throws(CommandFailure) in
                try await runPlay(arguments, command: "open")
            }),
        ControlCommand(
            name: "add", usage: "add URL|PATH|PLAYLIST|DIR...", summary: "Add these to the end of the queue",
            run: runAdd),
        simple("pause", "Pause", "Pause playback"),
        simple("resume", "Play", "Resume (or start) playback"),
        simple("toggle", "PlayPause", "Pause when playing, play otherwise"),
        simple("stop", "Stop", "Stop playback"),
        simple("next", "Next", "Skip to the next track"),
        simple("prev", "Previous", "Go back to the previous track (or the start of this one)"),
        ControlCommand(
            name: "seek", usage: "seek [+|-]TIME|PERCENT",
            summary: "Seek to TIME (90, 1:30, 1h2m3s), by +/-TIME, or to PERCENT (50%)", run: seek),
        ControlCommand(
            name: "volume", usage: "volume [PERCENT]", summary: "Print the volume, or set it (0-100)", run: volume),
        ControlCommand(
            name: "rate", usage: "rate [RATE]", summary: "Print the playback rate, or set it (e.g. 1.25)", run: rate),
        ControlCommand(
            name: "loop", usage: "loop [none|track|playlist]", summary: "Print what repeats, or set it", run: loop),
        ControlCommand(
            name: "shuffle", usage: "shuffle [on|off]", summary: "Print whether shuffle is on, or turn it on or off",
            run: shuffle),
        ControlCommand(
            name: "queue", usage: "queue",
            summary: "List the queue, the current track marked with '>', with cache state", run: queue),
        ControlCommand(
            name: "status", usage: "status [--follow] [--json] [--format TEMPLATE]",
            summary: "Show the current track, position and cached ranges; --follow keeps it updated", run: runStatus),
        ControlCommand(
            name: "lyrics", usage: "lyrics [--follow]",
            summary: "Print the current track's lyrics, '>' marking the current line; --follow shows each line in time",
            run: runLyrics),
        simple("quit", "Quit", "Stop the daemon (it saves the session first)", interface: MPRISService.rootInterface),
        ControlCommand(
            name: "cache", usage: "cache stats|ls|clear [--account NAME]|prefetch URL...",
            summary: "Show, list, clear or fill the download cache", run: cache),
        ControlCommand(
            name: "playlist", usage: "playlist save NAME|ls [--by-date]|load NAME|add NAME URL...|rm NAME",
            summary: "Save the queue as a playlist, list, play, extend or delete saved playlists", run: runPlaylist),
        history,
    ]

    /// A command that calls one argument-less method (of the Player interface unless told).
    private static func simple(
        _ name: String, _ method: String, _ summary: String, interface: String = MPRISService.playerInterface
    ) -> ControlCommand {
        ControlCommand(
            name: name, usage: name, summary: summary,
            run: { arguments throws(CommandFailure) in
                try expectNoArguments(arguments, name)
                try await SpoolClient.connect().call(interface, method)
            })
    }

    /// `spool NAME --help`.
    var help: String { syntax.help }

    /// More help for some commands, by name: the forms and ranges of their arguments.
    static let details: [String: String] = [
        "play":
            "Relative paths are taken from the current directory. Playlists (.m3u, .pls) and directories\nare expanded by the daemon. URLs are http://, https:// or file:// with no spaces (write %20).\nWaits up to 5 s for the first track: if it fails (not found, unreachable, not audio) the\nerror is printed and the exit status is 2. --no-wait returns at once.\n",
        "open":
            "Relative paths are taken from the current directory; waits for the first track like play\n(--no-wait returns at once).\n",
        "seek":
            "TIME is seconds (90), m:ss (1:30), h:mm:ss or 1h2m3s; a leading + or - seeks relative to the\ncurrent position; PERCENT (50%) is a fraction of the track.\n",
        "volume": "PERCENT is 0 to 100 (100 is full volume); MPRIS's 0.0-1.0 is shown as a percentage.\n",
        "status": statusHelp,
        "lyrics":
            "Lyrics come from a .lrc file beside a local track (same name), else from its tags (LRC or\nplain text). Timed lines are printed with their start time; unsynced lyrics as they are.\nWith --follow the current line is redrawn in place on a terminal as the track plays (seeks\nand rate changes included); when piped, each new line is written as a plain line.\n",
        "cache":
            "  stats [--json]             counters of the cache (--json: one object for scripts)\n  ls [--account NAME]        the cached files, newest first\n  clear [--account NAME]     remove the cached files (of one account, or all)\n  prefetch URL...            download into the cache without playing, with a progress bar\n  prefetch --metered-ok URL...  the same on a metered network (without it, refused there)\n",
    ]
}

/// Runs a control command and exits with its status.
func runControlCommand(_ command: ControlCommand, _ arguments: [String]) -> Never {
    if arguments.contains("--help") || arguments.contains("-h") {
        print(command.help, terminator: "")
        exit(ExitStatus.success)
    }
    Task {
        do throws(CommandFailure) {
            try await command.run(arguments)
            exit(ExitStatus.success)
        } catch {
            complain(error.description)
            exit(error.status)
        }
    }
    dispatchMain()
}

/// `"; did you mean 'x'?"` for a likely `x` among `candidates`, else empty.
func hint(_ word: String, among candidates: [String]) -> String {
    closestName(to: word, among: candidates).map { "; did you mean '\($0)'?" } ?? ""
}

private func expectNoArguments(_ arguments: [String], _ command: String) throws(CommandFailure) {
    if let extra = arguments.first { throw .usage("'spool \(command)' takes no arguments, not '\(extra)'") }
}

/// The one argument a setter takes, or nil to print the value.
private func optionalArgument(_ arguments: [String], _ command: String) throws(CommandFailure) -> String? {
    if arguments.count > 1 { throw .usage("'spool \(command)' takes at most one value; see 'spool \(command) --help'") }
    return arguments.first
}

private func seek(_ arguments: [String]) async throws(CommandFailure) {
    guard arguments.count == 1, let text = arguments.first else {
        throw .usage("'spool seek' takes one position, e.g. 90, 1:30, +10, -5 or 50%")
    }
    guard let target = SeekTarget(text) else {
        throw .usage("'\(text)' is not a position; write e.g. 90, 1:30, 1h2m3s, +10, -5 or 50%")
    }
    let client = try SpoolClient.connect()
    if case .relative(let seconds) = target {
        try await client.player("Seek", [.int64(Int64(seconds * 1_000_000))])
        return
    }
    let metadata = try await client.properties(MPRISService.playerInterface)["Metadata"]?.stringVariantDictValue ?? [:]
    guard let track = metadata["mpris:trackid"]?.objectPathValue, track != MPRISService.noTrack else {
        throw .failed("nothing is playing")
    }
    let length = metadata["mpris:length"]?.int64Value
    let micros: Int64
    switch target {
    case .absolute(let seconds): micros = Int64(seconds * 1_000_000)
    case .fraction(let fraction):
        guard let length else {
            throw .failed("the length of this track is not known, so a percentage cannot be sought")
        }
        micros = Int64(Double(length) * fraction)
    case .relative: return
    }
    if let length, micros > length {
        throw .failed(
            "\(formatTime(Double(micros) / 1e6)) is past the end of the track (\(formatTime(Double(length) / 1e6)))")
    }
    try await client.player("SetPosition", [.objectPath(track), .int64(micros)])
}

private func volume(_ arguments: [String]) async throws(CommandFailure) {
    let client = try SpoolClient.connect()
    guard let text = try optionalArgument(arguments, "volume") else {
        let value = try await client.properties(MPRISService.playerInterface)["Volume"]?.doubleValue ?? 0
        print(cFormat("%.0f", value * 100))
        return
    }
    let trimmed = text.hasSuffix("%") ? String(text.dropLast()) : text
    guard let percent = Double(trimmed), (0...100).contains(percent) else {
        throw .usage("volume is a number from 0 to 100, not '\(text)'")
    }
    try await client.setPlayerProperty("Volume", .double(percent / 100))
}

private func rate(_ arguments: [String]) async throws(CommandFailure) {
    let client = try SpoolClient.connect()
    let properties = try await client.properties(MPRISService.playerInterface)
    guard let text = try optionalArgument(arguments, "rate") else {
        print(cFormat("%g", properties["Rate"]?.doubleValue ?? 1))
        return
    }
    let range = (properties["MinimumRate"]?.doubleValue ?? 1)...(properties["MaximumRate"]?.doubleValue ?? 1)
    guard let rate = Double(text.hasSuffix("x") ? String(text.dropLast()) : text), range.contains(rate) else {
        throw .usage("rate is a number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
    }
    try await client.setPlayerProperty("Rate", .double(rate))
}

private func loop(_ arguments: [String]) async throws(CommandFailure) {
    guard let text = try optionalArgument(arguments, "loop") else {
        let status = try await SpoolClient.connect().properties(MPRISService.playerInterface)["LoopStatus"]?.stringValue
        print(SettingWords.loopWord(status ?? "None"))
        return
    }
    guard let mode = SettingWords.loopStatus(text) else {
        let words = SettingWords.loopModes.map(\.word)
        throw .usage(
            mistake("unknown loop mode '\(text)'", word: text, among: words, otherwise: "use none, track or playlist"))
    }
    try await SpoolClient.connect().setPlayerProperty("LoopStatus", .string(mode))
}

private func shuffle(_ arguments: [String]) async throws(CommandFailure) {
    guard let text = try optionalArgument(arguments, "shuffle") else {
        let on = try await SpoolClient.connect().properties(MPRISService.playerInterface)["Shuffle"]?.boolValue
        print(SettingWords.switchWord(on ?? false))
        return
    }
    guard let on = SettingWords.switchValue(text) else {
        let words = SettingWords.switchWords.keys.sorted()
        throw .usage(
            mistake("shuffle is on or off, not '\(text)'", word: text, among: words, otherwise: "use on or off"))
    }
    try await SpoolClient.connect().setPlayerProperty("Shuffle", .boolean(on))
}

private func queue(_ arguments: [String]) async throws(CommandFailure) {
    try expectNoArguments(arguments, "queue")
    let reply = try await SpoolClient.connect().spool("Queue")
    let entries = reply.first?.arrayValues?.compactMap(\.stringVariantDictValue) ?? []
    if entries.isEmpty {
        print("The queue is empty.")
        return
    }
    for (index, entry) in entries.enumerated() {
        let marker = entry["spool:current"]?.boolValue == true ? ">" : " "
        let title = entry["xesam:title"]?.stringValue ?? entry["xesam:url"]?.stringValue ?? "?"
        let artist = entry["xesam:artist"]?.stringArrayValue?.joined(separator: ", ")
        let length = entry["mpris:length"]?.int64Value.map { " (\(formatTime(Double($0) / 1e6)))" } ?? ""
        print("\(marker) \(index + 1). \(trackLabel(title: title, artist: artist))\(length)  \(cacheNote(entry))")
    }
}

/// `cached 45%`, `cached`, `not cached`, or `local` for an entry's `spool:` fields.
func cacheNote(_ fields: [String: DBusValue]) -> String {
    let url = fields["xesam:url"]?.stringValue ?? fields["spool:url"]?.stringValue ?? ""
    if url.hasPrefix("file:") { return "[local]" }
    guard let cached = fields["spool:cachedBytes"]?.int64Value, cached > 0 else { return "[not cached]" }
    if fields["spool:complete"]?.boolValue == true { return "[cached]" }
    guard let length = fields["spool:contentLength"]?.int64Value, length > 0 else {
        return "[cached \(formatBytes(cached))]"
    }
    return "[cached \(cached * 100 / length)%]"
}

private func cache(_ arguments: [String]) async throws(CommandFailure) {
    let actions = ["stats", "ls", "clear", "prefetch"]
    guard let action = arguments.first else { throw .usage("'spool cache' needs one of stats, ls, clear, prefetch") }
    guard actions.contains(action) else {
        throw .usage(
            mistake(
                "unknown cache command '\(action)'", word: action, among: actions,
                otherwise: "use stats, ls, clear or prefetch"))
    }
    var rest = Array(arguments.dropFirst())
    var account = ""
    if action == "ls" || action == "clear" {
        while let option = rest.first {
            if option == "--account", rest.count >= 2 {
                account = rest[1]
                rest.removeFirst(2)
            } else if option.hasPrefix("--account=") {
                account = String(option.dropFirst("--account=".count))
                rest.removeFirst()
            } else {
                throw .usage(
                    "unknown argument '\(option)' for 'spool cache \(action)'\(hint(option, among: ["--account"]))")
            }
        }
    }
    let client = try SpoolClient.connect()
    switch action {
    case "stats":
        let json = rest == ["--json"]
        try expectNoArguments(json ? [] : rest, "cache stats")
        let counters = (try await client.spool("CacheStats").first?.dictionaryEntries ?? []).compactMap { entry in
            entry.key.stringValue.flatMap { name in entry.value.variantValue?.int64Value.map { (name: name, value: $0) }
            }
        }
        print(json ? CacheReport.json(counters) : CacheReport.lines(counters).joined(separator: "\n"))
    case "ls":
        try await checkAccount(account, client)
        let reply = try await client.spool("CacheEntries", [.string(account)])
        let entries = reply.first?.arrayValues?.compactMap(\.stringVariantDictValue) ?? []
        for entry in entries {
            let url = entry["spool:url"]?.stringValue ?? "?"
            let bytes = entry["spool:cachedBytes"]?.int64Value ?? 0
            print("\(cacheNote(entry)) \(formatBytes(bytes)) \(entry["spool:namespace"]?.stringValue ?? "") \(url)")
        }
        if entries.isEmpty { writeAll("the cache is empty\n", to: STDERR_FILENO) }
    case "clear":
        try await checkAccount(account, client)
        try await client.spool("ClearCache", [.string(account)])
        print(account.isEmpty ? "Cleared the cache." : "Cleared the cache of account '\(account)'.")
    default:
        try await prefetch(rest, client)
    }
}

/// Refuses (exit 1) an `--account` that names no account: neither one with cached files nor
/// the one this command line's configuration names.
private func checkAccount(_ account: String, _ client: SpoolClient) async throws(CommandFailure) {
    guard !account.isEmpty else { return }
    let all =
        try await client.spool("CacheEntries", [.string("")]).first?.arrayValues?.compactMap(\.stringVariantDictValue)
        ?? []
    let cached = Set(all.compactMap { $0["spool:namespace"]?.stringValue })
    let own = try? Configuration.load(arguments: [], environment: ProcessInfo.processInfo.environment).account
    if let problem = unknownAccount(account, cached: cached, own: own) { throw .usage(problem) }
}

/// How long `spool cache prefetch` waits without a byte of progress before it gives up.
let prefetchStallLimit: Duration = .seconds(60)

/// `spool cache prefetch URL...`: starts the downloads, then draws their progress until all are complete.
private func prefetch(_ arguments: [String], _ client: SpoolClient) async throws(CommandFailure) {
    let meteredOK = arguments.contains("--metered-ok")
    let urls = arguments.filter { $0 != "--metered-ok" }
    guard !urls.isEmpty else { throw .usage("'spool cache prefetch' needs at least one http(s) URL") }
    for url in urls {
        switch TrackInput.parse(url) {
        case .success(.remote): continue
        case .failure(let problem): throw .usage(problem.description)
        case .success(.local): throw .usage("only http(s) URLs can be prefetched, not '\(url)'")
        }
    }
    // A prefetch downloads whole files: on a metered network only when the user says so.
    if !meteredOK, try await client.properties(MPRISService.spoolInterface)["Metered"]?.boolValue == true {
        throw .usage("the network is metered and a prefetch downloads whole files; add --metered-ok to go ahead")
    }
    try await client.spool("Prefetch", [.stringArray(urls)])
    let screen = Screen()
    var progress: (bytes: Int64, at: ContinuousClock.Instant) = (-1, .now)
    let start = ContinuousClock.now
    var rates: [String: TransferRate] = [:]
    while true {
        let all =
            try await client.properties(MPRISService.spoolInterface)["Prefetches"]?.arrayValues?
            .compactMap(\.stringVariantDictValue) ?? []
        let mine = all.filter { urls.contains($0["spool:url"]?.stringValue ?? "") }
        var lines: [String] = []
        for fields in mine {
            let url = fields["spool:url"]?.stringValue ?? ""
            let cached = fields["spool:cachedBytes"]?.int64Value ?? 0
            let elapsed = ContinuousClock.now - start
            rates[url, default: TransferRate()].add(
                bytes: cached, at: elapsed.inSeconds)
            lines.append(
                prefetchLine(
                    name: URL(string: url)?.lastPathComponent ?? "?", cached: cached,
                    length: fields["spool:contentLength"]?.int64Value, bytesPerSecond: rates[url]?.bytesPerSecond))
        }
        let failures = mine.compactMap { $0["spool:error"]?.stringValue }
        let done =
            mine.count == Set(urls).count
            && mine.allSatisfy { $0["spool:complete"]?.boolValue == true || $0["spool:error"] != nil }
        if screen.isTerminal || done { screen.draw(lines) }
        if done {
            if let failure = failures.first { throw .failed("prefetch failed: \(failure)") }
            return
        }
        let bytes = mine.reduce(0) { $0 + ($1["spool:cachedBytes"]?.int64Value ?? 0) }
        if bytes != progress.bytes {
            progress = (bytes, .now)
        } else if ContinuousClock.now - progress.at > prefetchStallLimit {
            throw .failed("prefetch made no progress for \(prefetchStallLimit.forPeople); it goes on in the daemon")
        }
        try? await Task.sleep(for: .milliseconds(100))
    }
}
