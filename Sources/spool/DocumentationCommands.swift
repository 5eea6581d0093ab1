import Basics
import FoundationEssentials
import Glibc

/// A shell `spool completions` writes a script for.
enum Shell: String, CaseIterable, Sendable {
    /// GNU bash: bash-completion loads the script when `spool` is first completed.
    case bash
    /// zsh: the script is the autoloaded function `_spool` in a folder on `$fpath`.
    case zsh
    /// fish: a vendor completion file.
    case fish
}

/// The completion script for `shell`, generated from `commands`.
func completionScript(for shell: Shell, commands: [CommandSyntax] = CommandSyntax.all) -> String {
    switch shell {
    case .bash: bashCompletion(commands)
    case .zsh: zshCompletion(commands)
    case .fish: fishCompletion(commands)
    }
}

/// `spool completions SHELL` and `spool manpage`: print the script or the page and exit.
func runDocumentationCommand(_ command: String, _ arguments: [String]) -> Never {
    if arguments.contains("--help") || arguments.contains("-h"), let syntax = CommandSyntax.named(command) {
        print(syntax.help, terminator: "")
        exit(ExitStatus.success)
    }
    if command == "manpage" {
        if let extra = arguments.first {
            complain("'spool manpage' takes no arguments, not '\(extra)'")
            exit(ExitStatus.usageOrConfiguration)
        }
        print(manPage(), terminator: "")
        exit(ExitStatus.success)
    }
    let names = Shell.allCases.map(\.rawValue)
    guard arguments.count == 1, let shell = Shell(rawValue: arguments[0]) else {
        let word = arguments.first ?? ""
        complain(
            "'spool completions' takes one of \(names.joined(separator: ", "))\(word.isEmpty ? "" : ", not '\(word)'")\(hint(word, among: names))"
        )
        exit(ExitStatus.usageOrConfiguration)
    }
    print(completionScript(for: shell), terminator: "")
    exit(ExitStatus.success)
}
