import Basics
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// Spool's resilient HTTP range fetcher. One thread owns libcurl's multi handle and every
/// easy handle; other threads hand it commands through a queue and wake it with
/// `curl_multi_wakeup`, so starting or cancelling a transfer takes effect within a poll
/// wake-up (well under a millisecond), whatever the server is doing. Connections stay in
/// the multi handle's cache, so a range hop to the same origin needs no new handshake.
///
/// A transfer retries on its own: 408/425/429/5xx and connection errors back off
/// exponentially (honouring `Retry-After`), cut or short bodies and stalls continue at the
/// first byte not yet delivered, 401/403/410 ask the re-resolve hook for a new URL, 404 and
/// other 4xx fail. Every 206 is checked against what was asked; a changed resource is
/// reported as ``TransferEvent/changed(_:)`` and never spliced. Lower priorities pause while
/// a higher one receives.
///
/// Events of a transfer are delivered on the fetcher's thread, in order; handlers
/// must return quickly (store the bytes, wake a waiter) and never block.
///
/// How a cache-backed caller uses it:
/// - Key each request with ``RangeRequest/resource`` (the cache key): at most one transfer
///   per resource then runs; a new request supersedes the old one.
/// - Ask for a hole with `start`/`end`, `knownLength` and `.ifRange(storedValidator)` once a
///   first response gave a ``ResponseHead/validator``. On ``TransferEvent/changed(_:)`` empty
///   the entry, store the new validator and length, and keep the data that follows (from 0).
///   On ``FetchError/resourceChanged(_:)`` empty the entry and ask again without a condition.
/// - Revalidate a complete entry with `.ifNoneMatch(validator)` from byte 0 (with a small
///   `end`, or none to play a new version from its body): ``TransferEvent/notModified(_:)``
///   keeps it, `changed` replaces it.
/// - Pick ``FetchPriority`` by need and raise it with ``setPriority(_:_:)`` when a reader
///   starts waiting on the transfer.
public final class Fetcher: Sendable {
    private let configuration: FetcherConfiguration
    /// The worker and its thread, from the first transfer on. Started lazily because
    /// `curl_global_init` (OpenSSL's set-up) makes about 2 MiB of libcrypto and libcurl
    /// resident: a daemon that only plays local files never pays it.
    private let worker = Mutex<(worker: FetcherWorker?, shutDown: Bool)>((nil, false))

    /// Creates a fetcher with `configuration`; libcurl and the fetcher's thread start
    /// with the first transfer.
    public init(configuration: FetcherConfiguration) {
        self.configuration = configuration
    }

    /// The running worker, started on first use: `curl_global_init` runs once (under the
    /// lock, before any other curl call of this fetcher), then the thread that owns the
    /// multi handle starts.
    private var running: FetcherWorker {
        let (worker, lateStart) = worker.withLock { state -> (FetcherWorker, Bool) in
            if let worker = state.worker { return (worker, false) }
            CurlGlobal.initialize()
            let started = FetcherWorker(configuration: configuration)
            state.worker = started
            // The thread holds only the worker, so releasing the fetcher stops it.
            startThread(name: "spool.fetcher") { started.run() }
            return (started, state.shutDown)
        }
        // Used after shutdown: stopped at once (freeing its handles), so nothing runs, as before.
        if lateStart { worker.shutdown() }
        return worker
    }

    /// The value every request sends for the header `name`, nil for one never sent
    /// (``FetcherConfiguration/requestHeader(_:)``).
    public func requestHeader(_ name: String) -> String? { configuration.requestHeader(name) }

    /// Creates a fetcher with the production settings; `userAgent` names Spool and its version.
    public convenience init(userAgent: String) {
        self.init(configuration: FetcherConfiguration(userAgent: userAgent))
    }

