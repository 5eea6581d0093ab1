import Basics
import ByteSourceAPI
import CacheFilling
import DBusKit
import Dispatch
import EngineAPI
import Fetcher
import FoundationEssentials
import GStreamerEngine
import Glibc
import MPRIS
import MediaSource
import PlayerCore
import RangeCache
import SpoolConfig
import StateStore
import Synchronization

/// Settings of `spool daemon`: the effective configuration (defaults, file, environment, flags).
struct DaemonOptions {
    /// Every effective setting; ``Daemon`` hands each layer its own (main.swift applies
    /// `logLevel` before the daemon starts).
    var configuration: Configuration
    /// `--instance`: when another daemon owns the MPRIS name, take
    /// `org.mpris.MediaPlayer2.spool.instance<pid>` instead of exiting.
    var instance = false
    /// A gst-launch description of the audio sink; nil picks the desktop's sound server.
    var audioSink: String? { configuration.audioSink }
    /// What the sound server's requests to make way for a call do to playback.
    var interruptions: InterruptionMode {
        switch configuration.audioInterruptions {
        case .pause: .pause
        case .ignore: .ignore
        }
    }
}

/// Wires the layers together and runs until it is told to stop (SIGTERM, SIGINT, SIGHUP, MPRIS
/// Quit) or its session bus goes away. This is the only place where every module meets.
final class Daemon: Sendable {
    private let log = Logger(label: "daemon")
    private let connection: DBusConnection
    private let fetcher: Fetcher
    private let player: Player
    private let service: MPRISService
    private let status: CacheStatus
    private let stopping = Atomic<Bool>(false)
    /// The start-up, once launched: a stop waits for it, so that the two never run at once and
    /// only the stop ends the process.
    private let startup = Mutex<Task<Void, Never>?>(nil)
    /// The bus name this daemon owns.
    private let busName: Mutex<String>
    private let sleepWatcher = Mutex<SleepWatcher?>(nil)
    /// Gives freed heap pages back to the system while the daemon runs.
    private let heapTrimmer = HeapTrimmer()
    private let meteredWatcher = Mutex<MeteredWatcher?>(nil)
    /// The playing sources, switched when the network becomes metered or stops being so.
    private let playback = PlaybackSources()
    private let preloader: CachePreloader?
    /// The byte cache, or why it could not be opened (reported once the bus name is ours).
    private let cache: Result<RangeCache, CacheError>
    /// The settings the daemon was started with, for the layers that start after the bus name
    /// is taken (the network watcher).
    private let configuration: Configuration

