import EngineAPI
import FoundationEssentials

/// What a read of a queued track's bytes found.
public struct ReadTags: Sendable, Equatable {
    /// The tags, as the file holds them (the player cleans them).
    public var tags: TrackTags
    /// The length, when the read could tell.
    public var duration: Duration?

    /// Creates a result.
    public init(tags: TrackTags, duration: Duration? = nil) {
        self.tags = tags
        self.duration = duration
    }
}

/// Reads the tags of a queued track whose bytes are on this machine (a local file, or a complete
/// cached copy of an http track), away from the player's executor: the player asks for one at a
/// time, for the entries ``QueueTagPolicy`` chooses.
public protocol QueueTagReader: Sendable {
    /// Whether every byte of `url` is on this machine now (a local file, a complete cached copy),
    /// so a read would fetch nothing. Cheap, opens nothing; called on the player's executor.
    func holdsAllBytes(of url: URL) -> Bool
    /// The tags and length of `url`; nil when its bytes are not all here, or when they cannot be
    /// read in time (not audio, damaged, too slow).
    func read(_ url: URL) async -> ReadTags?
}

/// One queued entry as the tag read-ahead sees it.
public struct QueueTagCandidate: Sendable, Equatable {
    /// The entry.
    public var id: TrackID
    /// Its bytes are on this machine: a local file, or a complete cached copy.
    public var local: Bool
    /// The queue shows tags for it already (heard while it played, or read before).
    public var known: Bool
    /// A read of it was tried already (it found nothing, failed or ran out of time).
    public var tried: Bool

    /// Creates a candidate.
    public init(id: TrackID, local: Bool, known: Bool = false, tried: Bool = false) {
        self.id = id
        self.local = local
        self.known = known
        self.tried = tried
    }
}

/// What the queue shows of each entry's tags, and which entry has its tags read next. Pure:
/// the player feeds it the queue and performs what it says.
public enum QueueTagPolicy {
    /// How many entries after the current one (in play order) have their tags read ahead: a
    /// queue of a thousand files costs reads only as playback nears them.
    public static let window = 20

    /// The most artists an entry keeps: enough for any queue line, and an entry of a long
    /// queue stays small whatever the file holds.
    public static let maximumArtists = 4

    /// The entry whose tags are read next: the first of `candidates` (in the order they will
    /// play) that is local, shows no tags and was not tried; nil while a read runs, since reads
    /// go one at a time.
    public static func next(_ candidates: [QueueTagCandidate], reading: Bool) -> TrackID? {
        guard !reading else { return nil }
        return candidates.first { $0.local && !$0.known && !$0.tried }?.id
    }

    /// `entry` with the tags and length heard while it played (the playing pipeline's, which
    /// know best): they replace what was read ahead, field by field.
    public static func heard(_ tags: TrackTags, duration: Duration?, in entry: QueueEntry) -> QueueEntry {
        var entry = entry
        let shown = shown(tags).sanitized()  // cut first: lyrics of a megabyte are not cleaned for nothing
        let merged = shown.isEmpty ? entry.tags : (entry.tags ?? TrackTags()).merging(shown)
        entry.tags = merged.flatMap { $0.isEmpty ? nil : $0 }
        entry.duration = usable(duration) ?? entry.duration
        return entry
    }

    /// `entry` with what a read ahead found, cleaned as the engine's tags are: it fills only
    /// what is not known yet, so tags heard while the track played are never replaced.
    public static func read(_ found: ReadTags, into entry: QueueEntry) -> QueueEntry {
        var entry = entry
        let shown = shown(found.tags).sanitized()
        let merged = shown.merging(entry.tags ?? TrackTags())
        entry.tags = merged.isEmpty ? entry.tags : merged
        entry.duration = entry.duration ?? usable(found.duration)
        return entry
    }

    /// The fields a queue shows: title, the first artists, album.
    static func shown(_ tags: TrackTags) -> TrackTags {
        var shown = TrackTags()
        shown.title = tags.title
        shown.artists = Array(tags.artists.prefix(maximumArtists))
        shown.album = tags.album
        return shown
    }

    /// A length worth showing: positive (a read of a damaged file reports zero or less).
    private static func usable(_ duration: Duration?) -> Duration? {
        duration.flatMap { $0 > .zero ? $0 : nil }
    }
}
