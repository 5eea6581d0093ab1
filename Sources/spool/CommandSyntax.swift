import Basics
import FoundationEssentials
import GStreamerEngine
import PlayerCore
import SpoolConfig

/// What a word on the command line is, so that completions know what to offer for it.
enum ArgumentKind: Sendable, Equatable {
    /// A local file, folder or playlist (or a URL, typed by hand): completed as a file name.
    case file
    /// One word of a short fixed list.
    case choice([String])
    /// A URL the cache holds: read from `spool cache ls` while completing.
    case cachedURL
    /// An account seen in the cache: read from `spool cache ls` while completing.
    case account
    /// A saved playlist's name: read from `spool playlist ls` while completing.
    case playlist
    /// A value nobody can guess (a time, a number, a size): nothing is offered.
    case text
}

/// One option of a command: a switch (`--follow`) or one that takes a value (`--account NAME`).
struct CommandFlag: Sendable, Equatable {
    /// The option as typed: `--account`.
    let name: String
    /// One line on what it does.
    let summary: String
    /// The word for its value in help (`NAME`); nil for a switch.
    let placeholder: String?
    /// What its value is (ignored for a switch).
    let value: ArgumentKind
    /// Shown after the summary in help, e.g. the default and the environment variables.
    let note: String

    /// A switch, or with `placeholder` an option that takes a value of `value`'s kind.
    init(_ name: String, _ summary: String, placeholder: String? = nil, value: ArgumentKind = .text, note: String = "")
    {
        self.name = name
        self.summary = summary
        self.placeholder = placeholder
        self.value = value
        self.note = note
    }
}

/// The positional arguments of a command: their kind and how many it takes.
struct Operands: Sendable, Equatable {
    /// What each one is.
    let kind: ArgumentKind
    /// At most this many; nil for any number.
    let maximum: Int?

    /// Exactly or at most one.
    static func one(_ kind: ArgumentKind) -> Operands { Operands(kind: kind, maximum: 1) }
    /// Any number.
    static func many(_ kind: ArgumentKind) -> Operands { Operands(kind: kind, maximum: nil) }
}

/// What follows a command's name: its options, positional arguments and subcommands.
struct Grammar: Sendable {
    /// Its options (`--help` is implied for every command).
    var flags: [CommandFlag] = []
    /// Its positional arguments, if it takes any.
    var operands: Operands? = nil
    /// Its subcommands (`spool cache ls`), each with its own grammar.
    var subcommands: [CommandSyntax] = []
}

/// One command as `--help`, the shell completions and the man page show it. All three are
/// generated from these descriptions, so none of them can disagree with another.
struct CommandSyntax: Sendable {
    /// The word that names it: `play`, or `ls` for a subcommand.
    let name: String
    /// Its usage line after `spool `.
    let usage: String
    /// One line on what it does, without a final period.
    let summary: String
    /// More lines of help (ranges, forms of the arguments), or empty.
    let details: String
    /// Its options, arguments and subcommands.
    let grammar: Grammar
    /// Left out of `--help`, the command lists and the man page (tools for packagers).
    let hidden: Bool

    /// A command from its parts; `details` may be empty.
    init(
        _ name: String, usage: String, summary: String, details: String = "", grammar: Grammar = Grammar(),
        hidden: Bool = false
    ) {
        self.name = name
        self.usage = usage
        self.summary = summary
        self.details = details
        self.grammar = grammar
        self.hidden = hidden
    }

    /// `spool NAME --help`: the usage line, the summary, the details and the options.
    var help: String {
        var text = "Usage: spool \(usage)\n\n\(summary).\n"
        if !details.isEmpty { text += "\n" + details }
        if !grammar.flags.isEmpty {
            text += "\nOptions:\n"
            for flag in grammar.flags {
                let left = "  " + flag.name + (flag.placeholder.map { " " + $0 } ?? "")
                // A setting's option reads as in `spool --help`: its default and variables, then what it does.
                text +=
                    flag.note.isEmpty && left.count < 26
                    ? left.padded(to: 26) + " " + flag.summary + "\n"
                    : left + "   (\(flag.note))\n      " + flag.summary + "\n"
            }
        }
        return text
    }

