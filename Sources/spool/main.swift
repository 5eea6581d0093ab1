import FoundationEssentials
import Glibc

// `spool <command> [arguments]`: each command lives in its own file; this one only dispatches.
var arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.isEmpty ? "help" : arguments.removeFirst()

switch command {
case "help", "--help", "-h":
    if let name = arguments.first, let control = ControlCommand.all.first(where: { $0.name == name }) {
        print(control.help, terminator: "")
    } else {
        print(usage(), terminator: "")
    }
    exit(ExitStatus.success)
case "version", "--version":
    print("spool \(SpoolVersion.string)")
    exit(ExitStatus.success)
case "config":
    runConfigCommand(arguments)
case "daemon":
    runDaemonCommand(arguments)
default:
    if let control = ControlCommand.all.first(where: { $0.name == command }) {
        runControlCommand(control, arguments)
    }
    let aliases = ["previous": "prev", "unpause": "resume", "play-pause": "toggle", "seek-to": "seek"]
    let guess = aliases[command].map { "; did you mean '\($0)'?" }
        ?? hint(command, among: ["help", "version", "config", "daemon"] + ControlCommand.all.map(\.name))
    complain("unknown command '\(command)'\(guess.isEmpty ? "; see 'spool --help'" : guess)")
    exit(ExitStatus.usageOrConfiguration)
}
