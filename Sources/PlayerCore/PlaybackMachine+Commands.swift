import Basics
import EngineAPI
import FoundationEssentials

/// The listener's commands: the session, the queue, the transport, seeks, rate and volume.
/// Each MPRIS rule that depends on the state is decided here, on the state of the moment.
extension PlaybackMachine {
    // MARK: Session

    /// Restores the saved session, paused and not yet loaded: Play continues it.
    mutating func restore(_ saved: SavedSession) {
        guard saved.version == 1, !saved.entries.isEmpty else { return }
        queue = .restored(
            saved.entries.map { TrackItem(url: $0.url, title: $0.title, mirrors: $0.mirrors ?? []) },
            current: saved.currentIndex, loop: saved.loop,
            shuffle: saved.shuffle, shuffleSeed: settings.shuffleSeed)
        // What the queue showed comes back with it: no entry is read for its tags again.
        for (entry, savedEntry) in zip(queue.entries, saved.entries)
        where savedEntry.tags != nil || savedEntry.duration != nil {
            queue.setTags(savedEntry.tags?.sanitized(), duration: savedEntry.duration, of: entry.id)
        }
        // The session file is the other way tags enter: one saved by an older Spool (or edited) holds them raw.
        let tags = saved.currentTags?.sanitized() ?? TrackTags()
        let duration =
            saved.currentDuration
            ?? queue.current.flatMap { world.savedPosition(settings.key($0.url))?.duration }
        restoredStart = saved.position > .zero ? saved.position : nil
        rewindOnPlay = true
        let rate = min(snapshot.maximumRate, max(snapshot.minimumRate, saved.rate))
        command(.setRate(rate))
        command(.setVolume(saved.volume))
        let current = queue.current
        update {
            $0.rate = rate
            $0.volume = saved.volume
            $0.status = current == nil ? .stopped : .paused
            $0.nowPlaying = current.map { NowPlaying(entry: $0, tags: tags, duration: duration) }
        }
        log(.info, "restored a session of \(saved.entries.count) tracks at \(saved.position.forPeople)")
    }

    // MARK: Queue

    mutating func open(_ items: [TrackItem]) {
        guard !items.isEmpty else { return }
        listenerActed()
        rememberCurrent()
        failures.reset()
        queue.clear()
        queue.add(items)
        restoredStart = nil
        startCurrent(playing: true)
    }

    mutating func add(_ items: [TrackItem], after: TrackID?, atStart: Bool) -> [TrackID] {
        let wasEmpty = queue.current == nil
        let ids = queue.add(items, after: after, atStart: atStart)
        if wasEmpty, let current = queue.current {
            update { $0.nowPlaying = NowPlaying(entry: current, tags: TrackTags(), duration: nil) }
        }
        queueChanged()
        return ids
    }

    mutating func remove(_ id: TrackID) {
        let wasCurrent = id == queue.currentID
        queue.remove(id)
        if wasCurrent {
            listenerActed()
            if queue.current != nil, snapshot.status != .stopped {
                startCurrent(playing: snapshot.status == .playing)
            } else {
                unload(status: .stopped)
                showCurrentUnloaded()
            }
        }
        queueChanged()
    }

    mutating func move(_ id: TrackID, to position: Int) {
        queue.move(id, to: position)
        queueChanged()
    }

    mutating func clear() {
        listenerActed()
        rememberCurrent()
        queue.clear()
        unload(status: .stopped)
        update { $0.nowPlaying = nil }
        queueChanged()
    }

    mutating func jump(to id: TrackID) {
        guard queue.entry(id) != nil else { return }
        listenerActed()
        rememberCurrent()
        queue.jump(to: id)
        startCurrent(playing: true)
    }

    mutating func setLoop(_ mode: LoopMode) {
        queue.loop = mode
        update { $0.loop = mode }
        queueChanged()
    }

    mutating func setShuffle(_ on: Bool) {
        queue.setShuffle(on)
        update { $0.shuffle = on }
        queueChanged()
    }

    /// The current entry shown as not loaded: its queue entry, nothing heard of it yet.
    mutating func showCurrentUnloaded() {
        let current = queue.current
        update { $0.nowPlaying = current.map { NowPlaying(entry: $0, tags: TrackTags(), duration: nil) } }
    }

    // MARK: Transport

    mutating func play() {
        listenerActed()
        startPlayback()
    }

    /// Play on anyone's behalf: the listener's, or the end of an interruption. On an empty
    /// queue it does nothing.
    mutating func startPlayback() {
        guard let current = queue.current ?? queue.entries.first else { return }
        if queue.current == nil { queue.jump(to: current.id) }
        switch snapshot.status {
        case .playing:
            return
        case .paused where loadedID != nil:
            command(.play)
            update { $0.status = .playing }
            startSaving()
        case .paused:
            // A restored session, or a failed track.
            let rewind = rewindOnPlay ? settings.resume.rewind : .zero
            startCurrent(playing: true, at: restoredStart.map { max(.zero, $0 - rewind) })
        case .stopped:
            startCurrent(playing: true, at: restoredStart ?? .zero)  // where a seek while stopped set it
        }
    }

    mutating func pause() {
        listenerActed()
        pausePlayback()
    }