    /// Starts fetching `request`; `events` receives the transfer's events, tagged with its id,
    /// on the fetcher's thread. After a 401/403/410, `reresolve` is called (off the fetcher
    /// thread) with the request's URL and returns the URL to continue with, at the same
    /// offset; nil gives up. Without it the original URL is tried again.
    @discardableResult
    public func start(
        _ request: RangeRequest, reresolve: URLResolver? = nil,
        events: @escaping @Sendable (TransferID, TransferEvent) -> Void
    ) -> TransferID {
        running.start(request, resolver: reresolve, events: events)
    }

    /// Changes a transfer's priority (e.g. read-ahead becomes playback when the reader waits).
    public func setPriority(_ id: TransferID, _ priority: FetchPriority) {
        running.post(.setPriority(id, priority))
    }

    /// Holds a transfer's receiving (`curl_easy_pause`; the connection stays open) until it is
    /// released: a writer whose disk lags behind asks for no more bytes meanwhile, without
    /// making the fetcher's thread wait. A hold outlasts priority changes.
    public func hold(_ id: TransferID, _ held: Bool) {
        running.post(.hold(id, held))
    }

    /// Cancels a transfer; no event of it is delivered after the fetcher thread handles this,
    /// which is when `completion` runs (on that thread).
    public func cancel(_ id: TransferID, completion: (@Sendable () -> Void)? = nil) {
        running.post(.cancel(id, completion))
    }

    /// CPU seconds the fetcher's own thread has used (its waits cost none); nil before its
    /// first transfer or after shutdown. Unlike the process's CPU time it is not shared with
    /// whatever else the process runs.
    public var threadCPUSeconds: Double? { worker.withLock { $0.worker }?.threadCPUSeconds }

    /// Cancels every transfer, stops the thread and frees libcurl's handles. Idempotent.
    public func shutdown() {
        worker.withLock { state in
            state.shutDown = true
            return state.worker
        }?.shutdown()
    }

    deinit { shutdown() }
}

/// The state shared between callers and the fetcher thread, and the thread's loop.
final class FetcherWorker: Sendable {
    enum Command {
        case start(TransferID, RangeRequest, URLResolver?, @Sendable (TransferID, TransferEvent) -> Void)
        case cancel(TransferID, (@Sendable () -> Void)?)
        case setPriority(TransferID, FetchPriority)
        case hold(TransferID, Bool)
        case resolved(TransferID, URL?)
    }

    // Protected by the mutex.
    private struct Shared {
        var commands: [Command] = []
        var nextID: UInt64 = 1
        var stopping = false
        /// The fetcher thread's CPU clock, once it runs.
        var threadClock: clockid_t?
    }

    private let shared = Mutex(Shared())
    private let multi = MultiHandle()
    private let log = Logger(label: "fetcher")
    private let configuration: FetcherConfiguration
    private let stopped = DispatchSemaphore(value: 0)

    init(configuration: FetcherConfiguration) {
        self.configuration = configuration
    }

    func start(
        _ request: RangeRequest, resolver: URLResolver?, events: @escaping @Sendable (TransferID, TransferEvent) -> Void
    ) -> TransferID {
        let id = shared.withLock { state -> TransferID in
            let id = TransferID(raw: state.nextID)
            state.nextID += 1
            state.commands.append(.start(id, request, resolver, events))
            return id
        }
        multi.wakeUp()
        return id
    }

    func post(_ command: Command) {
        shared.withLock { $0.commands.append(command) }
        multi.wakeUp()
    }

    /// CPU seconds the fetcher thread has used; nil before it runs or after it ended.
    var threadCPUSeconds: Double? {
        shared.withLock { state -> Double? in
            guard !state.stopping, let clock = state.threadClock else { return nil }
            var time = timespec()
            guard clock_gettime(clock, &time) == 0 else { return nil }
            return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }
    }

    func shutdown() {
        let first = shared.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        multi.wakeUp()
        stopped.wait()
    }

    /// Runs the re-resolve hook on a global queue and posts its answer to the fetcher thread.
    private func resolve(_ id: TransferID, url: URL, resolver: URLResolver?) {
        DispatchQueue.global().async { [weak self] in
            let resolved = resolver.map { $0(url) } ?? url
            self?.post(.resolved(id, resolved))
        }
    }