    /// Every command, hidden ones included, in the order help lists them.
    static let all: [CommandSyntax] = {
        let visible = ControlCommand.all.map(\.syntax) + otherCommands
        let help = CommandSyntax(
            "help", usage: "help [COMMAND]", summary: "Show this help, or a command's (also: spool COMMAND --help)",
            grammar: Grammar(operands: .one(.choice(visible.map(\.name)))))
        return visible + [help] + hiddenCommands
    }()

    /// The command called `name` (hidden ones included), if there is one.
    static func named(_ name: String) -> CommandSyntax? { all.first { $0.name == name } }

    /// The commands `spool --help`, the completions and the man page list.
    static var listed: [CommandSyntax] { all.filter { !$0.hidden } }

    /// The commands that do not talk to a running daemon.
    private static let otherCommands: [CommandSyntax] = [
        CommandSyntax(
            "daemon", usage: "daemon [--instance] [options]", summary: "Run the player daemon on the D-Bus session bus",
            details: """
                The daemon owns org.mpris.MediaPlayer2.spool and runs until SIGTERM, SIGINT or MPRIS Quit.
                Each option sets the configuration key of the same name (--cache-budget sets cache.budget)
                and beats its SPOOL_* variable, which beats the configuration file.

                """,
            grammar: Grammar(
                flags: [
                    CommandFlag(
                        "--instance",
                        "if the name is taken, own org.mpris.MediaPlayer2.spool.instance<pid> instead of exiting")
                ]
                    + configurationFlags)),
        CommandSyntax(
            "config", usage: "config [options]",
            summary: "Print the effective configuration and where each value came from",
            details:
                "The options are those of 'spool daemon': the listing shows what a daemon started with them would use.\n",
            grammar: Grammar(flags: configurationFlags)),
        CommandSyntax("version", usage: "version", summary: "Print Spool's version"),
    ]

    /// Tools for packagers, not for listeners: `make install` runs them.
    private static let hiddenCommands: [CommandSyntax] = [
        CommandSyntax(
            "completions", usage: "completions bash|zsh|fish", summary: "Print the completion script for a shell",
            grammar: Grammar(operands: .one(.choice(Shell.allCases.map(\.rawValue)))), hidden: true),
        CommandSyntax("manpage", usage: "manpage", summary: "Print the spool(1) manual page (roff)", hidden: true),
    ]

    /// One option per setting, as `spool daemon` and `spool config` take them.
    static let configurationFlags: [CommandFlag] = ConfigKeys.all.map { key in
        let fallback = key.defaultText.isEmpty ? "none" : key.defaultText
        let variables = key.environmentVariables.map { "$" + $0 }.joined(separator: ", ")
        let kind: ArgumentKind =
            key.name == ConfigKeys.account.name ? .account : key.choices.isEmpty ? .text : .choice(key.choices)
        return CommandFlag(
            key.flag, key.summary, placeholder: key.placeholder, value: kind, note: "default: \(fallback); \(variables)"
        )
    }
}

extension ControlCommand {
    /// This command as help, completions and the man page describe it.
    var syntax: CommandSyntax {
        CommandSyntax(
            name, usage: usage, summary: summary, details: Self.details[name] ?? Self.moreDetails[name] ?? "",
            grammar: Self.grammars[name] ?? Grammar())
    }