    /// Connects to the bus and builds the layers; throws a message fit for the user.
    init(options: DaemonOptions) throws {
        configuration = options.configuration
        GStreamer.initialize()
        do {
            connection = try DBusConnection.session()
        } catch {
            throw DaemonError(
                "cannot connect to the D-Bus session bus (\(error)); is DBUS_SESSION_BUS_ADDRESS set?")
        }
        // Before the state store, the cache and the session are opened: a second daemon
        // must leave them to the one that owns the name.
        let owned: Bool
        do {
            owned = try connection.nameHasOwnerBlocking(MPRISService.busName)
        } catch {
            throw DaemonError("cannot ask the D-Bus session bus who owns \(MPRISService.busName): \(error)")
        }
        switch BusNameChoice.choose(owned: owned, instance: options.instance, pid: getpid()) {
        case .take(let name): busName = Mutex(name)
        case .refuse(let reason):
            connection.close()
            throw DaemonError(reason)
        }
        let fetcher = Fetcher(userAgent: "Spool/\(SpoolVersion.string)")
        self.fetcher = fetcher
        let settings = options.configuration
        var cacheSettings = RangeCache.Configuration()
        cacheSettings.budgetBytes = settings.cacheBudget.bytes
        cacheSettings.minimumFreeBytes = settings.cacheFreeSpaceFloor.size.bytes
        cacheSettings.minimumFreeFraction = settings.cacheFreeSpaceFloor.percent / 100
        cacheSettings.ignoredQueryParameters = settings.cacheIgnoredQueryParameters
        let cache = Result { () throws(CacheError) in
            try RangeCache(directory: Daemon.cacheDirectory(), configuration: cacheSettings)
        }
        self.cache = cache
        let namespace = settings.account
        let revalidator = Revalidator(interval: settings.revalidateInterval, wait: settings.revalidateWait)
        let playback = self.playback
        let readAhead = HTTPByteSource.ReadAheadPolicy(
            threshold: settings.readAheadLargeFileThreshold.bytes, window: settings.readAheadWindow.bytes,
            meteredWindow: settings.readAheadMeteredWindow)
        let sources = SourceChooser(
            cache: try? cache.get(), namespace: namespace, fetcher: fetcher, revalidator: revalidator,
            readAhead: readAhead, playback: playback, meteredQuality: settings.networkMeteredQuality.bitsPerSecond)
        let engine = try GStreamerEngine(
            audioSink: options.audioSink, artDirectory: Daemon.cacheDirectory().appendingPathComponent("art"),
            idleRelease: options.configuration.idleRelease
        ) { url throws(MediaSourceError) in try sources.source(for: url) }
        let memory: PlaybackMemory
        do {
            // Written behind the player: no MPRIS answer waits for a commit and its sync.
            memory = WriteBehindMemory(try SQLiteStateStore(directory: Daemon.stateDirectory()))
        } catch {
            Logger(label: "daemon").warning("positions and the session will not be remembered: \(error)")
            memory = TransientMemory()
        }
        var resume = ResumePolicy()
        resume.minimum = options.configuration.resumeMinimum
        resume.endMargin = options.configuration.resumeEndMargin
        resume.rewind = options.configuration.resumeRewind
        let keyForURL: @Sendable (URL) -> String = { url in
            CacheKey(url: url, ignoring: settings.cacheIgnoredQueryParameters).value
        }
        let remoteLyrics = RemoteLyrics(
            fetcher: fetcher, cache: try? cache.get(), namespace: namespace, missInterval: settings.revalidateInterval)
        let preloader: CachePreloader?
        if case .success(let cache) = cache {
            preloader = CachePreloader(
                cache: cache, fetcher: fetcher, namespace: namespace, playback: playback,
                revalidator: revalidator, concurrency: settings.preloadConcurrency,
                companions: { remoteLyrics.prefetch(for: $0) })
        } else {
            preloader = nil
        }
        self.preloader = preloader
        var preload = PreloadSettings()
        preload.count = settings.preloadCount
        preload.trigger = settings.preloadTrigger
        preload.budget = settings.preloadBudget.bytes
        preload.concurrency = settings.preloadConcurrency
        player = Player(
            engine: engine, memory: memory, policy: resume, preloader: preloader, preload: preload,
            keyForURL: keyForURL, interruptions: options.interruptions,
            tagReader: QueueTagReading(cache: try? cache.get(), namespace: namespace),
            lookups: TrackLookupSources(remoteLyrics: { await remoteLyrics.lyrics(for: $0) }))
        let quit = Mutex<(@Sendable () -> Void)?>(nil)
        // An `.m3u8` is read as its HLS presentation will read it again (a fresh copy costs no
        // request); other lists are small and fetched whole (a station's stream is refused).
        let resolver = TrackResolver { url in
            url.pathExtension.lowercased() == "m3u8"
                ? try await sources.playlist(url) : try await fetcher.fetchWhole(url)
        }
        status = CacheStatus(
            cache: try? cache.get(), namespace: namespace, playback: playback, preloader: preloader,
            prefetcher: (try? cache.get()).map { Prefetcher(cache: $0, fetcher: fetcher, namespace: namespace) },
            presentations: sources.presentations)
        let directories = BaseDirectories(environment: ProcessInfo.processInfo.environment)
        service = MPRISService(
            connection: connection, player: player, resolver: resolver,
            supportedMimeTypes: GStreamer.supportedMimeTypes(), status: status,
            notifications: options.configuration.notify,
            playlists: PlaylistLibrary(
                folder: directories.dataHome.appendingPathComponent("spool/playlists"),
                musicFolder: directories.music()?.appendingPathComponent("Playlists")),
            onQuit: { quit.withLock { $0 }?() })
        quit.withLock { $0 = { [weak self] in self?.stop(reason: "MPRIS Quit") } }
    }