    /// The fetcher thread's loop: apply commands, drive timers, priorities and libcurl,
    /// then sleep in curl_multi_poll until the next deadline or a wake-up.
    func run() {
        var clock = clockid_t()
        if pthread_getcpuclockid(pthread_self(), &clock) == 0 { shared.withLock { $0.threadClock = clock } }
        // Owned by the fetcher thread.
        var loop = FetcherLoop(
            environment: TransferEnvironment(
                multi: multi, share: ShareHandle(), configuration: configuration, log: log,
                resolve: { [weak self] id, url, resolver in self?.resolve(id, url: url, resolver: resolver) }))
        while true {
            let (commands, stopping) = shared.withLock { state in
                defer { state.commands.removeAll() }
                return (state.commands, state.stopping)
            }
            if stopping { break }
            for command in commands { loop.apply(command) }
            let timeout = loop.step()
            multi.poll(timeoutMilliseconds: timeout)
        }
        loop.cancelAll()
        multi.close()
        stopped.signal()
    }
}

/// The transfers of the fetcher thread and the steps of its loop.
struct FetcherLoop {
    let env: TransferEnvironment
    private var transfers: [TransferID: Transfer] = [:]

    init(environment: TransferEnvironment) {
        env = environment
    }

    mutating func apply(_ command: FetcherWorker.Command) {
        let now = monotonicSeconds()
        switch command {
        case .start(let id, let request, let resolver, let events):
            if let key = request.resource,
                let (oldID, old) = transfers.first(where: { $0.value.request.resource == key && !$0.value.isFinished })
            {
                transfers.removeValue(forKey: oldID)
                old.abort(.superseded)
                env.log.debug("transfer \(oldID) superseded by \(id)")
            }
            let transfer = Transfer(id: id, request: request, resolver: resolver, environment: env, events: events)
            transfers[id] = transfer
            transfer.begin(now: now)
        case .cancel(let id, let completion):
            if let transfer = transfers.removeValue(forKey: id) {
                transfer.cancel()
                env.log.debug("transfer \(id) cancelled")
            }
            completion?()
        case .setPriority(let id, let priority):
            transfers[id]?.setPriority(priority)
        case .hold(let id, let held):
            transfers[id]?.held = held
        case .resolved(let id, let url):
            transfers[id]?.resolved(url, now: now)
        }
    }

    /// Runs timers, libcurl and completions; returns how long the loop may sleep, in ms.
    mutating func step() -> Int32 {
        var now = monotonicSeconds()
        for transfer in transfers.values { transfer.tick(now: now) }
        applyPriorities(now: now)
        env.multi.perform()
        var restarted = false
        now = monotonicSeconds()
        while let (easy, code) = env.multi.nextCompleted() {
            guard let transfer = transfers.values.first(where: { $0.owns(easy) }) else { continue }
            transfer.complete(code: code, now: now)
            restarted = restarted || transfer.isReceiving
        }
        transfers = transfers.filter { !$0.value.isFinished }
        applyPriorities(now: now)
        if restarted { return 0 }  // new attempts need a perform to start connecting
        let deadline = transfers.values.compactMap(\.deadline).min()
        guard let deadline else { return 1000 }
        return Int32(min(1000, max(0, (deadline - now) * 1000 + 1)))
    }

    /// Pauses every receiving transfer below the highest receiving priority, and every held
    /// one; resumes the rest. A held transfer does not count as receiving for the others.
    private func applyPriorities(now: Double) {
        let top = transfers.values.filter { $0.isReceiving && !$0.held }.map(\.priority).max()
        for transfer in transfers.values where transfer.isReceiving {
            transfer.setPaused(transfer.held || top.map { transfer.priority < $0 } ?? false, now: now)
        }
    }

    mutating func cancelAll() {
        for transfer in transfers.values { transfer.cancel() }
        transfers.removeAll()
    }
}
