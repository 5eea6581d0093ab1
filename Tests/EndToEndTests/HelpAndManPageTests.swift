import Foundation
import SpoolConfig
import TestSupport
import Testing

@testable import spool

@Suite("The man page and help of the spool command", .serialized)
struct HelpAndManPageTests {
    @Test func theManPageNamesEveryCommandAndSettingAndRendersWithoutWarnings() throws {
        let page = manPage()
        #expect(page.hasPrefix(".\\\"") && page.contains(".TH SPOOL 1 "))
        for command in CommandSyntax.listed {
            #expect(page.contains(".B \"spool \(roff(command.name))"), "no entry for \(command.name)")
        }
        for command in CommandSyntax.all where command.hidden {
            #expect(!page.contains(".B \"spool \(command.name)"), "the hidden \(command.name) is in the page")
        }
        for key in ConfigKeys.all {
            #expect(page.contains("\\fB\(roff(key.flag))\\fR"), "no option \(key.flag)")
            #expect(page.contains(".B \(roff(key.name))\n"), "no key \(key.name)")
        }
        #expect(page.contains("0.5 to 2"))
        // No line may start a request by accident: every line that starts with a dot is a macro.
        let requests = Set(page.split(separator: "\n").filter { $0.hasPrefix(".") }.map { $0.prefix { $0 != " " } })
        #expect(
            requests.isSubset(of: [
                ".\\\"", ".TH", ".ad", ".nh", ".SH", ".B", ".I", ".RI", ".BR", ".PP", ".TP", ".IP", ".nf", ".fi", ".RS",
                ".RE", ".br",
            ]),
            "\(requests)")

        let folder = try TemporaryDirectory(prefix: "spool-man")
        let file = folder.file("spool.1")
        try page.write(to: file, atomically: true, encoding: .utf8)
        let groff = try runCommand("groff", ["-ww", "-z", "-man", file.path])
        #expect(groff.status == 0 && groff.stderr.isEmpty, "\(groff.stderr)")
        var environment = ProcessInfo.processInfo.environment
        environment["MANWIDTH"] = "80"
        let man = try runCommand("man", ["--warnings", "-l", file.path], environment: environment)
        #expect(man.status == 0 && man.stderr.isEmpty, "\(man.stderr)")
        #expect(man.stdout.contains("spool loop [none|track|playlist]"), "\(man.stdout.prefix(2000))")
    }

    @Test func roffEscapesWhatWouldBeReadAsRequestsOrEscapes() {
        #expect(roff(".m3u") == "\\&.m3u")
        #expect(roff("'a") == "\\&'a")
        #expect(roff("a\\b --x") == "a\\eb \\-\\-x")
        #expect(roff("NAME,…") == "NAME,\\[u2026]")
    }

    @Test func bareSpoolAndHelpForAnUnknownCommandExitOneWithAShortUsage() throws {
        let bus = try PrivateBus()  // none of these may need a daemon
        for arguments in [[], ["help", "nosuch"]] {
            let result = try runSpool(arguments, environment: bus.environment)
            #expect(result.status == 1, "spool \(arguments): \(result)")
            #expect(result.stdout.isEmpty, "spool \(arguments): \(result.stdout)")
            #expect(
                result.stderr.contains("Usage: spool <command>") && result.stderr.contains("loop"), "\(result.stderr)")
        }
        let misspelt = try runSpool(["help", "stauts"], environment: bus.environment)
        #expect(
            misspelt.status == 1 && misspelt.stderr.hasPrefix("spool: no command 'stauts'; did you mean 'status'?"),
            "\(misspelt)")
    }

    @Test(arguments: ["daemon", "config", "rate", "cache", "completions"])
    func oneCommandsHelpComesFromItsDefinition(command: String) throws {
        let bus = try PrivateBus()
        let help = try runSpool([command, "--help"], environment: bus.environment)
        #expect(help.status == 0 && help.stdout == CommandSyntax.named(command)?.help, "\(help)")
        #expect(try runSpool(["help", command], environment: bus.environment).stdout == help.stdout)
        if command == "daemon" {
            #expect(help.stdout.contains("--instance") && help.stdout.contains("--log-level LEVEL"), "\(help.stdout)")
            #expect(!help.stdout.contains("Commands that control the daemon"), "the overview, not the daemon's help")
        }
    }

    /// The words completions offer are the words the commands take: none is refused as a
    /// usage error (with no daemon on the bus they fail later, with 2).
    @Test func everyOfferedChoiceIsAcceptedByItsCommand() throws {
        let bus = try PrivateBus()
        for command in ControlCommand.all {
            guard case .choice(let words) = command.syntax.grammar.operands?.kind else { continue }
            for word in words {
                let result = try runSpool([command.name, word], environment: bus.environment)
                #expect(result.status == 2, "spool \(command.name) \(word): \(result)")
            }
        }
        for sub in ControlCommand.all.flatMap(\.syntax.grammar.subcommands) where sub.grammar.operands == nil {
            let result = try runSpool(
                sub.usage.split(separator: " ").prefix(2).map(String.init), environment: bus.environment)
            #expect(result.status == 2, "spool \(sub.usage): \(result)")
        }
        for shell in Shell.allCases {
            let script = try runSpool(["completions", shell.rawValue], environment: bus.environment)
            #expect(script.status == 0 && script.stdout == completionScript(for: shell), "\(shell)")
        }
        let page = try runSpool(["manpage"], environment: bus.environment)
        #expect(page.status == 0 && page.stdout == manPage())
        let wrong = try runSpool(["completions", "tcsh"], environment: bus.environment)
        #expect(wrong.status == 1 && wrong.stderr.contains("bash, zsh, fish"), "\(wrong)")
    }
}
