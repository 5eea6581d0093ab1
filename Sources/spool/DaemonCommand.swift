import Basics
import FoundationEssentials
import Glibc

/// `spool daemon [options]`: runs the player until SIGTERM, SIGINT, SIGHUP, MPRIS Quit or the
/// end of its session bus.
func runDaemonCommand(_ arguments: [String]) -> Never {
    limitMallocArenas()
    let instance = arguments.contains("--instance")
    let configuration = configurationOrExit(arguments.filter { $0 != "--instance" }, command: "daemon")
    Logger.minimumLevel = configuration.logLevel

    // The signals that stop the daemon are blocked here, before this process starts a thread of
    // its own, so in every thread it starts (the bus's, GStreamer's; Dispatch's block them
    // anyway): they wait, pending, for the main thread, which takes them one by one with
    // sigwait once the daemon is built. So a stop sent while the daemon starts is kept, no
    // handler runs mid-operation, and none depends on which thread the kernel picks.
    signal(SIGPIPE, SIG_IGN)
    let stopSignals: [Int32: String] = [SIGTERM: "SIGTERM", SIGINT: "SIGINT", SIGHUP: "SIGHUP"]
    var blocked = sigset_t()
    sigemptyset(&blocked)
    for number in stopSignals.keys { sigaddset(&blocked, number) }
    pthread_sigmask(SIG_BLOCK, &blocked, nil)
    let daemon: Daemon
    do {
        daemon = try Daemon(options: DaemonOptions(configuration: configuration, instance: instance))
    } catch {
        complain("\(error)")
        exit(ExitStatus.runtimeFailure)
    }
    daemon.launch()
    // The main thread serves no queue (nothing in the daemon uses the main queue): it waits for
    // signals, for the life of the process, which a stop ends with exit.
    while true {
        var number: Int32 = 0
        guard sigwait(&blocked, &number) == 0 else { continue }
        daemon.stop(reason: stopSignals[number] ?? "signal \(number)")
    }
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
