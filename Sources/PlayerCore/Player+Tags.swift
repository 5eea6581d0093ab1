import EngineAPI
import FoundationEssentials

/// The player's side of the tag read-ahead: the reader, and which reads ran.
struct QueueTagReads {
    /// Reads the tags of local and completely cached tracks; nil: only played tracks show tags.
    let reader: (any QueueTagReader)?
    /// The entry being read (one at a time).
    var reading: TrackID?
    /// Entries read or tried already, so a file that cannot be read is not tried again.
    var tried: Set<TrackID> = []
}

/// Tags the queue shows for entries other than the playing one: remembered from playing them,
/// and read ahead from the bytes of upcoming local and cached tracks.
extension Player {
    /// `tags` merged into `known`, but the first bitrate stays: decoders re-estimate it
    /// several times a second, and every new value would reach every client as new metadata.
    static func merge(_ tags: TrackTags, into known: TrackTags) -> TrackTags {
        var tags = tags
        if known.bitrate != nil { tags.bitrate = nil }
        return known.merging(tags)
    }

    /// Tags the engine read for the prepared next track before its audio started: its entry
    /// shows them at once (and keeps the title in the saved session).
    func heardAhead(_ tags: TrackTags, of id: TrackID) {
        if let title = tags.title, !title.isEmpty, queue.entry(id)?.title != title { queue.setTitle(title, of: id) }
        if let entry = queue.entry(id) {
            let heard = QueueTagPolicy.heard(tags, duration: nil, in: entry)
            queue.setTags(heard.tags, duration: heard.duration, of: id)
        }
        update { _ in }
    }

    /// Copies what is known of the playing track into its queue entry, so it still shows
    /// once another track plays. Called with every snapshot the player publishes.
    func rememberShownTags(_ playing: NowPlaying?) {
        guard let playing, let entry = queue.entry(playing.entry.id) else { return }
        guard !playing.tags.isEmpty || playing.duration != nil else { return }
        let heard = QueueTagPolicy.heard(playing.tags, duration: playing.duration, in: entry)
        if heard != entry { queue.setTags(heard.tags, duration: heard.duration, of: entry.id) }
    }

    /// Starts the next tag read the policy asks for, if any: the current entry while it is not
    /// loaded, then the upcoming ones in play order. Cheap when there is nothing to read. Not
    /// while a loaded track waits for its first audio: a read takes a core and the disk, and on
    /// two cores it would share them with the start.
    func readAheadTags() {
        guard let reader = tagReads.reader, tagReads.reading == nil else { return }
        if let loaded = loadedID, startedID != loaded { return }
        var ids = queue.upcoming(QueueTagPolicy.window)
        if loadedID == nil, let current = queue.currentID { ids.insert(current, at: 0) }
        let candidates = ids.compactMap { id -> QueueTagCandidate? in
            guard let entry = queue.entry(id) else { return nil }
            let tried = tagReads.tried.contains(id)
            let known = entry.tags?.title != nil
            // Whether the bytes are here is asked only of entries still to read (a cache lookup).
            let local = !tried && !known && reader.holdsAllBytes(of: entry.url)
            return QueueTagCandidate(id: id, local: local, known: known, tried: tried)
        }
        guard let id = QueueTagPolicy.next(candidates, reading: false), let url = queue.entry(id)?.url else { return }
        tagReads.reading = id
        tagReads.tried.insert(id)
        Task { [weak self] in
            let found = await reader.read(url)
            await self?.tagsRead(found, of: id)
        }
    }

    /// A read ended: its entry shows what it found, and the next read starts.
    private func tagsRead(_ found: ReadTags?, of id: TrackID) {
        tagReads.reading = nil
        let present = Set(queue.entries.map(\.id))
        tagReads.tried = tagReads.tried.filter(present.contains)
        if let found, let entry = queue.entry(id) {
            let read = QueueTagPolicy.read(found, into: entry)
            if read != entry {
                queue.setTags(read.tags, duration: read.duration, of: id)
                update { state in
                    // A current entry not yet loaded shows them too (its own tags come when it plays).
                    guard let now = state.nowPlaying, now.entry.id == id, self.loadedID != id else { return }
                    state.nowPlaying?.tags = (read.tags ?? TrackTags()).merging(now.tags)
                    state.nowPlaying?.duration = now.duration ?? read.duration
                }
            }
        }
        readAheadTags()
    }
}
