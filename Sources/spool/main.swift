import Basics
import FoundationEssentials
import Glibc

// `spool <command> [arguments]`: each command lives in its own file; this one only dispatches.
var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.isEmpty {
    writeAll(shortUsage(), to: STDERR_FILENO)
    exit(ExitStatus.usageOrConfiguration)
}
let command = arguments.removeFirst()

switch command {
case "help", "--help", "-h":
    guard let name = arguments.first else {
        print(usage(), terminator: "")
        exit(ExitStatus.success)
    }
    guard let syntax = CommandSyntax.named(name) else {
        complain("no command '\(name)'\(hint(name, among: CommandSyntax.listed.map(\.name)))")
        writeAll(shortUsage(), to: STDERR_FILENO)
        exit(ExitStatus.usageOrConfiguration)
    }
    print(syntax.help, terminator: "")
    exit(ExitStatus.success)
case "version", "--version":
    print("spool \(SpoolVersion.string)")
    exit(ExitStatus.success)
case "config":
    runConfigCommand(arguments)
case "daemon":
    runDaemonCommand(arguments)
case "completions", "manpage":
    runDocumentationCommand(command, arguments)
default:
    if let control = ControlCommand.all.first(where: { $0.name == command }) {
        runControlCommand(control, arguments)
    }
    let aliases = ["previous": "prev", "unpause": "resume", "play-pause": "toggle", "seek-to": "seek"]
    let guess =
        aliases[command].map { "; did you mean '\($0)'?" }
        ?? hint(command, among: ["help", "version", "config", "daemon"] + ControlCommand.all.map(\.name))
    complain("unknown command '\(command)'\(guess.isEmpty ? "; see 'spool --help'" : guess)")
    exit(ExitStatus.usageOrConfiguration)
}
