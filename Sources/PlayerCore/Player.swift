import Basics
import EngineAPI
import FoundationEssentials
import Synchronization

// One file though past 500 lines: the actor's state is private to the commands, engine events
// and timers below, which all change it; split across files, each of its twenty-odd stored
// properties would have to be open to every type of the module. Tags read ahead and
// interruptions, which need little of it, are extensions in files of their own.

/// The one owner of player state: the queue, the current track, status, rate,
/// volume, loop and shuffle, and what is remembered of them. Commands come from
/// the MPRIS layer and the CLI; engine events come back in order through one
/// stream. Observers are told of every change.
public actor Player {
    /// Previous restarts the current track instead of going back when played longer than this.
    public static let previousRestartThreshold: Duration = .seconds(3)

    let engine: PlaybackEngine
    private let memory: PlaybackMemory
    private let policy: ResumePolicy
    private let keyForURL: @Sendable (URL) -> String
    private let networkUp: @Sendable (URL) -> Bool
    /// How often a track waiting for the network checks whether it is back.
    private let networkCheckInterval: Duration
    /// What the timers (periodic saves, retries, the network check, preload ticks) wait on;
    /// tests pass a clock they advance themselves.
    private let clock: any Clock<Duration>
    private let preloader: Preloader?
    private let preloadPolicy: PreloadPolicy
    let log = Logger(label: "player")
    var queue = PlayQueue()
    private var snapshot = PlayerSnapshot()
    private var observers: [@Sendable (PlayerUpdate) -> Void] = []
    /// The entry the engine has loaded (nil: the engine is idle).
    var loadedID: TrackID?
    /// The loaded entry once its audio has started: until then the start path is the loaded
    /// track's alone (tag reads of other entries wait for it).
    var startedID: TrackID?
    /// Where the loaded entry's play began (its resume position, or a chosen start): a restart
    /// on a new version of the track begins there again.
    private var loadStart: Duration = .zero
    /// The entry prepared in the engine for the gapless hand-over.
    private var preparedID: TrackID?
    /// The entry the engine committed to play after the current one (it said so at the end of
    /// the current one's data, ``EngineEvent/nextQueued(_:)``): it starts at the boundary whatever
    /// was asked since. When the queue no longer agrees, the right entry is loaded at the boundary.
    private var committedID: TrackID?
    /// The current entry was queued again behind itself (loop Track).
    private var loopRestartQueued = false
    /// Where the restored session's track starts on the first Play.
    private var restoredStart: Duration? {
        didSet { positionOverride.withLock { $0 = restoredStart } }
    }
    /// Whether `restoredStart` is a restored session's place, which Play rewinds as a track's own
    /// resume does (the place itself stays as saved, so restarts without playing never drift);
    /// a place set by a seek or a failure is played exactly.
    private var rewindOnPlay = false
    /// The position to report instead of the engine's: a restored track not yet
    /// loaded, or a track loading at a resume position until its seek lands.
    /// Readable from any thread because MPRIS answers Position without waiting.
    private let positionOverride = Mutex<Duration?>(nil)
    /// Tags and seekability reported for the prepared next track before its audio started.
    private var pendingTags: [TrackID: TrackTags] = [:]
    private var pendingSeekable: [TrackID: Bool] = [:]
    /// The track the engine last said can or cannot seek; before that, a seek goes to the engine.
    private var seekableReported: TrackID?
    /// What a failed track leads to (retry, skip, wait for the network, stop).
    private var failures: FailurePolicy
    /// Waits for the network to come back, to load the current track again.
    private var networkWait: Task<Void, Never>?
    private var saver: Task<Void, Never>?
    /// Looks at the clock and the downloads while a track is loaded, for the preload trigger.
    private var preloadTicker: Task<Void, Never>?
    /// The last plan handed to the preloader.
    private var lastPlan = PreloadPlan()
    /// Durations of upcoming entries remembered from earlier plays, looked up once per entry
    /// (the preload check runs twice a second).
    private var savedDurations: [TrackID: Duration?] = [:]
    /// Whether the sound server's pause paused playback, and whether its end resumes it.
    var interruptions: InterruptionPolicy
    /// The tag read-ahead of queued tracks (``QueueTagPolicy``).
    var tagReads: QueueTagReads

    /// Creates a player driving `engine`, remembering positions and the session in
    /// `memory`; `keyForURL` gives the stable key positions are saved under;
    /// a failed track is handled as ``FailurePolicy`` says, a retry coming after `retryDelay`;
    /// `networkUp` tells whether a URL's host could be reached at all (``NetworkState``); a trailing
    /// closure is `keyForURL`.
    /// With a `preloader`, upcoming tracks are prepared as `preload` says (``PreloadPolicy``);
    /// without one, the engine is given the following track as soon as it is known.
    /// The sound server's requests to make way for another stream are followed as
    /// `interruptions` says (``InterruptionPolicy``). With a `tagReader`, the tags of queued
    /// local and completely cached tracks are read ahead for the queue to show. Its timers wait
    /// on `clock`.
    public init(
        engine: PlaybackEngine, memory: PlaybackMemory = TransientMemory(), policy: ResumePolicy = ResumePolicy(),
        retryDelay: Duration = .milliseconds(500), preloader: Preloader? = nil,
        preload: PreloadSettings = PreloadSettings(),
        keyForURL: @escaping @Sendable (URL) -> String = { $0.absoluteString },
        networkUp: @escaping @Sendable (URL) -> Bool = { NetworkState.isUp(forHost: $0.host) },
        networkCheckInterval: Duration = .seconds(1), interruptions: InterruptionMode = .pause,
        tagReader: (any QueueTagReader)? = nil, clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.clock = clock
        self.interruptions = InterruptionPolicy(mode: interruptions)
        self.tagReads = QueueTagReads(reader: tagReader)
        self.networkCheckInterval = networkCheckInterval
        self.engine = engine
        self.failures = FailurePolicy(retryDelay: retryDelay)
        self.networkUp = networkUp
        self.preloader = preloader
        self.preloadPolicy = PreloadPolicy(settings: preload)
        self.memory = memory
        self.policy = policy
        self.keyForURL = keyForURL
        snapshot.minimumRate = engine.supportedRates.lowerBound
        snapshot.maximumRate = engine.supportedRates.upperBound
        let (events, sink) = AsyncStream.makeStream(of: EngineEvent.self)
        engine.setEventHandler { event in
            // Tags come from files, which hold anything (control characters, megabyte strings,
            // thousands of artists, track 4294967295): they are made fit to show where they enter.
            if case .described(let id, let tags, let duration) = event {
                sink.yield(.described(id, tags.sanitized(), duration: duration))
            } else {
                sink.yield(event)
            }
        }
        Task { [weak self] in
            for await event in events {
                guard let self else { return }
                await self.handle(event)
            }
        }
        preloader?.setChangeHandler { [weak self] in
            Task { await self?.refreshPreload() }
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

    /// The position in the current track: the restored one before the first Play,
    /// else the engine's (zero when nothing is loaded). Cheap; any thread.
    public nonisolated func position() -> Duration {
        heardPosition().position
    }

    /// ``position()`` with the track it is heard in (nil when not known): a reader that shows
    /// it beside a track's metadata checks they agree, as the engine moves to a handed-over
    /// track one event before the player does. Cheap; any thread.
    public nonisolated func heardPosition() -> HeardPosition {
        if let restored = positionOverride.withLock({ $0 }) { return HeardPosition(track: nil, position: restored) }
        return engine.heardPosition() ?? HeardPosition(track: nil, position: .zero)
    }

    // MARK: Session

    /// Restores the saved session, paused and not yet loaded: Play continues it.
    public func restoreSession() {
        guard let saved = memory.session(), saved.version == 1, !saved.entries.isEmpty else { return }
        queue = .restored(
            saved.entries.map { ($0.url, $0.title) }, current: saved.currentIndex, loop: saved.loop,
            shuffle: saved.shuffle)
        // What the queue showed comes back with it: no entry is read for its tags again.
        for (entry, savedEntry) in zip(queue.entries, saved.entries)
        where savedEntry.tags != nil || savedEntry.duration != nil {
            queue.setTags(savedEntry.tags?.sanitized(), duration: savedEntry.duration, of: entry.id)
        }
        // The session file is the other way tags enter: one saved by an older Spool (or edited) holds them raw.
        var tags = saved.currentTags?.sanitized() ?? TrackTags()
        // Art evicted since.
        if let art = tags.artURL, art.isFileURL, !FileManager.default.fileExists(atPath: art.path) { tags.artURL = nil }
        let duration =
            saved.currentDuration ?? queue.current.flatMap { memory.position(forKey: keyForURL($0.url))?.duration }
        restoredStart = saved.position > .zero ? saved.position : nil
        rewindOnPlay = true
        let rate = min(snapshot.maximumRate, max(snapshot.minimumRate, saved.rate))
        engine.setRate(rate)
        engine.setVolume(saved.volume)
        update {
            $0.rate = rate
            $0.volume = saved.volume
            $0.status = self.queue.current == nil ? .stopped : .paused
            $0.nowPlaying = self.queue.current.map { NowPlaying(entry: $0, tags: tags, duration: duration) }
        }
        log.info("restored a session of \(saved.entries.count) tracks at \(saved.position.forPeople)")
    }

    // MARK: Queue commands

    /// Replaces the queue with `items` and plays the first.
    public func open(_ items: [(url: URL, title: String?)]) {
        guard !items.isEmpty else { return }
        listenerActed()
        rememberCurrent()
        failures.reset()
        queue.clear()
        queue.add(items)
        restoredStart = nil
        startCurrent(playing: true)
    }

    /// Replaces the queue with `url` and plays it.
    public func open(_ url: URL) { open([(url, nil)]) }

    /// Adds tracks after entry `after` (default: at the end; `atStart`: before everything).
    /// Nothing starts playing.
    @discardableResult
    public func add(_ items: [(url: URL, title: String?)], after: TrackID? = nil, atStart: Bool = false) -> [TrackID] {
        let wasEmpty = queue.current == nil
        let ids = queue.add(items, after: after, atStart: atStart)
        if wasEmpty, let current = queue.current {
            update {
                $0.nowPlaying = NowPlaying(entry: current, tags: TrackTags(), duration: nil)
            }
        }
        queueChanged()
        return ids
    }

    /// Appends URLs to the queue.
    public func add(_ urls: [URL]) { add(urls.map { ($0, nil) }) }

    /// Removes an entry; removing the current one moves on to the next (keeping play/pause).
    public func remove(_ id: TrackID) {
        let wasCurrent = id == queue.currentID
        queue.remove(id)
        if wasCurrent {
            listenerActed()
            if queue.current != nil, snapshot.status != .stopped {
                startCurrent(playing: snapshot.status == .playing)
            } else {
                unload(status: .stopped)
                update {
                    $0.nowPlaying = self.queue.current.map { NowPlaying(entry: $0, tags: TrackTags(), duration: nil) }
                }
            }
        }
        queueChanged()
    }

    /// Moves an entry to list position `position`.
    public func move(_ id: TrackID, to position: Int) {
        queue.move(id, to: position)
        queueChanged()
    }

    /// Empties the queue and stops.
    public func clear() {
        listenerActed()
        rememberCurrent()
        queue.clear()
        unload(status: .stopped)
        update { $0.nowPlaying = nil }
        queueChanged()
    }

    /// Makes `id` current and plays it.
    public func jump(to id: TrackID) {
        guard queue.entry(id) != nil else { return }
        listenerActed()
        rememberCurrent()
        queue.jump(to: id)
        startCurrent(playing: true)
    }

    /// Sets the loop mode.
    public func setLoop(_ mode: LoopMode) {
        queue.loop = mode
        update { $0.loop = mode }
        queueChanged()
    }

    /// Turns shuffle on or off.
    public func setShuffle(_ on: Bool) {
        queue.setShuffle(on)
        update { $0.shuffle = on }
        queueChanged()
    }

    // MARK: Transport commands

    /// Starts or resumes playback; from the beginning of the current track when stopped.
    public func play() {
        listenerActed()
        startPlayback()
    }

    /// play() on anyone's behalf: the listener's, or the end of an interruption.
    func startPlayback() {
        guard let current = queue.current ?? queue.entries.first else { return }
        if queue.current == nil { queue.jump(to: current.id) }
        switch snapshot.status {
        case .playing:
            return
        case .paused where loadedID != nil:
            engine.play()
            update { $0.status = .playing }
            startSaving()
        case .paused:
            // A restored session, or a failed track.
            let rewind = rewindOnPlay ? policy.rewind : .zero
            startCurrent(playing: true, at: restoredStart.map { max(.zero, $0 - rewind) })
        case .stopped:
            startCurrent(playing: true, at: restoredStart ?? .zero)  // where a seek while stopped set it
        }
    }

    /// Pauses playback; does nothing when stopped.
    public func pause() {
        listenerActed()
        pausePlayback()
    }

    /// pause() on anyone's behalf: the listener's, or the sound server's.
    func pausePlayback() {
        guard snapshot.status == .playing else { return }
        engine.pause()
        networkWait?.cancel()  // a listener who paused is not overruled when the network returns
        networkWait = nil
        update {
            $0.status = .paused
            if self.loadedID == nil { $0.buffering = false }
        }
        stopSaving()
        rememberCurrent()
    }

    /// Pauses when playing, plays otherwise.
    public func playPause() {
        if snapshot.status == .playing { pause() } else { play() }
    }

    /// Stops playback; the current track stays current and plays from 0 on Play.
    public func stop() {
        listenerActed()
        guard snapshot.status != .stopped else { return }
        rememberCurrent()
        unload(status: .stopped)
    }

    /// Moves to the next track in play order; at the end of the queue (no loop) it does nothing,
    /// as MPRIS asks when `CanGoNext` is false. Paused or stopped playback stays that way.
    public func next() {
        guard queue.canGoNext else { return }
        listenerActed()
        rememberCurrent()
        guard queue.advance(automatic: false) != nil else { return }
        changedTrack()
    }

    /// Restarts the current track when past the first 3 s, else moves to the previous one.
    public func previous() {
        listenerActed()
        if loadedID != nil, (engine.position() ?? .zero) > Self.previousRestartThreshold,
            snapshot.nowPlaying?.seekable == true
        {
            engine.seek(to: .zero)
            return
        }
        rememberCurrent()
        guard queue.retreat() != nil else {
            if loadedID != nil { engine.seek(to: .zero) }
            return
        }
        changedTrack()
    }

    /// After Next or Previous: playing goes on playing the new current entry, paused
    /// loads it paused, stopped only shows it (Play starts it).
    private func changedTrack() {
        switch snapshot.status {
        case .playing, .paused:
            startCurrent(playing: snapshot.status == .playing)
        case .stopped:
            update {
                $0.nowPlaying = self.queue.current.map { NowPlaying(entry: $0, tags: TrackTags(), duration: nil) }
            }
            saveSession()
        }
    }

    /// Seeks to `position` within the current track (clamped at 0); a burst of seeks
    /// is coalesced by the engine, so only the last target is applied. A track that is current
    /// but not loaded (stopped, restored, failed) starts there on the next Play. Returns why the
    /// seek cannot be honoured (no current track, a stream that cannot seek), nil when applied.
    @discardableResult
    public func seek(to position: Duration) -> String? {
        if loadedID == nil, queue.current != nil {
            restoredStart = max(.zero, position)
            rewindOnPlay = false
            return nil
        }
        guard let loaded = loadedID else { return "nothing is playing" }
        // Before the engine has said whether the track can seek (it is still opening), the seek
        // goes to the engine, which starts the track there.
        guard snapshot.nowPlaying?.seekable == true || seekableReported != loaded else {
            return "this track cannot seek: its server sends it only from the start and it is not cached"
        }
        engine.seek(to: max(.zero, position))
        return nil
    }

    /// Moves the position by `offset` from where the track is heard (MPRIS `Seek`), deciding
    /// on the state of this moment. Past the track's known end it acts like Next, and with no
    /// next track (the queue's end, no loop) like Stop, as MPRIS asks. Nil, or why it cannot seek.
    public func seek(by offset: Duration) -> String? {
        guard let current = snapshot.nowPlaying else { return nil }
        // Any Int64 offset arrives here: the target stays within what MPRIS can report.
        let target = min(position() + offset, .microseconds(Int64.max))
        if let length = current.duration, target > length {
            if queue.canGoNext { next() } else { stop() }
            return nil
        }
        return seek(to: max(.zero, target))
    }

    /// Moves to `position` in the track `id` (MPRIS `SetPosition`), deciding on the state of this
    /// moment: another track's id (a stale one), a negative position or one past the end is
    /// ignored, as MPRIS asks. Nil, or why it cannot seek.
    public func setPosition(of id: TrackID, to position: Duration) -> String? {
        guard let current = snapshot.nowPlaying, current.entry.id == id, position >= .zero else { return nil }
        if let length = current.duration, position > length { return nil }
        return seek(to: position)
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
        saveSession()
    }

    /// Sets the volume, clamped to 0.0–1.0.
    public func setVolume(_ volume: Double) {
        let clamped = min(1, max(0, volume.isNaN ? 0 : volume))
        engine.setVolume(clamped)
        update { $0.volume = clamped }
        saveSession()  // a volume set while paused is otherwise lost to a crash
    }

    /// Saves everything and stops the engine, for shutdown (quit, SIGTERM, system sleep).
    public func shutdown() {
        rememberCurrent()
        stopSaving()
        stopPreload()
        engine.shutdown()
        loadedID = nil
        memory.flush()  // stored before the process ends
    }

    /// Saves the position and the session now, and waits until they are stored (system sleep).
    public func saveNow() {
        rememberCurrent()
        memory.flush()
    }

    // MARK: Loading

    /// Loads the current entry into the engine at `explicit`, else at its resume position.
    private func startCurrent(playing: Bool, at explicit: Duration? = nil) {
        guard let entry = queue.current else { return }
        let saved = memory.position(forKey: keyForURL(entry.url))
        let start = explicit ?? saved.flatMap(policy.startPosition(for:)) ?? .zero
        loadStart = start
        restoredStart = nil
        networkWait?.cancel()
        networkWait = nil
        positionOverride.withLock { $0 = start > .zero ? start : nil }
        loopRestartQueued = false
        pendingTags = [:]
        pendingSeekable = [:]
        engine.load(EngineTrack(id: entry.id, url: entry.url), at: start, playing: playing)
        loadedID = entry.id
        startedID = nil
        preparedID = nil  // a load drops what the engine had prepared
        committedID = nil
        // Restarting the same entry (Stop then Play, a retry) keeps what is known of it, so clients see no flicker.
        let known = snapshot.nowPlaying?.entry.id == entry.id ? snapshot.nowPlaying : nil
        update {
            $0.nowPlaying = known ?? NowPlaying(entry: entry, tags: entry.tags ?? TrackTags(), duration: entry.duration)
            $0.status = playing ? .playing : .paused
            $0.buffering = false
        }
        if playing { startSaving() } else { stopSaving() }
        prepareNext()
        // The start, not position(): until the engine has loaded the new track it may still report the old one's.
        saveSession(at: start)
    }

    private func unload(status: PlaybackStatus) {
        stopSaving()
        networkWait?.cancel()
        networkWait = nil
        restoredStart = nil
        positionOverride.withLock { $0 = nil }
        if snapshot.buffering { update { $0.buffering = false } }
        if loadedID != nil { engine.stop() }
        loadedID = nil
        preparedID = nil
        committedID = nil
        loopRestartQueued = false
        stopPreload()
        update { $0.status = status }
        saveSession()
    }

    /// Prepares what follows: without a preloader the engine gets the following entry at once
    /// (for the gapless hand-over; the current one again under loop Track); with one, the
    /// preload policy decides when.
    private func prepareNext() {
        guard loadedID != nil else { return }
        guard preloader != nil else {
            setNext(queue.upcoming(automatic: true))
            return
        }
        refreshPreload()
    }

    /// Gives the engine `following` to play after the current track, unless it has it already.
    private func setNext(_ following: TrackID?) {
        guard following != preparedID else { return }
        preparedID = following
        engine.setNext(following.flatMap(queue.entry).map { EngineTrack(id: $0.id, url: $0.url) })
    }

    /// Plans the preload of upcoming tracks from the clock, the queue and the cache, hands the
    /// plan to the preloader and, when it says so, the following track to the engine. Runs at
    /// every track or queue change, when a preload job ends, and every `checkInterval` while a
    /// track is loaded (tests call it directly).
    public func refreshPreload() {
        guard let preloader else { return }
        guard let currentID = loadedID, let current = queue.entry(currentID) else {
            stopPreload()
            return
        }
        let windowIDs = queue.upcoming(preloadPolicy.settings.count)
        let followingID = queue.upcoming(automatic: true)
        savedDurations = savedDurations.filter { windowIDs.contains($0.key) || $0.key == followingID }
        let upcoming: (TrackID) -> PreloadSituation.Upcoming? = { id in
            guard let entry = self.queue.entry(id) else { return nil }
            let duration: Duration?
            if entry.id == currentID {
                duration = self.snapshot.nowPlaying?.duration
            } else if let known = self.savedDurations[id] {
                duration = known
            } else {
                duration = self.memory.position(forKey: self.keyForURL(entry.url))?.duration
                self.savedDurations[id] = .some(duration)  // nil is remembered too
            }
            return .init(id: id, url: entry.url, download: preloader.download(of: entry.url), duration: duration)
        }
        let situation = PreloadSituation(
            current: preloader.download(of: current.url), position: position(),
            duration: snapshot.nowPlaying?.duration, rate: snapshot.rate,
            window: windowIDs.compactMap(upcoming), following: followingID.flatMap(upcoming), metered: snapshot.metered)
        let plan = preloadPolicy.plan(situation)
        if plan != lastPlan {
            log.debug("preload: \(plan.items.map { "\($0.id) \($0.stage.rawValue)" })\(plan.paused ? " (paused)" : "")")
        }
        lastPlan = plan
        preloader.apply(plan)
        if plan.handOverNext {
            setNext(situation.following?.id)
        } else if let prepared = preparedID, prepared != situation.following?.id {
            setNext(nil)  // the queue changed: the old follower leaves the engine at once
        }
        startPreloadTicker()
        readAheadTags()  // a preload that completed a download makes its track's tags readable
    }

    /// The last preload plan, for clients that show what is prepared.
    public var preloadPlan: PreloadPlan { lastPlan }

    /// Turns metered rules on or off: the preload is planned again at once under them (jobs
    /// they no longer allow are cancelled) and the snapshot says which rules are in force.
    public func setMetered(_ metered: Bool) {
        guard snapshot.metered != metered else { return }
        log.info("\(metered ? "metered network: preload limited to the next track's head" : "network not metered")")
        update { $0.metered = metered }
        refreshPreload()
    }

    private func startPreloadTicker() {
        guard preloadTicker == nil else { return }
        let interval = preloadPolicy.settings.checkInterval
        preloadTicker = Task { [weak self, clock] in
            while !Task.isCancelled {
                try? await clock.sleep(for: interval)
                guard !Task.isCancelled else { return }
                await self?.refreshPreload()
            }
        }
    }

    /// Nothing loaded: no preloading, and the ticker stops.
    private func stopPreload() {
        preloadTicker?.cancel()
        preloadTicker = nil
        lastPlan = PreloadPlan()
        preloader?.apply(lastPlan)
    }

    private func queueChanged() {
        update { _ in }
        prepareNext()
        saveSession()
    }

    // MARK: Engine events

    private func handle(_ event: EngineEvent) {
        // What follows in the queue matters to a start only (and costs a walk of the play order).
        var upcoming: TrackID?
        if case .trackStarted = event { upcoming = queue.upcoming(automatic: true) }
        let tracks = EngineEventRoute.Tracks(
            loaded: loadedID, prepared: preparedID, committed: committedID, loopRestartQueued: loopRestartQueued,
            upcoming: upcoming)
        switch EngineEventRoute.route(event, tracks) {
        case .loopRestartQueued:
            loopRestartQueued = true
        case .committed(let id):
            log.debug("the engine committed \(id) as the next track")
            committedID = id
        case .loopRestartAbandoned(let id):
            loopRestartQueued = false
            trackEnded(id)
        case .started(let id, let restarted):
            failures.reset()
            startedID = id
            readAheadTags()
            if restarted {
                loopRestartQueued = false
                preparedID = nil
                forgetPosition(of: id)
                notify(.seeked(.zero))
                prepareNext()
            }
            if snapshot.lastError != nil { update { $0.lastError = nil } }
        case .handedOver(let id):
            handOver(to: id)
        case .committedTrackStale(let ended):
            log.info(
                "\(committedID.map { "\($0)" } ?? "a track") was committed before the queue changed: loading what follows instead"
            )
            committedID = nil
            if let ended { trackEnded(ended) }
        case .described(let tags, let duration):
            // One update: the title and the length reach clients together.
            update { state in
                if let known = state.nowPlaying?.tags { state.nowPlaying?.tags = Self.merge(tags, into: known) }
                if let duration { state.nowPlaying?.duration = duration }
            }
        case .describedAhead(let id, let tags):
            pendingTags[id] = Self.merge(tags, into: pendingTags[id] ?? TrackTags())
            heardAhead(tags, of: id)  // clients listing the queue see them before it plays
        case .buffering(let waiting):
            update { $0.buffering = waiting }
        case .seekable(let id, let seekable):
            seekableReported = id
            update { $0.nowPlaying?.seekable = seekable }
        case .seekableAhead(let id, let seekable):
            pendingSeekable[id] = seekable
        case .seeked(let position):
            positionOverride.withLock { $0 = nil }
            notify(.seeked(position))
            rememberCurrent()
        case .ended(let id):
            trackEnded(id)
        case .failed(let id, let error):
            trackFailed(id, error)
        case .soundServer(let request):
            soundServerAsked(request)
        case .ignored:
            break
        }
    }

    /// The engine started the prepared entry without a gap.
    private func handOver(to id: TrackID) {
        guard id == preparedID, let entry = queue.entry(id) else { return }
        committedID = nil
        if let finished = loadedID { forgetPosition(of: finished) }
        _ = queue.jump(to: id)
        loadedID = id
        startedID = id
        preparedID = nil
        failures.reset()
        // What the queue read ahead of the entry shows from the first moment, the engine's own
        // tags over it: a lock screen never shows the new track without its length meanwhile.
        let heard = pendingTags.removeValue(forKey: id)
        let tags = heard.map { Self.merge($0, into: entry.tags ?? TrackTags()) } ?? entry.tags ?? TrackTags()
        let reported = pendingSeekable.removeValue(forKey: id)
        let seekable = reported ?? false
        if reported != nil { seekableReported = id }
        update {
            $0.nowPlaying = NowPlaying(entry: entry, tags: tags, duration: entry.duration, seekable: seekable)
            $0.lastError = nil
        }
        prepareNext()
        saveSession()
    }

    private func trackEnded(_ id: TrackID) {
        forgetPosition(of: id)
        guard queue.advance(automatic: true) != nil else {
            unload(status: .stopped)
            return
        }
        let restart = queue.currentID == id
        startCurrent(playing: true, at: .zero)
        if restart { notify(.seeked(.zero)) }  // loop Track without a hand-over
    }

    private func trackFailed(_ id: TrackID?, _ error: EngineError) {
        if error.kind == .newVersion {
            log.info("\(error.message)")
        } else {
            log.error("playback failed: \(error)")
        }
        guard let id, let entry = queue.entry(id) else {
            unload(status: .stopped)
            return
        }
        // The file name goes into LastError, which `spool play` prints: no terminal escapes.
        let name = TagText.clean(entry.url.lastPathComponent) ?? entry.url.absoluteString
        // The engine forgot the track; its place is the failure's, else the last one known.
        let place = error.position ?? positionOverride.withLock { $0 } ?? .zero
        loadedID = nil
        preparedID = nil
        restoredStart = place > .zero ? place : nil
        rewindOnPlay = false
        saveSession()  // the place, should the daemon die before the retry
        let action = failures.failed(
            id, kind: error.kind, networkUp: networkUp(entry.url), queue: Set(queue.entries.map(\.id)))
        switch action {
        case .restart:
            startCurrent(playing: snapshot.status == .playing, at: loadStart)
        case .retry(let delay):
            update { $0.lastError = "\(name): \(error.message)" }
            Task { [weak self, clock] in
                try? await clock.sleep(for: delay)
                await self?.retry(id)
            }
        case .waitForNetwork:
            log.warning("waiting for the network to play \(name) from \(place.forPeople)")
            update {
                $0.lastError = "\(name): \(error.message); waiting for the network"
                $0.buffering = true
            }
            waitForNetwork(id, url: entry.url)
        case .pauseForOutput:
            log.warning("the audio output failed; \(name) paused at \(place.forPeople)")
            stopSaving()
            update {
                $0.status = .paused
                $0.buffering = false
                $0.lastError = "the audio output failed: \(error.message); Play tries it again"
            }
        case .skip:
            update { $0.lastError = "\(name): \(error.message)" }
            if queue.advance(automatic: false) == nil {
                unload(status: .stopped)
            } else {
                startCurrent(playing: snapshot.status == .playing)
            }
        case .stop:
            log.error("stopping: no track of the queue could be played")
            unload(status: .stopped)
            update { $0.lastError = "\(name): \(error.message); no track of the queue could be played" }
        }
    }

    /// Loads the failed current track again at its place, unless the listener moved on.
    private func retry(_ id: TrackID) {
        guard queue.currentID == id, loadedID == nil, snapshot.status == .playing else { return }
        startCurrent(playing: true, at: restoredStart ?? .zero)
    }

    /// Checks the network every `networkCheckInterval` and retries the track when it is back;
    /// after 30 s it retries anyway, in case the interfaces do not tell.
    private func waitForNetwork(_ id: TrackID, url: URL) {
        networkWait?.cancel()
        let networkUp = networkUp
        let interval = networkCheckInterval
        networkWait = Task { [weak self, clock] in
            var waited = Duration.zero
            while !Task.isCancelled {
                try? await clock.sleep(for: interval)
                waited += interval
                if networkUp(url) || waited >= .seconds(30) { break }
            }
            guard !Task.isCancelled else { return }
            await self?.retry(id)
        }
    }

    // MARK: Memory

    private func forgetPosition(of id: TrackID) {
        guard let entry = queue.entry(id) else { return }
        memory.forgetPosition(forKey: keyForURL(entry.url))
    }

    /// Saves the current track's position (when it is loaded and worth it) and the session.
    private func rememberCurrent() {
        if let id = loadedID, let entry = queue.entry(id) {
            let position = position()
            memory.save(
                SavedPosition(
                    key: keyForURL(entry.url), position: position, duration: snapshot.nowPlaying?.duration,
                    rate: snapshot.rate, finished: false))
        }
        saveSession()
    }

    private func saveSession(at known: Duration? = nil) {
        let position = known ?? position()
        let shown = snapshot.nowPlaying.flatMap { $0.entry.id == queue.currentID ? $0 : nil }
        memory.save(
            SavedSession(
                entries: queue.entries.map {
                    .init(url: $0.url, title: $0.title, tags: $0.tags, duration: $0.duration)
                },
                currentIndex: queue.currentIndex,
                position: position, loop: queue.loop, shuffle: queue.shuffle, rate: snapshot.rate,
                volume: snapshot.volume, currentTags: shown.map(\.tags).flatMap { $0.isEmpty ? nil : $0 },
                currentDuration: shown?.duration))
    }

    private func startSaving() {
        guard saver == nil else { return }
        let policy = policy
        saver = Task { [weak self, clock] in
            while !Task.isCancelled {
                guard let rate = await self?.snapshot.rate else { return }
                try? await clock.sleep(for: policy.saveInterval(atRate: rate))
                guard !Task.isCancelled else { return }
                await self?.rememberCurrent()
            }
        }
    }

    private func stopSaving() {
        saver?.cancel()
        saver = nil
    }

    // MARK: Observers

    func update(_ change: (inout PlayerSnapshot) -> Void) {
        var next = snapshot
        change(&next)
        rememberShownTags(next.nowPlaying)
        next.queue = queue.entries
        next.loop = queue.loop
        next.shuffle = queue.shuffle
        next.canGoNext = queue.canGoNext
        next.canGoPrevious = queue.canGoPrevious
        guard next != snapshot else { return }
        snapshot = next
        notify(.changed(next))
        readAheadTags()
    }

    private func notify(_ update: PlayerUpdate) {
        for observer in observers { observer(update) }
    }
}
