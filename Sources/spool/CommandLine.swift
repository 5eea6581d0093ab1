import Basics
import FoundationEssentials
import Glibc
import SpoolConfig

/// The exit statuses of every `spool` command.
enum ExitStatus {
    /// The command did what was asked.
    static let success: Int32 = 0
    /// The command line or the configuration is wrong; running again will not help.
    static let usageOrConfiguration: Int32 = 1
    /// Something failed at run time: no bus, the name taken, no audio pipeline.
    static let runtimeFailure: Int32 = 2
}

/// Writes one line to stderr (stdout is for results, and is block-buffered in pipes).
func complain(_ message: String) {
    writeAll("spool: \(message)\n", to: STDERR_FILENO)
}

/// The effective configuration for `command` given `arguments` (its options);
/// prints the command's help and exits 0 for `--help`, prints the one-line problem and
/// exits 1 for a bad option or configuration, and prints any warnings.
func configurationOrExit(_ arguments: [String], command: String) -> Configuration {
    if arguments.contains("--help") || arguments.contains("-h") {
        print(CommandSyntax.named(command)?.help ?? usage(), terminator: "")
        exit(ExitStatus.success)
    }
    do {
        let configuration = try Configuration.load(
            arguments: arguments, environment: ProcessInfo.processInfo.environment)
        configuration.warnings.forEach(complain)
        return configuration
    } catch {
        complain(error.description)
        exit(ExitStatus.usageOrConfiguration)
    }
}

/// `spool --help`: the commands, then every configuration flag, built from
/// the lists of commands and settings so it cannot fall behind.
func usage() -> String {
    var text = """
        Usage: spool <command> [arguments]

        Commands that control the daemon (D-Bus activation starts it when needed):

        """
    for command in ControlCommand.all {
        text += "  " + command.usage.padded(to: 54) + " " + command.summary + "\n"
    }
    text += "\nOther commands:\n"
    for command in CommandSyntax.listed where ControlCommand.all.allSatisfy({ $0.name != command.name }) {
        text += "  " + command.usage.padded(to: 54) + " " + command.summary + "\n"
    }
    text += """

        Options of `spool daemon` and `spool config`, as --option VALUE or --option=VALUE.
        Each sets the key of the same name in \(ConfigFile.defaultPath(environment: ProcessInfo.processInfo.environment).abbreviatingHome)
        (`--cache-budget` sets cache.budget) and overrides it and its SPOOL_* variable:

        """
    for key in ConfigKeys.all {
        let variables = key.environmentVariables.map { "$\($0)" }.joined(separator: ", ")
        let fallback = key.defaultText.isEmpty ? "none" : key.defaultText
        text += "  \(key.flag) \(key.placeholder)   (default: \(fallback); \(variables))\n"
        text += "      \(key.summary)\n"
    }
    text += """

        Exit status: 0 success, 1 usage or configuration error, 2 the daemon is unreachable or the
        command failed (or, for `spool daemon`, a failure at run time).
        SPOOL_BUS_NAME makes the control commands talk to another instance's bus name.
        Any MPRIS client works too, e.g.  playerctl -p spool open https://example.org/a.mp3

        """
    return text
}

/// What bare `spool` and `spool help NOSUCH` print on stderr: the commands' names and where to read more.
func shortUsage() -> String {
    """
    Usage: spool <command> [arguments]
    Commands: \(CommandSyntax.listed.map(\.name).joined(separator: ", "))
    'spool --help' describes them all; 'spool help COMMAND' (or 'spool COMMAND --help') one of them.

    """
}

extension String {
    /// The path with the home folder (`$HOME`, as the configuration file's path uses) written as `~`.
    fileprivate var abbreviatingHome: String {
        let home = BaseDirectories(environment: ProcessInfo.processInfo.environment).home.path
        return hasPrefix(home + "/") ? "~" + dropFirst(home.count) : self
    }
}
