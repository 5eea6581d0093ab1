import EngineAPI
import Foundation
import SpoolLog

/// MPRIS's three playback states, which are also the player's.
public enum PlaybackStatus: String, Sendable, Equatable {
    /// Audio is playing.
    case playing = "Playing"
    /// A track is loaded and paused.
    case paused = "Paused"
    /// Nothing is playing; Play starts the current track from its beginning.
    case stopped = "Stopped"
}

/// One entry of the play queue.
public struct QueueEntry: Sendable, Equatable {
    /// Unique for the life of the daemon, never reused.
    public let id: TrackID
    /// What to play.
    public let url: URL
}

/// The track the player is on, with what is known of it so far.
public struct NowPlaying: Sendable, Equatable {
    /// The queue entry.
    public var entry: QueueEntry
    /// Tags read from the stream.
    public var tags: TrackTags
    /// Length, once the engine knows it.
    public var duration: Duration?
    /// Whether the track can seek (known length and an origin that honours ranges).
    public var seekable = false

    /// A title to show: the tag, else the file name.
    public var displayTitle: String {
        if let title = tags.title, !title.isEmpty { return title }
        let name = entry.url.lastPathComponent
        return name.isEmpty ? entry.url.absoluteString : name.removingPercentEncoding ?? name
    }
}

/// Everything a client may show about the player, as one value.
public struct PlayerSnapshot: Sendable, Equatable {
    /// Playing, paused or stopped.
    public var status: PlaybackStatus = .stopped
    /// The current track, if any.
    public var nowPlaying: NowPlaying?
    /// Output volume, 0.0–1.0.
    public var volume: Double = 1.0
    /// Playback rate (1.0 is normal speed).
    public var rate: Double = 1.0
    /// The slowest rate offered.
    public var minimumRate: Double = 1.0
    /// The fastest rate offered.
    public var maximumRate: Double = 1.0
    /// Whether the queue holds anything.
    public var hasTracks = false
    /// Whether Next has somewhere to go.
    public var canGoNext = false
    /// Whether Previous has somewhere to go.
    public var canGoPrevious = false

    /// Creates the idle snapshot.
    public init() {}
}

/// What observers of the player hear.
public enum PlayerUpdate: Sendable, Equatable {
    /// The snapshot changed.
    case changed(PlayerSnapshot)
    /// The position jumped (seek); playback continues from `position`.
    case seeked(Duration)
}

