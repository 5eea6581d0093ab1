import Foundation
import TestSupport
import Testing

@testable import spool

/// Runs `script` with `shell` (bash, zsh or fish) from `directory` (with `environment`, else
/// the test's); the result of the run.
func runShell(
    _ shell: String, _ script: String, in directory: TemporaryDirectory, environment: [String: String]? = nil
) throws -> CommandResult {
    let file = directory.file("script")
    try script.write(to: file, atomically: true, encoding: .utf8)
    return try runCommand(
        "/bin/sh", ["-c", "cd '\(directory.path)' && exec \(shell) script"], environment: environment, timeout: 30)
}

/// A stand-in for `spool` (`bin/spool` in `directory`) whose `cache ls` prints two entries of two accounts, so completions
/// that read the cache can be checked without a daemon.
func fakeSpool(in directory: TemporaryDirectory) throws -> String {
    try FileManager.default.createDirectory(at: directory.file("bin"), withIntermediateDirectories: true)
    let path = directory.file("bin/spool").path
    try """
    #!/bin/sh
    [ "$1 $2" = "playlist ls" ] && { echo evening; echo morning; exit 0; }
    [ "$1 $2" = "cache ls" ] || exit 2
    echo '[cached 45%] 1.2 MiB default https://example.org/a.mp3?x=1'
    echo '[cached] 3.0 MiB work https://example.org/b.mp3'

    """.write(toFile: path, atomically: true, encoding: .utf8)
    try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
    return path
}

@Suite("Shell completions generated from the command definitions")
struct CompletionScriptTests {
    /// A command line before the cursor, and what bash's COMPREPLY must then hold.
    static let bashCases: [(words: [String], reply: [String])] = [
        (["spool", "lo"], ["loop"]),
        (["spool", "st"], ["stop", "status"]),
        (["spool", "loop", ""], ["none", "track", "playlist"]),
        (["spool", "loop", "none", ""], []),
        (["spool", "shuffle", "o"], ["on", "off"]),
        (["spool", "status", "--"], ["--help", "--follow", "--json", "--format"]),
        (["spool", "cache", ""], ["stats", "ls", "clear", "prefetch"]),
        (["spool", "cache", "ls", "--a"], ["--account"]),
        (["spool", "daemon", "--log-l"], ["--log-level"]),
        (["spool", "daemon", "--log-level", "w"], ["warning"]),
        (["spool", "config", "--network-metered", ""], ["auto", "yes", "no"]),
        (["spool", "daemon", "--cache-budget", ""], []),
        (["spool", "daemon", "--notify", ""], ["true", "false"]),
        (["spool", "playlist", ""], ["save", "ls", "load", "add", "rm"]),
        (["spool", "playlist", "ls", "--"], ["--help", "--by-date"]),
        (["spool", "help", "vo"], ["volume"]),
        (["spool", "completions", "z"], ["zsh"]),
        (["spool", "play", "a"], ["a.mp3", "album"]),
        (["spool", "add", "one.mp3", "b"], ["b.flac"]),
        (["spool", "seek", ""], []),
    ]