    /// Pause on anyone's behalf: the listener's, or the sound server's. Does nothing unless playing.
    mutating func pausePlayback() {
        guard snapshot.status == .playing else { return }
        command(.pause)
        stopWaitingForNetwork()  // a listener who paused is not overruled when the network returns
        let loaded = loadedID != nil
        update {
            $0.status = .paused
            if !loaded { $0.buffering = false }
        }
        stopSaving()
        rememberCurrent()
    }

    mutating func stop() {
        listenerActed()
        guard snapshot.status != .stopped else { return }
        rememberCurrent()
        unload(status: .stopped)
    }

    /// The next track in play order; at the end of the queue (no loop) nothing, as MPRIS asks
    /// when `CanGoNext` is false. Paused or stopped playback stays that way.
    mutating func next() {
        guard queue.canGoNext else { return }
        listenerActed()
        rememberCurrent()
        guard queue.advance(automatic: false) != nil else { return }
        changedTrack()
    }

    /// Restarts the current track when past the first 3 s (and it can seek), else moves to the
    /// previous one; at the first track, restarts it.
    mutating func previous() {
        listenerActed()
        if loadedID != nil, (world.enginePosition() ?? .zero) > Self.previousRestartThreshold,
            snapshot.nowPlaying?.seekable == true
        {
            seekEngine(to: .zero)
            return
        }
        rememberCurrent()
        guard queue.retreat() != nil else {
            if loadedID != nil { seekEngine(to: .zero) }
            return
        }
        changedTrack()
    }

    /// After Next or Previous: playing goes on playing the new current entry, paused
    /// loads it paused, stopped only shows it (Play starts it).
    mutating func changedTrack() {
        switch snapshot.status {
        case .playing, .paused:
            startCurrent(playing: snapshot.status == .playing)
        case .stopped:
            showCurrentUnloaded()
            saveSession()
        }
    }

    // MARK: Seeking

    /// Seeks to `position` within the current track (clamped at 0). A track that is current but
    /// not loaded (stopped, restored, failed) starts there on the next Play. Nil, or why the seek
    /// cannot be honoured (no current track, a stream that cannot seek).
    mutating func seek(to position: Duration) -> String? {
        if loadedID == nil, queue.current != nil {
            restoredStart = max(.zero, position)
            rewindOnPlay = false
            notify(.seeked(restoredStart ?? .zero))  // the shown position jumped: clients hear of it
            return nil
        }
        guard let loaded = loadedID else { return "nothing is playing" }
        // Before the engine has said whether the track can seek (it is still opening), the seek
        // goes to the engine, which starts the track there.
        guard snapshot.nowPlaying?.seekable == true || seekableReported != loaded else {
            return "this track cannot seek: its server sends it only from the start and it is not cached"
        }
        seekEngine(to: max(.zero, position))
        return nil
    }

    /// Seeks the loaded track. The engine reports a seek's target from the moment it is asked,
    /// so a start position shown until the load's own seek landed gives way to it.
    mutating func seekEngine(to position: Duration) {
        shownPosition = nil
        command(.seek(position))
    }

    /// Moves by `offset` from where the track is heard. Past the track's known end it acts like
    /// Next, and with no next track (the queue's end, no loop) like Stop, as MPRIS asks.
    mutating func seek(by offset: Duration) -> String? {
        guard let current = snapshot.nowPlaying else { return nil }
        // Any Int64 offset arrives here: the target stays within what MPRIS can report.
        let target = min(position + offset, .microseconds(Int64.max))
        if let length = current.duration, target > length {
            if queue.canGoNext { next() } else { stop() }
            return nil
        }
        return seek(to: max(.zero, target))
    }

    /// Moves to `position` in the track `id`: another track's id (a stale one), a negative
    /// position or one past the end is ignored, as MPRIS asks.
    mutating func setPosition(of id: TrackID, to position: Duration) -> String? {
        guard let current = snapshot.nowPlaying, current.entry.id == id, position >= .zero else { return nil }
        if let length = current.duration, position > length { return nil }
        return seek(to: position)
    }

    // MARK: Rate, volume, network

    /// The rate, clamped to the engine's range; 0 or less pauses, as MPRIS asks; NaN is ignored.
    mutating func setRate(_ rate: Double) {
        guard !rate.isNaN else { return }
        if rate <= 0 {
            pause()
            return
        }
        let clamped = min(snapshot.maximumRate, max(snapshot.minimumRate, rate))
        command(.setRate(clamped))
        update { $0.rate = clamped }
        saveSession()
    }

    /// The volume, clamped to 0.0–1.0 (NaN is silence).
    mutating func setVolume(_ volume: Double) {
        let clamped = min(1, max(0, volume.isNaN ? 0 : volume))
        command(.setVolume(clamped))
        update { $0.volume = clamped }
        saveSession()  // a volume set while paused is otherwise lost to a crash
    }

    /// Metered rules on or off: the preload is planned again at once under them.
    mutating func setMetered(_ metered: Bool) {
        guard snapshot.metered != metered else { return }
        log(.info, metered ? "metered network: preload limited to the next track's head" : "network not metered")
        update { $0.metered = metered }
        emit(.planPreload)
    }

    /// Saves everything and stops the engine, for shutdown (quit, SIGTERM, system sleep).
    mutating func shutdown() {
        rememberCurrent()
        stopSaving()
        emit(.stopPreload)
        command(.shutdown)
        loadedID = nil
        emit(.flushMemory)  // stored before the process ends
    }
}
