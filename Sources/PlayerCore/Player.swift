import Basics
import Dispatch
import EngineAPI
import FoundationEssentials
import Synchronization

/// The one owner of player state: it holds the ``PlaybackMachine`` that decides, feeds it the
/// listener's commands (from the MPRIS layer and the CLI), the engine's events (in order, through
/// one stream) and its own timers, and carries out what the machine returns: engine commands,
/// saves, updates for observers, timers, preload plans and tag reads. It decides nothing itself.
public actor Player {
    /// Previous restarts the current track instead of going back when played longer than this.
    public static let previousRestartThreshold = PlaybackMachine.previousRestartThreshold

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
    private let tagReader: (any QueueTagReader)?
    /// Where folder art, MP3 lengths and lyrics are looked up (nil: they are not).
    private let lookups: TrackLookupSources?
    /// The disk reads of those lookups, one at a time, off the player's executor.
    private let lookupQueue = DispatchQueue(label: "spool.player.lookups", qos: .utility)
    let log = Logger(label: "player")
    private var machine: PlaybackMachine
    private var observers: [@Sendable (PlayerUpdate) -> Void] = []
    /// The machine's correction of the shown position, readable from any thread because MPRIS
    /// answers Position without waiting.
    private let shownPosition = Mutex<Duration?>(nil)
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

    /// Creates a player driving `engine`, remembering positions and the session in
    /// `memory`; `keyForURL` gives the stable key positions are saved under;
    /// a failed track is handled as ``FailurePolicy`` says, a retry coming after `retryDelay`;
    /// `networkUp` tells whether a URL's host could be reached at all (``NetworkState``); a trailing
    /// closure is `keyForURL`.
    /// With a `preloader`, upcoming tracks are prepared as `preload` says (``PreloadPolicy``);
    /// without one, the engine is given the following track as soon as it is known.
    /// The sound server's requests to make way for another stream are followed as
    /// `interruptions` says (``InterruptionPolicy``). With a `tagReader`, the tags of queued
    /// local and completely cached tracks are read ahead for the queue to show. With `lookups`,
    /// the current track shows its folder's art, a local MP3 its length before the decoder
    /// finds it, and its lyrics (``TrackLookups``). Its timers wait on `clock`.
    public init(
        engine: PlaybackEngine, memory: PlaybackMemory = TransientMemory(), policy: ResumePolicy = ResumePolicy(),
        retryDelay: Duration = .milliseconds(500), preloader: Preloader? = nil,
        preload: PreloadSettings = PreloadSettings(),
        keyForURL: @escaping @Sendable (URL) -> String = { $0.absoluteString },
        networkUp: @escaping @Sendable (URL) -> Bool = { NetworkState.isUp(forHost: $0.host) },
        networkCheckInterval: Duration = .seconds(1), interruptions: InterruptionMode = .pause,
        tagReader: (any QueueTagReader)? = nil, lookups: TrackLookupSources? = nil,
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        var settings = PlaybackMachine.Settings()
        settings.resume = policy
        settings.retryDelay = retryDelay
        settings.preloads = preloader != nil
        settings.readsTags = tagReader != nil
        settings.looksUp = lookups != nil
        settings.interruptions = interruptions
        settings.rates = engine.supportedRates
        settings.key = keyForURL
        self.machine = PlaybackMachine(settings: settings)
        self.clock = clock
        self.tagReader = tagReader
        self.lookups = lookups
        self.networkCheckInterval = networkCheckInterval
        self.engine = engine
        self.networkUp = networkUp
        self.preloader = preloader
        self.preloadPolicy = PreloadPolicy(settings: preload)
        self.memory = memory
        self.policy = policy
        self.keyForURL = keyForURL
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
                await self.run(.engine(event))
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
        observer(.changed(machine.snapshot))
    }

    /// The current snapshot.
    public var state: PlayerSnapshot { machine.snapshot }

    /// The position in the current track: the restored one before the first Play,
    /// else the engine's (zero when nothing is loaded). Cheap; any thread.
    public nonisolated func position() -> Duration {
        position(beside: nil)
    }

    /// The position to show beside the metadata of `shown` (see ``ShownPosition``): a reader
    /// that publishes metadata a flush after the player passes what it shows. Cheap; any thread.
    public nonisolated func position(beside shown: ShownPosition.Shown?) -> Duration {
        ShownPosition.position(place: shownPosition.withLock { $0 }, heard: engine.heardPosition(), beside: shown)
    }

    // MARK: Commands

    /// Restores the saved session, paused and not yet loaded: Play continues it.
    public func restoreSession() {
        guard var saved = memory.session() else { return }
        // Art evicted since.
        if let art = saved.currentTags?.artURL, art.isFileURL, !FileManager.default.fileExists(atPath: art.path) {
            saved.currentTags?.artURL = nil
        }
        run(.restore(saved))
    }

    /// Replaces the queue with `items` and plays the first.
    public func open(_ items: [TrackItem]) { run(.open(items)) }

    /// ``open(_:)-([TrackItem])`` for plain addresses with their titles.
    public func open(_ tracks: [(url: URL, title: String?)]) { open(TrackItem.list(tracks)) }

    /// Replaces the queue with `url` and plays it.
    public func open(_ url: URL) { open([TrackItem(url: url)]) }

    /// Adds tracks after entry `after` (default: at the end; `atStart`: before everything).
    /// Nothing starts playing, unless `play`: then the first added plays, decided in the same
    /// step as the addition (MPRIS `AddTrack` with `SetAsCurrent`). Returns the new entries' ids.
    /// Like every queue edit, it returns once the edited session is stored: an edit a client
    /// was told of survives a crash. The actor is free meanwhile.
    @discardableResult
    public func add(
        _ items: [TrackItem], after: TrackID? = nil, atStart: Bool = false, play: Bool = false
    ) async -> [TrackID] {
        let added = run(.add(items, after: after, atStart: atStart, play: play)).added
        await memory.written()
        return added
    }

    /// ``add(_:after:atStart:play:)`` for plain addresses with their titles.
    @discardableResult
    public func add(
        _ tracks: [(url: URL, title: String?)], after: TrackID? = nil, atStart: Bool = false, play: Bool = false
    ) async -> [TrackID] {
        await add(TrackItem.list(tracks), after: after, atStart: atStart, play: play)
    }

    /// Appends URLs to the queue.
    public func add(_ urls: [URL]) async { await add(urls.map { TrackItem(url: $0) }) }

    /// Removes an entry; removing the current one moves on to the next (keeping play/pause).
    public func remove(_ id: TrackID) async {
        run(.remove(id))
        await memory.written()
    }

    /// Moves an entry to list position `position`.
    public func move(_ id: TrackID, to position: Int) async {
        run(.move(id, to: position))
        await memory.written()
    }

    /// Empties the queue and stops.
    public func clear() async {
        run(.clear)
        await memory.written()
    }

    /// Makes `id` current and plays it.
    public func jump(to id: TrackID) { run(.jump(id)) }

    /// Sets the loop mode.
    public func setLoop(_ mode: LoopMode) { run(.setLoop(mode)) }

    /// Turns shuffle on or off.
    public func setShuffle(_ on: Bool) { run(.setShuffle(on)) }

    /// Starts or resumes playback; from the beginning of the current track when stopped; on an
    /// empty queue, nothing.
    public func play() { run(.play) }

    /// Pauses playback; does nothing when stopped.
    public func pause() { run(.pause) }

    /// Pauses when playing, plays otherwise.
    public func playPause() { run(.playPause) }

    /// Stops playback; the current track stays current and plays from 0 on Play.
    public func stop() { run(.stop) }

    /// Moves to the next track in play order; at the end of the queue (no loop) it does nothing,
    /// as MPRIS asks when `CanGoNext` is false. Paused or stopped playback stays that way.
    public func next() { run(.next) }

    /// Restarts the current track when past the first 3 s, else moves to the previous one.
    public func previous() { run(.previous) }

    /// Seeks to `position` within the current track (clamped at 0); a burst of seeks
    /// is coalesced by the engine, so only the last target is applied. A track that is current
    /// but not loaded (stopped, restored, failed) starts there on the next Play. Returns why the
    /// seek cannot be honoured (no current track, a stream that cannot seek), nil when applied.
    @discardableResult
    public func seek(to position: Duration) -> String? { run(.seek(to: position)).refusal }

    /// Moves the position by `offset` from where the track is heard (MPRIS `Seek`), deciding
    /// on the state of this moment. Past the track's known end it acts like Next, and with no
    /// next track (the queue's end, no loop) like Stop, as MPRIS asks. Nil, or why it cannot seek.
    public func seek(by offset: Duration) -> String? { run(.seekBy(offset)).refusal }

    /// Moves to `position` in the track `id` (MPRIS `SetPosition`), deciding on the state of this
    /// moment: another track's id (a stale one), a negative position or one past the end is
    /// ignored, as MPRIS asks. Nil, or why it cannot seek.
    public func setPosition(of id: TrackID, to position: Duration) -> String? {
        run(.setPosition(id, position)).refusal
    }

    /// Sets the rate, clamped to the engine's range; 0 pauses, as MPRIS asks.
    public func setRate(_ rate: Double) { run(.setRate(rate)) }

    /// Sets the volume, clamped to 0.0–1.0.
    public func setVolume(_ volume: Double) { run(.setVolume(volume)) }

    /// Turns metered rules on or off: the preload is planned again at once under them (jobs
    /// they no longer allow are cancelled) and the snapshot says which rules are in force.
    public func setMetered(_ metered: Bool) { run(.setMetered(metered)) }

    /// Saves everything and stops the engine, for shutdown (quit, SIGTERM, system sleep).
    public func shutdown() { run(.shutdown) }

    /// Saves the position and the session now, and waits until they are stored (system sleep).
    public func saveNow() { run(.saveNow) }

    /// The songs heard on live streams, newest first, at most `limit`; every song recorded
    /// before the call is among them. The memory is read on the lookup queue, not the player's
    /// executor: a store may wait there for its writes in flight.
    public nonisolated func heardSongs(limit: Int) async -> [HeardSong] {
        let memory = memory
        return await lookupQueue.perform { memory.heardSongs(limit: limit) }
    }

    // MARK: Carrying out

    /// What the machine reads of the world in a step.
    private var world: PlaybackWorld {
        let engine = engine
        let memory = memory
        let networkUp = networkUp
        let tagReader = tagReader
        return PlaybackWorld(
            enginePosition: { engine.position() }, heardPosition: { engine.heardPosition()?.position },
            savedPosition: { memory.position(forKey: $0) }, networkUp: networkUp,
            holdsAllBytes: { tagReader?.holdsAllBytes(of: $0) ?? false })
    }

    /// Applies `input` to the machine and carries out its effects, in order.
    @discardableResult
    private func run(_ input: PlaybackInput) -> PlaybackStep {
        let step = machine.apply(input, in: world)
        let shown = machine.shownPosition
        shownPosition.withLock { $0 = shown }
        for effect in step.effects { carryOut(effect) }
        return step
    }

    private func carryOut(_ effect: PlaybackEffect) {
        switch effect {
        case .engine(let command): send(command)
        case .publish(let update): for observer in observers { observer(update) }
        case .savePosition(let position): memory.save(position)
        case .forgetPosition(let key): memory.forgetPosition(forKey: key)
        case .saveSession(let session): memory.save(session)
        case .recordHeard(let station, let artist, let title, let url):
            memory.recordHeard(HeardSong(when: Date(), station: station, artist: artist, title: title, url: url))
        case .flushMemory: memory.flush()
        case .periodicSaves(let on): if on { startSaving() } else { stopSaving() }
        case .retry(let id, let delay):
            Task { [weak self, clock] in
                try? await clock.sleep(for: delay)
                await self?.run(.retryDue(id))
            }
        case .waitForNetwork(let id, let url): waitForNetwork(id, url: url)
        case .stopWaitingForNetwork:
            networkWait?.cancel()
            networkWait = nil
        case .planPreload: refreshPreload()
        case .stopPreload: stopPreload()
        case .readTags(let id, let url):
            guard let tagReader else { return }
            Task { [weak self] in
                let found = await tagReader.read(url)
                await self?.run(.tagsRead(found, of: id))
            }
        case .readFolders(let folders):
            Task { [weak self, lookupQueue] in
                let found = await lookupQueue.perform {
                    Dictionary(uniqueKeysWithValues: folders.map { ($0, SidecarArt.find(in: $0)) })
                }
                await self?.run(.foldersRead(found))
            }
        case .estimateLength(let id, let url):
            Task { [weak self, lookupQueue] in
                let length = await lookupQueue.perform { MP3Length.estimate(atPath: url.path) }
                await self?.run(.lengthEstimated(length, of: id))
            }
        case .readLyrics(let id, let url, let tagText, let remote):
            readLyrics(of: id, url: url, tagText: tagText, remote: remote)
        case .log(let level, let message): log.log(level, message)
        }
    }

    /// Reads track `id`'s lyrics on the lookup queue (its `.lrc`, else `tagText`) and, for an http
    /// track with `remote`, fetches its `.lrc` too; each answer goes to the machine.
    private func readLyrics(of id: TrackID, url: URL, tagText: String?, remote: Bool) {
        Task { [weak self, lookupQueue] in
            let (lyrics, fromSidecar) = await lookupQueue.perform {
                let sidecar = LyricsFile.sidecarPath(for: url).flatMap(LyricsFile.read(atPath:))
                return (Self.parsed(sidecar ?? tagText), sidecar != nil)
            }
            await self?.run(.lyricsRead(lyrics, of: id, tagText: tagText, fromSidecar: fromSidecar))
        }
        guard remote, let fetch = lookups?.remoteLyrics else { return }
        Task { [weak self, lookupQueue] in
            guard let text = await fetch(url) else { return }
            let lyrics = await lookupQueue.perform { Self.parsed(text) }
            await self?.run(.lyricsRead(lyrics, of: id, tagText: tagText, fromSidecar: true))
        }
    }

    /// `text` parsed as lyrics; nil when there is no text or no line in it.
    private static func parsed(_ text: String?) -> Lyrics? {
        text.map(Lyrics.parse).flatMap { $0.isEmpty ? nil : $0 }
    }

    private func send(_ command: EngineCommand) {
        switch command {
        case .load(let track, let start, let playing): engine.load(track, at: start, playing: playing)
        case .setNext(let track): engine.setNext(track)
        case .play: engine.play()
        case .pause: engine.pause()
        case .stop: engine.stop()
        case .shutdown: engine.shutdown()
        case .seek(let position): engine.seek(to: position)
        case .setRate(let rate): engine.setRate(rate)
        case .setVolume(let volume): engine.setVolume(volume)
        case .keepOutput(let keep): engine.keepOutput(keep)
        }
    }

    private func startSaving() {
        guard saver == nil else { return }
        let policy = policy
        saver = Task { [weak self, clock] in
            while !Task.isCancelled {
                guard let rate = await self?.machine.snapshot.rate else { return }
                try? await clock.sleep(for: policy.saveInterval(atRate: rate))
                guard !Task.isCancelled else { return }
                await self?.run(.saveDue)
            }
        }
    }

    private func stopSaving() {
        saver?.cancel()
        saver = nil
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
            await self?.run(.retryDue(id))
        }
    }

    // MARK: Preload

    /// Plans the preload of upcoming tracks from the clock, the queue and the cache, hands the
    /// plan to the preloader and, when it says so, the following track to the engine. Runs at
    /// every track or queue change, when a preload job ends, and every `checkInterval` while a
    /// track is loaded (tests call it directly).
    public func refreshPreload() {
        guard let preloader else { return }
        let queue = machine.queue
        let snapshot = machine.snapshot
        guard let currentID = machine.loadedID, let current = queue.entry(currentID) else {
            stopPreload()
            return
        }
        let windowIDs = queue.upcoming(preloadPolicy.settings.count)
        let followingID = queue.upcoming(automatic: true)
        savedDurations = savedDurations.filter { windowIDs.contains($0.key) || $0.key == followingID }
        let upcoming: (TrackID) -> PreloadSituation.Upcoming? = { id in
            guard let entry = queue.entry(id) else { return nil }
            let duration: Duration?
            if entry.id == currentID {
                duration = snapshot.nowPlaying?.duration
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
        startPreloadTicker()
        run(.preloadPlanned(handOverNext: plan.handOverNext, following: situation.following?.id))
    }

    /// The last preload plan, for clients that show what is prepared.
    public var preloadPlan: PreloadPlan { lastPlan }

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

}