    @Test func theBashScriptIsValidAndCompletesCommandsFlagsChoicesAndFiles() throws {
        let folder = try TemporaryDirectory(prefix: "spool-bash")
        let script = completionScript(for: .bash)
        try script.write(to: folder.file("spool.bash"), atomically: true, encoding: .utf8)
        let syntax = try runCommand("bash", ["-n", folder.file("spool.bash").path])
        #expect(syntax.status == 0 && syntax.stderr.isEmpty, "\(syntax.stderr)")
        for name in ["a.mp3", "b.flac"] {
            #expect(FileManager.default.createFile(atPath: folder.file(name).path, contents: nil))
        }
        try FileManager.default.createDirectory(at: folder.file("album"), withIntermediateDirectories: false)

        // One bash runs every case: COMP_WORDS as bash would split them, the reply one per line.
        var driver = "source ./spool.bash\n"
        for (words, _) in Self.bashCases {
            let quoted = words.map(shellQuoted).joined(separator: " ")
            driver += "COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); COMPREPLY=(); _spool\n"
            driver += "echo \"${COMPREPLY[*]}\"\n"
        }
        let run = try runShell("bash", driver, in: folder)
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run.stderr)")
        let replies = run.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (index, (words, expected)) in Self.bashCases.enumerated() {
            let got = index < replies.count ? replies[index].split(separator: " ").map(String.init) : ["(no reply)"]
            #expect(Set(got) == Set(expected), "spool \(words.dropFirst().joined(separator: " "))<TAB>: \(got)")
        }
    }

    @Test func bashCompletesCachedURLsAndAccountsWhereBashBreaksWordsAtColons() throws {
        let folder = try TemporaryDirectory(prefix: "spool-bash")
        try completionScript(for: .bash).write(to: folder.file("spool.bash"), atomically: true, encoding: .utf8)
        let spool = try fakeSpool(in: folder)
        // bash splits `https://ex` into https, :, //ex and replaces only the last word.
        let driver = """
            source ./spool.bash
            COMP_LINE='\(spool) cache prefetch https://example.org/a'; COMP_POINT=${#COMP_LINE}
            COMP_WORDS=(\(spool) cache prefetch https : //example.org/a); COMP_CWORD=5; _spool
            echo "${COMPREPLY[*]}"
            COMP_LINE='\(spool) cache clear --account '; COMP_POINT=${#COMP_LINE}
            COMP_WORDS=(\(spool) cache clear --account ''); COMP_CWORD=4; _spool
            echo "${COMPREPLY[*]}"
            COMP_LINE='\(spool) daemon --log-level=d'; COMP_POINT=${#COMP_LINE}
            COMP_WORDS=(\(spool) daemon --log-level = d); COMP_CWORD=4; _spool
            echo "${COMPREPLY[*]}"
            COMP_LINE='\(spool) playlist load m'; COMP_POINT=${#COMP_LINE}
            COMP_WORDS=(\(spool) playlist load m); COMP_CWORD=3; _spool
            echo "${COMPREPLY[*]}"

            """
        let run = try runShell("bash", driver, in: folder)
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run.stderr)")
        #expect(run.stdout == "//example.org/a.mp3?x=1\ndefault work\ndebug\nmorning\n", "\(run.stdout)")
    }

    @Test(.enabled(if: (try? executablePath("zsh")) != nil, "zsh is not installed: its script is not checked"))
    func theZshScriptParses() throws {
        let folder = try TemporaryDirectory(prefix: "spool-zsh")
        let script = completionScript(for: .zsh)
        #expect(script.hasPrefix("#compdef spool\n"))
        try script.write(to: folder.file("_spool"), atomically: true, encoding: .utf8)
        let check = try runCommand("zsh", ["-n", folder.file("_spool").path])
        #expect(check.status == 0 && check.stderr.isEmpty, "\(check.stderr)")
    }

    @Test(.enabled(if: (try? executablePath("fish")) != nil, "fish is not installed: its script is not checked"))
    func theFishScriptParsesAndCompletes() throws {
        let folder = try TemporaryDirectory(prefix: "spool-fish")
        try completionScript(for: .fish).write(to: folder.file("spool.fish"), atomically: true, encoding: .utf8)
        let check = try runCommand("fish", ["-n", folder.file("spool.fish").path])
        #expect(check.status == 0 && check.stderr.isEmpty, "\(check.stderr)")
        let spool = try fakeSpool(in: folder)
        // `complete -C` prints what fish would offer; the fake comes first on PATH.
        let run = try runShell(
            "fish",
            """
            source ./spool.fish
            set -x PATH \(URL(fileURLWithPath: spool).deletingLastPathComponent().path) $PATH
            complete -C'spool lo'
            echo ==
            complete -C'spool loop '
            echo ==
            complete -C'spool cache prefetch '
            echo ==
            complete -C'spool playlist rm '
            echo ==
            complete -C'spool daemon --network-metered '

            """, in: folder)
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run.stderr)")
        let groups = run.stdout.components(separatedBy: "==\n").map { group in
            Set(group.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") })
        }
        #expect(groups.count == 5, "\(run.stdout)")
        #expect(groups.first == ["loop"], "\(run.stdout)")
        #expect(groups.dropFirst().first == ["none", "track", "playlist"], "\(run.stdout)")
        #expect(
            groups.dropFirst(2).first == ["https://example.org/a.mp3?x=1", "https://example.org/b.mp3"], "\(run.stdout)"
        )
        #expect(groups.dropFirst(3).first == ["evening", "morning"], "\(run.stdout)")
        #expect(groups.last == ["auto", "yes", "no"], "\(run.stdout)")
    }

    /// The usage lines are written by hand: every option and word they name must be in the
    /// grammar the completions come from, and the other way round.
    @Test func everyUsageLineAgreesWithItsGrammar() {
        let settings = Set(CommandSyntax.configurationFlags.map(\.name))
        for command in CommandSyntax.all + CommandSyntax.all.flatMap(\.grammar.subcommands) {
            let inUsage = Set(
                command.usage.split(whereSeparator: { " []|".contains($0) }).filter { $0.hasPrefix("--") }.map(
                    String.init))
            // `[options]` stands for the settings' options.
            let own = Set(command.grammar.flags.map(\.name)).subtracting(
                command.usage.contains("[options]") ? settings : [])
            if command.grammar.subcommands.isEmpty {
                #expect(inUsage == own, "spool \(command.usage): usage \(inUsage), grammar \(own)")
            } else {
                let subcommands = Set(command.grammar.subcommands.flatMap(\.grammar.flags).map(\.name))
                #expect(
                    inUsage.isSubset(of: subcommands),
                    "spool \(command.usage): usage \(inUsage), grammar \(subcommands)")
                #expect(
                    command.grammar.subcommands.allSatisfy { command.usage.contains($0.name) }, "spool \(command.usage)"
                )
            }
            if case .choice(let words) = command.grammar.operands?.kind, command.name != "help" {
                #expect(
                    words.allSatisfy { command.usage.contains($0) },
                    "spool \(command.name): \(words) not in '\(command.usage)'")
            }
        }
        #expect(Set(ControlCommand.grammars.keys).isSubset(of: Set(ControlCommand.all.map(\.name))))
    }

    @Test func eachCommandsHelpStatesItsRangesAndForms() throws {
        let help = { (name: String) in CommandSyntax.named(name)?.help ?? "" }
        #expect(help("rate").contains("0.5 to 2"))
        #expect(help("volume").contains("0 to 100"))
        for form in ["90", "1:30", "1h2m3s", "+", "-", "50%"] { #expect(help("seek").contains(form), "\(form)") }
        #expect(help("loop").contains("none") && help("loop").contains("playlist"))
        let daemon = help("daemon")
        for flag in CommandSyntax.configurationFlags + [CommandFlag("--instance", "")] {
            #expect(daemon.contains("  \(flag.name)"), "spool daemon --help does not list \(flag.name)")
        }
        #expect(help("config").contains("--log-level LEVEL"))
        #expect(help("cache").contains("prefetch"))
    }
}
