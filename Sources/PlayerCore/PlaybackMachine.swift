import Basics
import ByteSourceAPI
import EngineAPI
import FoundationEssentials

/// The player's decisions as one pure, synchronous value: given an input (a command, an engine
/// event, a timer, a report of the preloader or the tag reader) and what it reads of the world at
/// that moment, it changes its state and returns the effects to carry out: engine commands,
/// saves, updates for observers, timers. ``Player`` holds one and executes what it returns; it
/// decides nothing itself. Tables and a model test check the rules without an engine or a clock.
///
/// Its parts: the queue and the snapshot observers see; which entries the engine holds (loaded,
/// prepared, committed at about-to-finish); where a track not loaded starts on Play (a restored
/// session, a seek while stopped, a failure's place); the failure and interruption policies; and
/// the tag read-ahead of queued entries.
public struct PlaybackMachine: Sendable {
    /// Previous restarts the current track instead of going back when played longer than this.
    public static let previousRestartThreshold: Duration = .seconds(3)

    /// How the machine is set up.
    public struct Settings: Sendable {
        /// The resume rules.
        public var resume = ResumePolicy()
        /// How long a retry waits.
        public var retryDelay: Duration = .milliseconds(500)
        /// A preloader decides when the engine gets the following track (else it gets it at once).
        public var preloads = false
        /// A tag reader reads the tags of queued local and cached entries.
        public var readsTags = false
        /// Folder art, MP3 lengths and lyrics are looked up (see ``TrackLookups``).
        public var looksUp = false
        /// What the sound server's requests do.
        public var interruptions: InterruptionMode = .pause
        /// The engine's rates.
        public var rates: ClosedRange<Double> = 1...1
        /// The stable key a URL's position is saved under.
        public var key: @Sendable (URL) -> String = { $0.absoluteString }
        /// Where shuffled orders come from (nil: the system's randomness; tests replay a seed).
        public var shuffleSeed: UInt64?

        /// The defaults.
        public init() {}
    }

    let settings: Settings
    /// The queue.
    public internal(set) var queue = PlayQueue()
    /// What observers were last told.
    public internal(set) var snapshot = PlayerSnapshot()
    /// The entry the engine has loaded (nil: the engine is idle).
    public internal(set) var loadedID: TrackID?
    /// The loaded entry once its audio has started: until then the start path is the loaded
    /// track's alone (tag reads of other entries wait for it).
    var startedID: TrackID?
    /// Where the loaded entry's play began (its resume position, or a chosen start): a restart
    /// on a new version of the track begins there again.
    var loadStart: Duration = .zero
    /// The entry prepared in the engine for the gapless hand-over.
    public internal(set) var preparedID: TrackID?
    /// The entry the engine committed to play after the current one (it said so at the end of
    /// the current one's data, ``EngineEvent/nextQueued(_:)``): it starts at the boundary whatever
    /// was asked since. When the queue no longer agrees, the right entry is loaded at the boundary.
    var committedID: TrackID?
    /// The current entry was queued again behind itself (loop Track).
    var loopRestartQueued = false
    /// Where the current track starts on the next Play when it is not loaded (a restored
    /// session, a seek while stopped, a failure's place).
    var restoredStart: Duration? {
        didSet { shownPosition = restoredStart }
    }
    /// Whether `restoredStart` is a restored session's place, which Play rewinds as a track's own
    /// resume does (the place itself stays as saved, so restarts without playing never drift);
    /// a place set by a seek or a failure is played exactly.
    var rewindOnPlay = false
    /// The position to show instead of the engine's: a restored track not yet loaded, or a
    /// track loading at a resume position until its seek lands. The one correction of the
    /// shown position the player makes.
    public internal(set) var shownPosition: Duration?
    /// Tags and seekability reported for the prepared next track before its audio started.
    var pendingTags: [TrackID: TrackTags] = [:]
    var pendingSeekable: [TrackID: Bool] = [:]
    /// The station of a prepared next track that is a live stream, for when it plays.
    var pendingLive: [TrackID: LiveStation] = [:]
    /// The variant a prepared track reported, applied when it starts.
    var pendingVariant: [TrackID: StreamVariant] = [:]
    /// The track the engine last said can or cannot seek; before that, a seek goes to the engine.
    var seekableReported: TrackID?
    /// What a failed track leads to.
    var failures: FailurePolicy
    /// Whether the sound server's pause paused playback, and whether its end resumes it.
    var interruptions: InterruptionPolicy
    /// The periodic save runs.
    var saving = false
    /// A failed track waits for the network.
    var waitingForNetwork = false
    /// The tag read running (one at a time), and the entries read or tried already.
    var tagReading: TrackID?
    var tagsTried: Set<TrackID> = []
    /// What is looked up about the current track beside its stream.
    var lookups = TrackLookups()

    /// What the step being applied asks for, and the world it reads.
    var step = PlaybackStep()
    private var worldOfStep: PlaybackWorld?
    var world: PlaybackWorld { worldOfStep ?? PlaybackWorld() }