/// The one owner of player state: the queue, the current track, status and
/// volume. Commands come from the MPRIS layer and the CLI; engine events come
/// back in order through one stream. Observers are told of every change.
public actor Player {
    private let engine: PlaybackEngine
    private let log = Logger(label: "player")
    private var queue: [QueueEntry] = []
    private var currentIndex: Int?
    private var snapshot = PlayerSnapshot()
    private var observers: [@Sendable (PlayerUpdate) -> Void] = []
    private var nextID: UInt64 = 1
    private var engineLoaded = false
    /// Tags that arrived for the prepared next track before its audio started.
    private var pendingTags: [TrackID: TrackTags] = [:]
    /// Seekability reported for the prepared next track before its audio started.
    private var pendingSeekable: [TrackID: Bool] = [:]

    /// Creates a player driving `engine`, and starts listening to its events.
    public init(engine: PlaybackEngine) {
        self.engine = engine
        snapshot.minimumRate = engine.supportedRates.lowerBound
        snapshot.maximumRate = engine.supportedRates.upperBound
        let (events, sink) = AsyncStream.makeStream(of: EngineEvent.self)
        engine.setEventHandler { sink.yield($0) }
        Task { [weak self] in
            for await event in events {
                guard let self else { return }
                await self.handle(event)
            }
        }
    }

    /// Registers an observer; it receives the current snapshot at once, then every update.
    /// Called on the player's executor: it must return quickly.
    public func observe(_ observer: @escaping @Sendable (PlayerUpdate) -> Void) {
        observers.append(observer)
        observer(.changed(snapshot))
    }

    /// The current snapshot.
    public var state: PlayerSnapshot { snapshot }

    /// The position in the current track (zero when stopped). Cheap; any thread.
    public nonisolated func position() -> Duration {
        engine.position() ?? .zero
    }

    // MARK: Commands

    /// Replaces the queue with `url` and plays it.
    public func open(_ url: URL) {
        let entry = makeEntry(url)
        queue = [entry]
        currentIndex = 0
        start(entry, playing: true)
    }

    /// Appends tracks to the queue; the first of them follows the current track gaplessly.
    public func add(_ urls: [URL]) {
        guard !urls.isEmpty else { return }
        queue.append(contentsOf: urls.map(makeEntry))
        if currentIndex == nil { currentIndex = 0 }
        update { _ in }
        if engineLoaded { prepareNext() }
    }

    /// Starts or resumes playback; from the beginning of the current track when stopped.
    public func play() {
        guard let index = currentIndex ?? (queue.isEmpty ? nil : 0) else { return }
        switch snapshot.status {
        case .playing:
            return
        case .paused where engineLoaded:
            engine.play()
            update { $0.status = .playing }
        default:
            currentIndex = index
            start(queue[index], playing: true)
        }
    }

    /// Pauses playback; does nothing when stopped.
    public func pause() {
        guard snapshot.status == .playing else { return }
        engine.pause()
        update { $0.status = .paused }
    }

    /// Pauses when playing, plays otherwise.
    public func playPause() {
        if snapshot.status == .playing { pause() } else { play() }
    }

    /// Stops playback; the current track stays current and plays from 0 on Play.
    public func stop() {
        guard snapshot.status != .stopped else { return }
        engine.stop()
        engineLoaded = false
        update { $0.status = .stopped }
    }

    /// Moves to the next track, if any.
    public func next() {
        guard let index = currentIndex, index + 1 < queue.count else { return }
        currentIndex = index + 1
        start(queue[index + 1], playing: snapshot.status != .stopped)
    }

    /// Moves to the previous track, if any.
    public func previous() {
        guard let index = currentIndex, index > 0 else { return }
        currentIndex = index - 1
        start(queue[index - 1], playing: snapshot.status != .stopped)
    }

    /// Seeks to `position` within the current track.
    public func seek(to position: Duration) {
        guard engineLoaded, snapshot.nowPlaying?.seekable == true else { return }
        engine.seek(to: max(.zero, position))
    }

    /// Sets the rate, clamped to the engine's range; 0 pauses, as MPRIS asks.
    public func setRate(_ rate: Double) {
        guard !rate.isNaN else { return }
        if rate <= 0 {
            pause()
            return
        }
        let clamped = min(snapshot.maximumRate, max(snapshot.minimumRate, rate))
        engine.setRate(clamped)
        update { $0.rate = clamped }
    }

    /// Sets the volume, clamped to 0.0–1.0.
    public func setVolume(_ volume: Double) {
        let clamped = min(1, max(0, volume.isNaN ? 0 : volume))
        engine.setVolume(clamped)
        update { $0.volume = clamped }
    }

    /// Stops playback and the engine, for shutdown.
    public func shutdown() {
        engine.shutdown()
        engineLoaded = false
        update { $0.status = .stopped }
    }

    // MARK: Internals

    private func makeEntry(_ url: URL) -> QueueEntry {
        defer { nextID += 1 }
        return QueueEntry(id: TrackID(nextID), url: url)
    }

    private func start(_ entry: QueueEntry, playing: Bool) {
        engine.load(EngineTrack(id: entry.id, url: entry.url), at: .zero, playing: playing)
        engineLoaded = true
        pendingTags = [:]
        pendingSeekable = [:]
        update {
            $0.nowPlaying = NowPlaying(entry: entry, tags: TrackTags(), duration: nil)
            $0.status = playing ? .playing : .paused
        }
        prepareNext()
    }

    /// Tells the engine which track follows, for a gapless hand-over.
    private func prepareNext() {
        let following = currentIndex.flatMap { $0 + 1 < queue.count ? queue[$0 + 1] : nil }
        engine.setNext(following.map { EngineTrack(id: $0.id, url: $0.url) })
    }

    private func handle(_ event: EngineEvent) {
        let current = snapshot.nowPlaying?.entry.id
        switch event {
        case .trackStarted(let id) where id != current:
            // The engine handed over to the prepared next track without a gap.
            guard let index = currentIndex, index + 1 < queue.count, queue[index + 1].id == id else { return }
            currentIndex = index + 1
            let tags = pendingTags.removeValue(forKey: id) ?? TrackTags()
            let seekable = pendingSeekable.removeValue(forKey: id) ?? false
            update {
                $0.nowPlaying = NowPlaying(entry: self.queue[index + 1], tags: tags, duration: nil, seekable: seekable)
            }
            prepareNext()
        case .tags(let id, let tags) where id != current:
            if let index = currentIndex, index + 1 < queue.count, queue[index + 1].id == id {
                pendingTags[id] = (pendingTags[id] ?? TrackTags()).merging(tags)
            }
        case .tags(let id, let tags) where id == current:
            update { state in
                if let known = state.nowPlaying?.tags { state.nowPlaying?.tags = known.merging(tags) }
            }
        case .seekable(let id, let seekable) where id == current:
            update { $0.nowPlaying?.seekable = seekable }
        case .seekable(let id, let seekable):
            pendingSeekable[id] = seekable
        case .duration(let id, let duration) where id == current:
            update { $0.nowPlaying?.duration = duration }
        case .seeked(let id, let position) where id == current:
            notify(.seeked(position))
        case .endOfTrack(let id) where id == current:
            if let index = currentIndex, index + 1 < queue.count {
                currentIndex = index + 1
                start(queue[index + 1], playing: true)
            } else {
                engine.stop()
                engineLoaded = false
                update { $0.status = .stopped }
            }
        case .failed(let id, let error) where id == nil || id == current:
            log.error("playback failed: \(error)")
            engineLoaded = false
            update { $0.status = .stopped }
        default:
            break
        }
    }

    private func update(_ change: (inout PlayerSnapshot) -> Void) {
        var next = snapshot
        change(&next)
        next.hasTracks = !queue.isEmpty
        next.canGoNext = currentIndex.map { $0 + 1 < queue.count } ?? false
        next.canGoPrevious = currentIndex.map { $0 > 0 } ?? false
        guard next != snapshot else { return }
        snapshot = next
        notify(.changed(next))
    }

    private func notify(_ update: PlayerUpdate) {
        for observer in observers { observer(update) }
    }
}
