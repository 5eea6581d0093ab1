import Basics
import ByteSourceAPI
import EngineAPI
import FoundationEssentials

/// The engine's events: starts, hand-overs, what a track says of itself, ends and failures.
/// Which of the player's tracks an event is about is ``EngineEventRoute``'s to say.
extension PlaybackMachine {
    mutating func handle(_ event: EngineEvent) {
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
            log(.debug, "the engine committed \(id) as the next track")
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
            log(
                .info,
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
        case .live(let id, let station):
            update { if $0.nowPlaying?.entry.id == id { $0.nowPlaying?.live = LiveListening(station: station) } }
        case .liveAhead(let id, let station):
            pendingLive[id] = station
        case .variant(let id, let variant):
            update { if $0.nowPlaying?.entry.id == id { $0.nowPlaying?.variant = variant } }
        case .variantAhead(let id, let variant):
            pendingVariant[id] = variant
        case .streamTitle(let title):
            let shownBefore = snapshot.nowPlaying?.live?.song?.text
            update { $0.nowPlaying?.live?.song = title.text.isEmpty ? nil : title }
            // A station repeats its title in every metadata block: only a change is a new song.
            if !title.text.isEmpty, title.text != shownBefore, let playing = snapshot.nowPlaying,
                let station = playing.stationName, let song = TagText.clean(title.title)
            {
                emit(
                    .recordHeard(
                        station: station, artist: title.artist.flatMap { TagText.clean($0) }, title: song,
                        url: playing.entry.url))
            }
        case .programDate(let date, let heardAt):
            // Each dated segment restates the pairing: only a jump (segments lost, a rejoin)
            // changes it, so Live is signalled when the air time moves, not every few seconds.
            guard let live = snapshot.nowPlaying?.live,
                abs((live.aired?.date(at: heardAt) ?? .distantPast).timeIntervalSince(date)) >= 1
            else { break }
            update { $0.nowPlaying?.live?.aired = LiveAiring(date: date, position: heardAt) }
        case .seeked(let position):
            shownPosition = nil
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
    mutating func handOver(to id: TrackID) {
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
        if reported != nil { seekableReported = id }
        let station = pendingLive.removeValue(forKey: id)
        let variant = pendingVariant.removeValue(forKey: id)
        update {
            $0.nowPlaying = NowPlaying(entry: entry, tags: tags, duration: entry.duration, seekable: reported ?? false)
            $0.nowPlaying?.live = station.map { LiveListening(station: $0) }
            $0.nowPlaying?.variant = variant
            $0.lastError = nil
        }
        prepareNext()
        saveSession()
    }

    mutating func trackEnded(_ id: TrackID) {
        forgetPosition(of: id)
        guard queue.advance(automatic: true) != nil else {
            unload(status: .stopped)
            return
        }
        let restart = queue.currentID == id
        startCurrent(playing: true, at: .zero)
        if restart { notify(.seeked(.zero)) }  // loop Track without a hand-over
    }

    mutating func trackFailed(_ id: TrackID?, _ error: EngineError) {
        if error.kind == .newVersion {
            log(.info, error.message)
        } else {
            log(.error, "playback failed: \(error)")
        }
        guard let id, let entry = queue.entry(id) else {
            unload(status: .stopped)
            return
        }
        // The file name goes into LastError, which `spool play` prints: no terminal escapes.
        let name = TagText.clean(entry.url.lastPathComponent) ?? entry.url.absoluteString
        // The engine forgot the track; its place is the failure's, else the last one known.
        let place = error.position ?? shownPosition ?? .zero
        loadedID = nil
        preparedID = nil
        restoredStart = place > .zero ? place : nil
        rewindOnPlay = false
        if error.kind.mayDifferOnAMirror, world.networkUp(entry.url), let mirror = queue.replaceWithMirror(id) {
            // A station's next server, at once: the listener chose the station, not the server.
            log(.warning, "\(name): \(error.message); trying the station's next server, \(mirror.url.host ?? "")")
            update { $0.nowPlaying?.entry = mirror }
            startCurrent(playing: snapshot.status == .playing, at: place > .zero ? place : nil)
            saveSession()
            return
        }
        saveSession()  // the place, should the daemon die before the retry
        let action = failures.failed(
            id, kind: error.kind, networkUp: world.networkUp(entry.url), queue: Set(queue.entries.map(\.id)))
        switch action {
        case .restart:
            startCurrent(playing: snapshot.status == .playing, at: loadStart)
        case .retry(let delay):
            update { $0.lastError = "\(name): \(error.message)" }
            emit(.retry(id, after: delay))
        case .waitForNetwork:
            log(.warning, "waiting for the network to play \(name) from \(place.forPeople)")
            update {
                $0.lastError = "\(name): \(error.message); waiting for the network"
                $0.buffering = true
            }
            waitingForNetwork = true
            emit(.waitForNetwork(id, entry.url))
        case .pauseForOutput:
            log(.warning, "the audio output failed; \(name) paused at \(place.forPeople)")
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
            log(.error, "stopping: no track of the queue could be played")
            unload(status: .stopped)
            update { $0.lastError = "\(name): \(error.message); no track of the queue could be played" }
        }
    }

    /// Loads the failed current track again at its place, unless the listener moved on.
    mutating func retry(_ id: TrackID) {
        guard queue.currentID == id, loadedID == nil, snapshot.status == .playing else { return }
        startCurrent(playing: true, at: restoredStart ?? .zero)
    }
}
