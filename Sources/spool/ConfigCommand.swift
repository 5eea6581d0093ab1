import FoundationEssentials
import Glibc

/// `spool config [options]`: prints the effective configuration as a
/// configuration file, each value followed by where it came from.
func runConfigCommand(_ arguments: [String]) -> Never {
    let configuration = configurationOrExit(arguments, command: "config")
    print(configuration.listing(), terminator: "")
    exit(ExitStatus.success)
}
