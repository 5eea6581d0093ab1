import Basics
import Dispatch
import FoundationEssentials
import Glibc

/// `spool daemon [options]`: runs the player until SIGTERM, SIGINT or MPRIS Quit.
func runDaemonCommand(_ arguments: [String]) -> Never {
    limitMallocArenas()
    let instance = arguments.contains("--instance")
    let configuration = configurationOrExit(arguments.filter { $0 != "--instance" }, command: "daemon")
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

/// Makes the daemon's threads share two malloc arenas (the main one and one more) instead of
/// glibc's 8 per core. Its threads are many and short-lived (GStreamer's streaming threads,
/// Dispatch's workers), threads allocating at the same moment get arenas of their own, and
/// each arena keeps what is freed in it: under `bench/soak.sh` anonymous memory grew about
/// 14 MiB an hour for as long as the daemon played, while its live allocations stayed flat.
/// The daemon allocates little per second, so the shared lock costs nothing measurable.
/// A limit the user sets (MALLOC_ARENA_MAX, or arena_max in GLIBC_TUNABLES) wins.
func limitMallocArenas() {
    if getenv("MALLOC_ARENA_MAX") != nil { return }
    if let tunables = getenv("GLIBC_TUNABLES"), String(cString: tunables).contains("arena_max") { return }
    // malloc.h is outside Swift's Glibc module: mallopt is looked up instead (M_ARENA_MAX is -8).
    guard let symbol = dlsym(nil, "mallopt") else { return }
    let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
    _ = mallopt(-8, 2)
}
