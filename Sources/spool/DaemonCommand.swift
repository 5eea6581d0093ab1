import Basics
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// `spool daemon [options]`: runs the player until SIGTERM, SIGINT, SIGHUP, MPRIS Quit or the
/// end of its session bus.
func runDaemonCommand(_ arguments: [String]) -> Never {
    limitMallocArenas()
    let instance = arguments.contains("--instance")
    let configuration = configurationOrExit(arguments.filter { $0 != "--instance" }, command: "daemon")
    Logger.minimumLevel = configuration.logLevel

    // Signals arrive as events on the main queue, never as handlers mid-operation. The sources
    // are made before the daemon, so a stop sent while it starts is kept, not lost; the main
    // queue runs their handlers only once the daemon exists (dispatchMain, below).
    signal(SIGPIPE, SIG_IGN)
    let daemonToStop = Mutex<Daemon?>(nil)
    let signalSources = [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT"), (SIGHUP, "SIGHUP")].map { number, name in
        // The default action would end the process before the source sees the signal.
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
        source.setEventHandler { daemonToStop.withLock { $0 }?.stop(reason: name) }
        source.resume()
        return source
    }
    let daemon: Daemon
    do {
        daemon = try Daemon(options: DaemonOptions(configuration: configuration, instance: instance))
    } catch {
        complain("\(error)")
        exit(ExitStatus.runtimeFailure)
    }
    daemonToStop.withLock { $0 = daemon }
    daemon.launch()
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
