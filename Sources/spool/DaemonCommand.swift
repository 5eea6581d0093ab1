import Dispatch
import FoundationEssentials
import Glibc
import SpoolLog

/// `spool daemon [options]`: runs the player until SIGTERM, SIGINT or MPRIS Quit.
func runDaemonCommand(_ arguments: [String]) -> Never {
    let instance = arguments.contains("--instance")
    let configuration = configurationOrExit(arguments.filter { $0 != "--instance" })
    Logger.minimumLevel = configuration.logLevel

    // Signals arrive as events on the main queue, never as handlers mid-operation.
    signal(SIGTERM, SIG_IGN)
    signal(SIGINT, SIG_IGN)
    signal(SIGPIPE, SIG_IGN)
    let daemon: Daemon
    do {
        daemon = try Daemon(options: DaemonOptions(configuration: configuration, instance: instance))
    } catch {
        complain("\(error)")
        exit(ExitStatus.runtimeFailure)
    }
    let signalSources = [SIGTERM, SIGINT].map { number in
        let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
        source.setEventHandler { daemon.stop(reason: number == SIGTERM ? "SIGTERM" : "SIGINT") }
        source.resume()
        return source
    }
    Task {
        do {
            try await daemon.start()
        } catch {
            complain("\(error)")
            exit(ExitStatus.runtimeFailure)
        }
    }
    withExtendedLifetime(signalSources) { dispatchMain() }
}