    /// `$XDG_CACHE_HOME/spool` (default `~/.cache/spool`): everything here can be deleted.
    static func cacheDirectory() -> URL {
        BaseDirectories(environment: ProcessInfo.processInfo.environment).cacheHome.appendingPathComponent("spool")
    }

    /// `$XDG_STATE_HOME/spool` (default `~/.local/state/spool`): positions and the session.
    static func stateDirectory() -> URL {
        BaseDirectories(environment: ProcessInfo.processInfo.environment).stateHome.appendingPathComponent("spool")
    }

    /// Starts the daemon in the background: restores the session, exports MPRIS and claims the bus
    /// name. A failure to start ends the process with one line; a stop asked for meanwhile (a
    /// signal, the bus going away) waits for the start-up and then ends it cleanly instead.
    func launch() {
        startup.withLock { task in
            task = Task {
                do {
                    try await start()
                } catch {
                    // A start-up cut short by a stop (the bus went away under it) is no failure.
                    guard !stopping.load(ordering: .acquiring) else { return }
                    complain("\(error)")
                    exit(ExitStatus.runtimeFailure)
                }
            }
        }
        // A session bus that goes away is the session ending: nobody is left to control the daemon.
        connection.whenLost { [weak self] in self?.stop(reason: "the D-Bus session bus went away") }
    }

    /// Exports MPRIS, claims the bus name and returns; the process lives on in dispatchMain.
    private func start() async throws {
        await player.restoreSession()
        await service.start()
        let name = busName.withLock { $0 }
        // The name was free a moment ago; another daemon starting at the same time may win it.
        guard try connection.requestName(name) else {
            connection.close()
            throw DaemonError(BusNameChoice.refusal)
        }
        if case .failure(let error) = cache {
            // The name is ours but another daemon (on another bus) holds the cache. A second
            // instance on this bus expects that: it streams without the cache.
            if case .inUseByAnotherProcess = error, name == MPRISService.busName { throw DaemonError("\(error)") }
            log.warning("playing without the cache: \(error)")
        }
        log.notice("Spool \(SpoolVersion.string) ready as \(name)")
        let watcher = await SleepWatcher(player: player)
        sleepWatcher.withLock { $0 = watcher }
        let metered = await MeteredWatcher(forced: configuration.networkMetered.forced) { [player, playback] metered in
            playback.setMetered(metered)
            await player.setMetered(metered)
        }
        meteredWatcher.withLock { $0 = metered }
    }

    /// Saves the session and the cache index, stops playback, releases the bus name and exits 0.
    /// Runs once, whichever way to stop comes first; the others are only logged.
    func stop(reason: String) {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else {
            log.info("already stopping; also \(reason)")
            return
        }
        log.notice("stopping: \(reason)")
        Self.leaveIfStuck(after: Self.shutdownLimit)
        let startup = startup.withLock { $0 }
        Task {
            await startup?.value
            await player.shutdown()
            status.shutdown()
            if connection.isConnected { try? connection.releaseName(busName.withLock { $0 }) }
            connection.close()
            preloader?.stop()
            fetcher.shutdown()
            if case .success(let cache) = cache { cache.close() }
            log.debug("stopped")
            exit(0)
        }
    }

    /// How long a stop may take before the process leaves without finishing it: well under the
    /// 90 s that systemd gives a user service, far over the few milliseconds a stop takes.
    static let shutdownLimit: Duration = .seconds(20)

    /// Ends the process with status 2 (a failure at run time) if it is still here after `limit`: a stop that hangs
    /// (an audio device that never closes) must not keep a logout waiting.
    private static func leaveIfStuck(after limit: Duration) {
        let log = Logger(label: "daemon")
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(limit.components.seconds * 1000))) {
            log.error("the stop did not finish within \(limit.components.seconds) s; leaving without it")
            _exit(ExitStatus.runtimeFailure)
        }
    }
}

/// A failure to start, shown to the user as one line.
struct DaemonError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
