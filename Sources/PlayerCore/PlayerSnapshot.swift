import Basics
import ByteSourceAPI
import EngineAPI
import FoundationEssentials

/// MPRIS's three playback states, which are also the player's.
public enum PlaybackStatus: String, Sendable, Equatable {
    /// Audio is playing.
    case playing = "Playing"
    /// A track is current and paused (or restored from the last session, not yet loaded).
    case paused = "Paused"
    /// Nothing is playing; Play starts the current track from its beginning.
    case stopped = "Stopped"
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
    /// The track's lyrics, parsed: set by whoever reads them (the MPRIS layer, off the player's
    /// executor, from a `.lrc` file or the tags); the player itself leaves them nil.
    public var lyrics: Lyrics?
    /// The station and the song heard, when the track is a live stream (internet radio).
    public var live: LiveListening?
    /// The variant of its presentation the track plays (an HLS master playlist's), if any.
    public var variant: StreamVariant?

    /// Creates what is known of a playing entry.
    public init(entry: QueueEntry, tags: TrackTags, duration: Duration?, seekable: Bool = false) {
        self.entry = entry
        self.tags = tags
        self.duration = duration
        self.seekable = seekable
    }

    /// A title to show: the tag, else the playlist's title, else the file name. Playlist titles
    /// and file names hold anything tags can (a NUL, which no D-Bus string may carry, control
    /// characters): they are cleaned as tags are.
    public var displayTitle: String {
        if let live {
            if let song = live.song.flatMap({ TagText.clean($0.title) }) { return song }
            if let station = stationName { return station }
        }
        if let title = tags.title, !title.isEmpty { return title }
        if let title = entry.title.flatMap({ TagText.clean($0) }) { return title }
        let name = entry.url.lastPathComponent
        let decoded = name.isEmpty ? entry.url.absoluteString : removingPercentEncoding(name) ?? name
        return TagText.clean(decoded) ?? entry.url.absoluteString
    }
}

/// A live stream as it is heard: its station and the song on air, if the station names one.
public struct LiveListening: Sendable, Equatable {
    /// The station's facts, from its origin.
    public var station: LiveStation
    /// The song heard now; nil before the first title or when the station names none.
    public var song: StreamTitle?
    /// When what is heard went on air, for a stream that dates its audio (HLS's
    /// `EXT-X-PROGRAM-DATE-TIME`); nil otherwise.
    public var aired: LiveAiring?

    /// Creates what is heard of `station`.
    public init(station: LiveStation, song: StreamTitle? = nil, aired: LiveAiring? = nil) {
        self.station = station
        self.song = song
        self.aired = aired
    }
}

/// When a live stream's audio went on air: the date of what was heard at `position`; what is
/// heard later went on air as much later.
public struct LiveAiring: Sendable, Equatable {
    /// When the audio heard at `position` went on air.
    public var date: Date
    /// The track's position then.
    public var position: Duration

    /// Creates the pairing.
    public init(date: Date, position: Duration) {
        self.date = date
        self.position = position
    }

    /// When the audio heard at `later` went on air.
    public func date(at later: Duration) -> Date {
        date.addingTimeInterval((later - position).inSeconds)
    }
}

extension NowPlaying {
    /// The station's name to show: the origin's (`icy-name`), else the title the playlist gave
    /// the entry, else the host. Nil for a track that is not a live stream.
    public var stationName: String? {
        guard let live else { return nil }
        if let name = live.station.name.flatMap({ TagText.clean($0) }) { return name }
        if let title = entry.title.flatMap({ TagText.clean($0) }) { return title }
        return entry.url.host ?? entry.url.absoluteString
    }

    /// The tags to show: the stream's own, except for a live stream, whose artist is the song's
    /// (never the previous song's or station's), whose album is the station and whose genre is
    /// the station's.
    public var shownTags: TrackTags {
        guard let live else { return tags }
        var shown = tags
        shown.title = displayTitle
        shown.artists = live.song?.artist.flatMap { TagText.clean($0) }.map { [$0] } ?? []
        shown.album = stationName
        shown.albumArtists = []
        if let genre = live.station.genre.flatMap({ TagText.clean($0) }) { shown.genres = [genre] }
        shown.trackNumber = nil
        shown.discNumber = nil
        return shown
    }
}

/// Everything a client may show about the player, as one value.
public struct PlayerSnapshot: Sendable, Equatable {
    /// Playing, paused or stopped.
    public var status: PlaybackStatus = .stopped
    /// The current track, if any.
    public var nowPlaying: NowPlaying?
    /// The queue in list order.
    public var queue: [QueueEntry] = []
    /// Output volume, 0.0–1.0.
    public var volume: Double = 1.0
    /// Playback rate (1.0 is normal speed).
    public var rate: Double = 1.0
    /// The slowest rate offered.
    public var minimumRate: Double = 1.0
    /// The fastest rate offered.
    public var maximumRate: Double = 1.0
    /// Loop mode.
    public var loop: LoopMode = .none
    /// Shuffle on or off.
    public var shuffle = false
    /// Whether the queue holds anything.
    public var hasTracks: Bool { !queue.isEmpty }
    /// Whether Next has somewhere to go.
    public var canGoNext = false
    /// Whether Previous has somewhere to go.
    public var canGoPrevious = false
    /// The last playback error, for clients to show; cleared when a track plays.
    public var lastError: String?
    /// Playback waits for bytes from the network.
    public var buffering = false
    /// Metered rules are in force (``MeteredNetwork``): preload and read-ahead are limited.
    public var metered = false
    /// Paused because the sound server gave another stream precedence (a call); playback goes on
    /// when the server allows it, unless the listener acts first (see ``InterruptionPolicy``).
    public var interrupted = false

    /// Creates the idle snapshot.
    public init() {}
}

/// What observers of the player hear.
public enum PlayerUpdate: Sendable, Equatable {
    /// The snapshot changed.
    case changed(PlayerSnapshot)
    /// The position jumped (seek, loop restart, resumed start); playback continues from `position`.
    case seeked(Duration)
}
