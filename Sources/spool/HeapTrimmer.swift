import Dispatch
import Glibc

/// Hands the heap's free pages back to the system once a minute. glibc returns freed memory
/// on its own only from the top of an arena; pages freed in the middle (a long-running daemon
/// frees in any order: buffers of tracks long gone, short-lived threads' allocations) stay
/// resident until `malloc_trim` releases them. Under `bench/soak.sh` that held memory was most
/// of the resident growth per hour. A trim walks the free lists of two arenas (under a
/// millisecond here) on a utility queue, never on a thread that plays.
final class HeapTrimmer: @unchecked Sendable {  // the timer is touched only at init and deinit
    /// How often the heap is trimmed.
    static let interval: DispatchTimeInterval = .seconds(60)

    private let timer: DispatchSourceTimer

    /// Starts trimming; stops when the trimmer is released. Nil when glibc's `malloc_trim`
    /// cannot be found (another C library).
    init?() {
        // malloc.h is outside Swift's Glibc module: malloc_trim is looked up, as mallopt is.
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        let trim = unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "spool.heap-trim", qos: .utility))
        timer.schedule(deadline: .now() + Self.interval, repeating: Self.interval, leeway: .seconds(5))
        timer.setEventHandler { _ = trim(0) }
        timer.resume()
    }

    deinit { timer.cancel() }
}