    /// A machine with an empty queue.
    public init(settings: Settings = Settings()) {
        self.settings = settings
        queue = PlayQueue(shuffleSeed: settings.shuffleSeed)
        failures = FailurePolicy(retryDelay: settings.retryDelay)
        interruptions = InterruptionPolicy(mode: settings.interruptions)
        snapshot.minimumRate = settings.rates.lowerBound
        snapshot.maximumRate = settings.rates.upperBound
    }

    /// Applies `input`, reading `world` as it decides; returns what to carry out.
    public mutating func apply(_ input: PlaybackInput, in world: PlaybackWorld = PlaybackWorld()) -> PlaybackStep {
        step = PlaybackStep()
        worldOfStep = world
        defer { worldOfStep = nil }
        switch input {
        case .restore(let saved): restore(saved)
        case .open(let items): open(items)
        case .add(let items, let after, let atStart, let play):
            step.added = add(items, after: after, atStart: atStart)
            if play, let first = step.added.first { jump(to: first) }
        case .remove(let id): remove(id)
        case .move(let id, let position): move(id, to: position)
        case .clear: clear()
        case .jump(let id): jump(to: id)
        case .setLoop(let mode): setLoop(mode)
        case .setShuffle(let on): setShuffle(on)
        case .play: play()
        case .pause: pause()
        case .playPause: if snapshot.status == .playing { pause() } else { play() }
        case .stop: stop()
        case .next: next()
        case .previous: previous()
        case .seek(let position): step.refusal = seek(to: position)
        case .seekBy(let offset): step.refusal = seek(by: offset)
        case .setPosition(let id, let position): step.refusal = setPosition(of: id, to: position)
        case .setRate(let rate): setRate(rate)
        case .setVolume(let volume): setVolume(volume)
        case .setMetered(let metered): setMetered(metered)
        case .shutdown: shutdown()
        case .saveNow:
            rememberCurrent()
            emit(.flushMemory)
        case .engine(let event): handle(event)
        case .saveDue:
            // A live stream has no place to keep: listening for hours writes nothing.
            if let id = loadedID, isLive(id) { break }
            rememberCurrent()
        case .retryDue(let id): retry(id)
        case .preloadPlanned(let handOver, let following): preloadPlanned(handOverNext: handOver, following: following)
        case .tagsRead(let found, let id): tagsRead(found, of: id)
        case .foldersRead(let found): foldersRead(found)
        case .lengthEstimated(let length, let id): lengthEstimated(length, of: id)
        case .lyricsRead(let lyrics, let id, let tagText, let fromSidecar):
            lyricsRead(lyrics, of: id, tagText: tagText, fromSidecar: fromSidecar)
        }
        return step
    }

    /// The position in the current track as the player shows it (``ShownPosition``, with no
    /// metadata beside it): the machine's place, else the engine's heard one while a track is
    /// loaded, else zero.
    public func position(in world: PlaybackWorld) -> Duration {
        let heard = loadedID == nil ? nil : world.heardPosition().map { HeardPosition(track: nil, position: $0) }
        return ShownPosition.position(place: shownPosition, heard: heard, beside: nil)
    }

    var position: Duration { position(in: world) }

    // MARK: Effects

    mutating func emit(_ effect: PlaybackEffect) { step.effects.append(effect) }

    mutating func command(_ command: EngineCommand) { emit(.engine(command)) }

    mutating func log(_ level: LogLevel, _ message: String) { emit(.log(level, message)) }

    /// Changes the snapshot; observers hear of it when it differs. Every published snapshot
    /// carries the queue as it is and the current track complete with what the lookups know, and
    /// what is known of the playing track is copied into its entry, so it still shows once
    /// another track plays.
    mutating func update(_ change: (inout PlayerSnapshot) -> Void) {
        var next = snapshot
        change(&next)
        next = completed(next)
        rememberShownTags(next.nowPlaying)
        next.queue = queue.entries
        next.loop = queue.loop
        next.shuffle = queue.shuffle
        next.canGoNext = queue.canGoNext
        next.canGoPrevious = queue.canGoPrevious
        guard next != snapshot else { return }
        snapshot = next
        emit(.publish(.changed(next)))
        readAheadTags()
    }

    mutating func notify(_ update: PlayerUpdate) { emit(.publish(update)) }

    mutating func startSaving() {
        guard !saving else { return }
        saving = true
        emit(.periodicSaves(true))
    }

    mutating func stopSaving() {
        guard saving else { return }
        saving = false
        emit(.periodicSaves(false))
    }

    mutating func stopWaitingForNetwork() {
        guard waitingForNetwork else { return }
        waitingForNetwork = false
        emit(.stopWaitingForNetwork)
    }

    // MARK: Memory

    mutating func forgetPosition(of id: TrackID) {
        guard let entry = queue.entry(id) else { return }
        emit(.forgetPosition(key: settings.key(entry.url)))
    }

