import EngineAPI
import FoundationEssentials

/// Tags the queue shows for entries other than the playing one (remembered from playing them,
/// and read ahead from the bytes of upcoming local and cached tracks), and the sound server's
/// requests to make way for another stream, decided by ``InterruptionPolicy``.
extension PlaybackMachine {
    // MARK: Tags of queued entries

    /// `tags` merged into `known`, but the first bitrate stays: decoders re-estimate it
    /// several times a second, and every new value would reach every client as new metadata.
    static func merge(_ tags: TrackTags, into known: TrackTags) -> TrackTags {
        var tags = tags
        if known.bitrate != nil { tags.bitrate = nil }
        return known.merging(tags)
    }

    /// Tags the engine read for the prepared next track before its audio started: its entry
    /// shows them at once (and keeps the title in the saved session).
    mutating func heardAhead(_ tags: TrackTags, of id: TrackID) {
        if let title = tags.title, !title.isEmpty, queue.entry(id)?.title != title { queue.setTitle(title, of: id) }
        if let entry = queue.entry(id) {
            let heard = QueueTagPolicy.heard(tags, duration: nil, in: entry)
            queue.setTags(heard.tags, duration: heard.duration, of: id)
        }
        update { _ in }
    }

    /// Copies what is known of the playing track into its queue entry, so it still shows
    /// once another track plays. Called with every snapshot the player publishes.
    mutating func rememberShownTags(_ playing: NowPlaying?) {
        guard let playing, let entry = queue.entry(playing.entry.id) else { return }
        guard !playing.tags.isEmpty || playing.duration != nil else { return }
        let heard = QueueTagPolicy.heard(playing.tags, duration: playing.duration, in: entry)
        if heard != entry { queue.setTags(heard.tags, duration: heard.duration, of: entry.id) }
    }

    /// Asks for the next tag read the policy wants, if any: the current entry while it is not
    /// loaded, then the upcoming ones in play order. Cheap when there is nothing to read. Not
    /// while a loaded track waits for its first audio: a read takes a core and the disk, and on
    /// two cores it would share them with the start.
    mutating func readAheadTags() {
        guard settings.readsTags, tagReading == nil else { return }
        if let loaded = loadedID, startedID != loaded { return }
        var ids = queue.upcoming(QueueTagPolicy.window)
        if loadedID == nil, let current = queue.currentID { ids.insert(current, at: 0) }
        let world = world
        let candidates = ids.compactMap { id -> QueueTagCandidate? in
            guard let entry = queue.entry(id) else { return nil }
            let tried = tagsTried.contains(id)
            let known = entry.tags?.title != nil
            // Whether the bytes are here is asked only of entries still to read (a cache lookup).
            let local = !tried && !known && world.holdsAllBytes(entry.url)
            return QueueTagCandidate(id: id, local: local, known: known, tried: tried)
        }
        guard let id = QueueTagPolicy.next(candidates, reading: false), let url = queue.entry(id)?.url else { return }
        tagReading = id
        tagsTried.insert(id)
        emit(.readTags(id, url))
    }

    /// A read ended: its entry shows what it found, and the next read starts.
    mutating func tagsRead(_ found: ReadTags?, of id: TrackID) {
        tagReading = nil
        let present = Set(queue.entries.map(\.id))
        tagsTried = tagsTried.filter(present.contains)
        if let found, let entry = queue.entry(id) {
            let read = QueueTagPolicy.read(found, into: entry)
            if read != entry {
                queue.setTags(read.tags, duration: read.duration, of: id)
                let loaded = loadedID
                update { state in
                    // A current entry not yet loaded shows them too (its own tags come when it plays).
                    guard let now = state.nowPlaying, now.entry.id == id, loaded != id else { return }
                    state.nowPlaying?.tags = (read.tags ?? TrackTags()).merging(now.tags)
                    state.nowPlaying?.duration = now.duration ?? read.duration
                }
            }
        }
        readAheadTags()
    }

    // MARK: Interruptions

    /// The sound server asked to pause for a call, or to play on after it.
    mutating func soundServerAsked(_ request: SoundServerRequest) {
        let action = interruptions.soundServer(request, status: snapshot.status)
        switch action {
        case .none:
            log(.debug, "the sound server asks to \(request); nothing to do (\(snapshot.status.rawValue))")
        case .pause:
            log(.info, "pausing: the sound server gives another stream precedence")
            pausePlayback()
        case .resume:
            log(.info, "playing on: the sound server lets the interrupted track go on")
            showInterruption()
            startPlayback()
        }
        showInterruption()
    }

    /// The listener acted on the transport: an interruption no longer resumes by itself.
    mutating func listenerActed() {
        interruptions.listenerActed()
        showInterruption()
    }

    /// Makes the snapshot say whether playback is interrupted, and has the engine keep its
    /// output stream meanwhile: the server tells the end of the call to that stream only.
    mutating func showInterruption() {
        let interrupted = interruptions.interrupted
        guard snapshot.interrupted != interrupted else { return }
        command(.keepOutput(interrupted))
        update { $0.interrupted = interrupted }
    }
}
