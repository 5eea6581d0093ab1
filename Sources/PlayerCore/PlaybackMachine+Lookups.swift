import Basics
import EngineAPI
import FoundationEssentials

/// Where ``Player`` looks up what a track's stream does not say (see ``TrackLookups``): folders
/// and files on disk, and what only a fetch can tell.
public struct TrackLookupSources: Sendable {
    /// Fetches the `.lrc` file beside an http track (nil: none, or it could not be fetched).
    public var remoteLyrics: (@Sendable (URL) async -> String?)?

    /// Lookups on disk, and through `remoteLyrics` for http tracks.
    public init(remoteLyrics: (@Sendable (URL) async -> String?)? = nil) {
        self.remoteLyrics = remoteLyrics
    }
}

/// What is looked up about the current track beside what its stream says: the art of its folder,
/// a local MP3's length from its bitrate, and its lyrics (a `.lrc` beside it, on disk or fetched
/// for an http track, else its lyrics tag). The shell reads them off the player's executor; the
/// answers come back as inputs, and the machine folds them into the one ``NowPlaying`` every
/// client reads, so no layer above patches what the player publishes.
struct TrackLookups: Sendable, Equatable {
    /// How many folders' answers are remembered.
    static let folderMemory = 256
    /// How many new folders one queue change reads ahead.
    static let folderReadAhead = 32

    /// The art file of each folder read (nil: none, or being read).
    var folders: [String: URL?] = [:]
    /// A length estimated from a local MP3's bitrate, and the track waiting for one.
    var estimate: Estimate?
    var estimatePending: TrackID?
    /// What is known of the current track's lyrics.
    var lyrics = LyricsLookup()

    /// A length estimated for a track (nil: none could be).
    struct Estimate: Sendable, Equatable {
        var id: TrackID
        var length: Duration?
    }

    /// The lyrics read for a track.
    struct LyricsLookup: Sendable, Equatable {
        /// The track they were read for.
        var id: TrackID?
        /// The lyrics tag they were read with (a later tag with other lyrics is read again).
        var tagText: String?
        /// They came from a `.lrc` file beside the track, which wins over any tag.
        var fromSidecar = false
        /// The lyrics (nil: none, or still being read).
        var lyrics: Lyrics?
    }
}

extension PlaybackMachine {
    /// `next` with what the lookups know of its track, asking for what they do not know yet.
    /// Called with every snapshot the machine publishes.
    mutating func completed(_ next: PlayerSnapshot) -> PlayerSnapshot {
        guard settings.looksUp else { return next }
        var next = next
        if queue.entries != snapshot.queue || lookups.folders.isEmpty { readFolders(of: next) }
        guard let track = next.nowPlaying else {
            lookups.lyrics = TrackLookups.LyricsLookup()
            return next
        }
        if let folder = SidecarArt.folder(of: track), let known = lookups.folders[folder], let known {
            next.nowPlaying?.tags.artURL = known
        }
        if track.duration == nil, let length = estimatedLength(of: track) { next.nowPlaying?.duration = length }
        next.nowPlaying?.lyrics = lyrics(of: track)
        return next
    }

    /// Asks for the folders of the current and the queued local tracks not read yet.
    private mutating func readFolders(of next: PlayerSnapshot) {
        var folders: [String] = []
        let entries = (next.nowPlaying.map { [$0.entry] } ?? []) + queue.entries
        for entry in entries where entry.url.isFileURL && folders.count < TrackLookups.folderReadAhead {
            let folder = entry.url.deletingLastPathComponent().path
            guard lookups.folders[folder] == nil, !folders.contains(folder) else { continue }
            folders.append(folder)
        }
        guard !folders.isEmpty else { return }
        if lookups.folders.count + folders.count > TrackLookups.folderMemory { lookups.folders.removeAll() }
        for folder in folders { lookups.folders[folder] = .some(nil) }  // being read: no art until it answers
        emit(.readFolders(folders))
    }

    /// The length estimated for a local MP3 the engine gave none, asking for it the first time.
    private mutating func estimatedLength(of track: NowPlaying) -> Duration? {
        guard track.entry.url.isFileURL, track.entry.url.pathExtension.lowercased() == "mp3" else { return nil }
        let id = track.entry.id
        if let known = lookups.estimate, known.id == id { return known.length }
        if lookups.estimatePending != id {
            lookups.estimatePending = id
            emit(.estimateLength(id, track.entry.url))
        }
        return nil
    }

    /// The track's lyrics as known, asking for them when the track or its lyrics tag is new: its
    /// `.lrc` (on disk; for an http track fetched once, in the background), else the tag.
    private mutating func lyrics(of track: NowPlaying) -> Lyrics? {
        let id = track.entry.id
        let tagText = track.tags.lyrics
        let known = lookups.lyrics.id == id
        if !known || (!lookups.lyrics.fromSidecar && lookups.lyrics.tagText != tagText) {
            lookups.lyrics.id = id
            lookups.lyrics.tagText = tagText
            lookups.lyrics.fromSidecar = false
            if !known { lookups.lyrics.lyrics = nil }
            emit(.readLyrics(id, track.entry.url, tagText: tagText, remote: !known && !track.entry.url.isFileURL))
        }
        return lookups.lyrics.lyrics
    }

    /// Folders answered: the current track shows its folder's art if it has none of its own.
    mutating func foldersRead(_ found: [String: URL?]) {
        for (folder, art) in found { lookups.folders[folder] = .some(art) }
        republish()
    }

    /// A length was estimated for track `id`.
    mutating func lengthEstimated(_ length: Duration?, of id: TrackID) {
        lookups.estimate = TrackLookups.Estimate(id: id, length: length)
        if lookups.estimatePending == id { lookups.estimatePending = nil }
        if let length, snapshot.nowPlaying?.entry.id == id {
            log(.debug, "estimated the length of \(id) from its bitrate: \(length.forPeople)")
        }
        republish()
    }

    /// Lyrics were read for track `id`: kept unless the track changed meanwhile, or other tags were
    /// read (their own read answers), or these come from the tags and a `.lrc` file answered.
    mutating func lyricsRead(_ lyrics: Lyrics?, of id: TrackID, tagText: String?, fromSidecar: Bool) {
        guard lookups.lyrics.id == id,
            fromSidecar || (lookups.lyrics.tagText == tagText && !lookups.lyrics.fromSidecar)
        else { return }
        lookups.lyrics.lyrics = lyrics
        lookups.lyrics.fromSidecar = fromSidecar
        if let lyrics {
            log(
                .debug,
                "lyrics of \(id): \(lyrics.lines.count) timed lines\(fromSidecar ? " from a .lrc file" : " from the tags")"
            )
        }
        republish()
    }

    /// Publishes the snapshot again with what the lookups now know.
    private mutating func republish() {
        update { _ in }
    }
}