    /// What follows each control command's name, by name; a command not listed takes nothing.
    static let grammars: [String: Grammar] = [
        "play": Grammar(flags: [noWait], operands: .many(.file)),
        "open": Grammar(flags: [noWait], operands: .many(.file)),
        "add": Grammar(operands: .many(.file)),
        "seek": Grammar(operands: .one(.text)),
        "volume": Grammar(operands: .one(.text)),
        "rate": Grammar(operands: .one(.text)),
        "loop": Grammar(operands: .one(.choice(["none", "track", "playlist"]))),
        "shuffle": Grammar(operands: .one(.choice(["on", "off"]))),
        "status": Grammar(flags: [
            CommandFlag("--follow", "keep it updated, redrawn in place on a terminal"),
            CommandFlag("--json", "one JSON object per line, for scripts and status bars"),
            CommandFlag("--format", "a line from a template of {{placeholders}}", placeholder: "TEMPLATE"),
        ]),
        "lyrics": Grammar(flags: [CommandFlag("--follow", "show each line in time as the track plays")]),
        "history": Grammar(flags: [
            CommandFlag(
                "--limit", "list at most N songs (default \(HistoryRequest.defaultLimit))", placeholder: "N"),
            CommandFlag("--json", "one JSON object per song and line, for scripts"),
        ]),
        "playlist": Grammar(subcommands: [
            CommandSyntax(
                "save", usage: "playlist save NAME", summary: "Save the queue as the playlist NAME",
                grammar: Grammar(operands: .one(.text))),
            CommandSyntax(
                "ls", usage: "playlist ls [--by-date]", summary: "List the saved playlists",
                grammar: Grammar(flags: [CommandFlag("--by-date", "newest first instead of by name")])),
            CommandSyntax(
                "load", usage: "playlist load NAME", summary: "Play a saved playlist",
                grammar: Grammar(operands: .one(.playlist))),
            CommandSyntax(
                "add", usage: "playlist add NAME URL|PATH...", summary: "Add tracks to a saved playlist",
                grammar: Grammar(operands: .many(.file))),
            CommandSyntax(
                "rm", usage: "playlist rm NAME", summary: "Delete a saved playlist",
                grammar: Grammar(operands: .one(.playlist))),
        ]),
        "cache": Grammar(subcommands: [
            CommandSyntax("stats", usage: "cache stats", summary: "Print the counters of the cache"),
            CommandSyntax(
                "ls", usage: "cache ls [--account NAME]", summary: "List the cached files, newest first",
                grammar: Grammar(flags: [account])),
            CommandSyntax(
                "clear", usage: "cache clear [--account NAME]",
                summary: "Remove the cached files (of one account, or all)",
                grammar: Grammar(flags: [account])),
            CommandSyntax(
                "prefetch", usage: "cache prefetch [--metered-ok] URL...",
                summary: "Download into the cache without playing",
                grammar: Grammar(
                    flags: [
                        CommandFlag(
                            "--metered-ok", "go ahead on a metered network, where a prefetch is refused without it")
                    ],
                    operands: .many(.cachedURL))),
        ]),
    ]

    /// Help for commands whose ranges come from elsewhere in Spool.
    private static let moreDetails: [String: String] = [
        "rate":
            "RATE is a number from \(cFormat("%g", GStreamerEngine.rates.lowerBound)) to \(cFormat("%g", GStreamerEngine.rates.upperBound))"
            + " (1 is normal speed; a trailing x is allowed: 1.25x); the pitch is preserved.\n",
        "loop": "none plays the queue once, track repeats the current track, playlist repeats the whole queue.\n",
        "history":
            "A song is listed once its title is heard on a live stream that names its songs, with the local\n"
            + "time to the minute and the station: 2026-12-05 10:31  Jazz FM  Miles Davis – So What.\n"
            + "The daemon keeps the newest \(HeardSong.historyLimit), across restarts; N is 1 to \(HeardSong.historyLimit).\n"
            + "--json writes {\"artist\", \"heard\" (Unix seconds), \"station\", \"title\"}, artist null when none.\n",
    ]

    private static let noWait = CommandFlag(
        "--no-wait", "return at once instead of waiting for the first track to start")
    private static let account = CommandFlag(
        "--account", "only this account's files", placeholder: "NAME", value: .account)
}

extension String {
    /// The text with spaces added up to `width` characters.
    func padded(to width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }
}