    /// Saves the loaded track's position and the session.
    mutating func rememberCurrent() {
        // A live stream has no place to come back to: it always continues live.
        if let id = loadedID, let entry = queue.entry(id), !isLive(id) {
            emit(
                .savePosition(
                    SavedPosition(
                        key: settings.key(entry.url), position: position, duration: snapshot.nowPlaying?.duration,
                        rate: snapshot.rate, finished: false)))
        }
        saveSession()
    }

    /// Whether the entry `id` is the loaded live stream (internet radio).
    func isLive(_ id: TrackID) -> Bool {
        snapshot.nowPlaying?.entry.id == id && snapshot.nowPlaying?.live != nil
    }

    mutating func saveSession(at known: Duration? = nil) {
        let position = queue.currentID.map(isLive) == true ? .zero : known ?? position
        let shown = snapshot.nowPlaying.flatMap { $0.entry.id == queue.currentID ? $0 : nil }
        emit(
            .saveSession(
                SavedSession(
                    entries: queue.entries.map {
                        .init(
                            url: $0.url, title: $0.title, tags: $0.tags, duration: $0.duration,
                            mirrors: $0.mirrors.isEmpty ? nil : $0.mirrors)
                    },
                    currentIndex: queue.currentIndex,
                    position: position, loop: queue.loop, shuffle: queue.shuffle, rate: snapshot.rate,
                    volume: snapshot.volume, currentTags: shown.map(\.tags).flatMap { $0.isEmpty ? nil : $0 },
                    currentDuration: shown?.duration)))
    }

    // MARK: Loading

    /// Loads the current entry into the engine at `explicit`, else at its resume position.
    mutating func startCurrent(playing: Bool, at explicit: Duration? = nil) {
        guard let entry = queue.current else { return }
        let saved = world.savedPosition(settings.key(entry.url))
        let start = explicit ?? saved.flatMap(settings.resume.startPosition(for:)) ?? .zero
        loadStart = start
        restoredStart = nil
        stopWaitingForNetwork()
        shownPosition = start > .zero ? start : nil
        loopRestartQueued = false
        pendingTags = [:]
        pendingSeekable = [:]
        pendingLive = [:]
        pendingVariant = [:]
        command(.load(EngineTrack(id: entry.id, url: entry.url), at: start, playing: playing))
        loadedID = entry.id
        startedID = nil
        preparedID = nil  // a load drops what the engine had prepared
        committedID = nil
        // Restarting the same entry (Stop then Play, a retry) keeps what is known of it, so clients see no flicker.
        let known = snapshot.nowPlaying?.entry.id == entry.id ? snapshot.nowPlaying : nil
        // Until the engine says whether the track can seek, a seek goes to the engine, which
        // starts the track there: it can, as far as anyone can tell. Showing it so from the load
        // spares clients a CanSeek that flips off and on at every track change.
        let fresh = NowPlaying(entry: entry, tags: entry.tags ?? TrackTags(), duration: entry.duration, seekable: true)
        update {
            $0.nowPlaying = known ?? fresh
            $0.status = playing ? .playing : .paused
            $0.buffering = false
        }
        if playing { startSaving() } else { stopSaving() }
        prepareNext()
        // The start, not the position: until the engine has loaded the new track it may still report the old one's.
        saveSession(at: start)
    }

    mutating func unload(status: PlaybackStatus) {
        stopSaving()
        stopWaitingForNetwork()
        restoredStart = nil
        shownPosition = nil
        if snapshot.buffering { update { $0.buffering = false } }
        if loadedID != nil { command(.stop) }
        loadedID = nil
        preparedID = nil
        committedID = nil
        loopRestartQueued = false
        emit(.stopPreload)
        update { $0.status = status }
        saveSession()
    }

    /// Prepares what follows: without a preloader the engine gets the following entry at once
    /// (for the gapless hand-over; the current one again under loop Track); with one, the
    /// preload plan decides when.
    mutating func prepareNext() {
        guard loadedID != nil else { return }
        guard settings.preloads else {
            setNext(queue.upcoming(automatic: true))
            return
        }
        emit(.planPreload)
    }

    /// The preload plan came: the following track goes to the engine when it says so, and a
    /// prepared one the queue no longer follows with leaves it at once.
    mutating func preloadPlanned(handOverNext: Bool, following: TrackID?) {
        guard loadedID != nil else { return }
        if handOverNext {
            setNext(following)
        } else if let prepared = preparedID, prepared != following {
            setNext(nil)
        }
        readAheadTags()  // a preload that completed a download makes its track's tags readable
    }

    /// Gives the engine `following` to play after the current track, unless it has it already.
    mutating func setNext(_ following: TrackID?) {
        guard following != preparedID else { return }
        preparedID = following
        command(.setNext(following.flatMap(queue.entry).map { EngineTrack(id: $0.id, url: $0.url) }))
    }

    mutating func queueChanged() {
        update { _ in }
        prepareNext()
        saveSession()
    }
}
