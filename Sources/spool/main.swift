import Foundation

// `spool <command> [options]`: each command lives in its own file; this one only dispatches.
var arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.isEmpty ? "help" : arguments.removeFirst()

switch command {
case "help", "--help", "-h":
    print(usage(), terminator: "")
    exit(ExitStatus.success)
case "version", "--version":
    print("spool \(SpoolVersion.string)")
    exit(ExitStatus.success)
case "config":
    runConfigCommand(arguments)
case "daemon":
    runDaemonCommand(arguments)
default:
    complain("unknown command '\(command)'; see 'spool --help'")
    exit(ExitStatus.usageOrConfiguration)
}
