import ByteSourceAPI
import FoundationEssentials

/// Identifies one entry of the play queue for the engine; unique and never reused.
public struct TrackID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The number behind the id.
    public let rawValue: UInt64
    /// Wraps a number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// Orders ids by creation.
    public static func < (lhs: TrackID, rhs: TrackID) -> Bool { lhs.rawValue < rhs.rawValue }
    /// `track N`, for logs.
    public var description: String { "track \(rawValue)" }
}

/// A track as the engine sees it: what to play and how to name it in events.
public struct EngineTrack: Sendable, Equatable {
    /// The queue entry this is.
    public var id: TrackID
    /// A `file://` or `http(s)://` URL.
    public var url: URL

    /// Creates an engine track.
    public init(id: TrackID, url: URL) {
        self.id = id
        self.url = url
    }
}

/// The engine's transport state.
public enum EngineState: Sendable, Equatable {
    /// Nothing loaded.
    case idle
    /// A track is loaded and holds its position.
    case paused
    /// Audio is flowing.
    case playing
}

/// Tags read from a track's stream.
public struct TrackTags: Sendable, Equatable, Codable {
    /// Track title.
    public var title: String?
    /// Track artists, in order.
    public var artists: [String] = []
    /// Album title.
    public var album: String?
    /// Album artists, in order.
    public var albumArtists: [String] = []
    /// Genres.
    public var genres: [String] = []
    /// Track number within its disc.
    public var trackNumber: Int?
    /// Disc number.
    public var discNumber: Int?
    /// Release date as written in the tag (ISO 8601 when possible).
    public var date: String?
    /// Free-form comment.
    public var comment: String?
    /// Nominal bitrate in bits per second.
    public var bitrate: Int?
    /// Embedded cover art, written once to disk (named by content hash).
    public var artURL: URL?
    /// Lyrics (ID3 USLT, Vorbis LYRICS, MP4 ©lyr): plain text or LRC, line breaks kept. Not
    /// saved with the session: they are read again when the track plays.
    public var lyrics: String?

    private enum CodingKeys: String, CodingKey {
        case title, artists, album, albumArtists, genres, trackNumber, discNumber, date, comment, bitrate, artURL
    }

    /// Creates an empty tag set.
    public init() {}

    /// Whether no tag is set.
    public var isEmpty: Bool { self == TrackTags() }

    /// These tags with every field `other` sets taking precedence.
    public func merging(_ other: TrackTags) -> TrackTags {
        var result = self
        result.title = other.title ?? title
        result.artists = other.artists.isEmpty ? artists : other.artists
        result.album = other.album ?? album
        result.albumArtists = other.albumArtists.isEmpty ? albumArtists : other.albumArtists
        result.genres = other.genres.isEmpty ? genres : other.genres
        result.trackNumber = other.trackNumber ?? trackNumber
        result.discNumber = other.discNumber ?? discNumber
        result.date = other.date ?? date
        result.comment = other.comment ?? comment
        result.bitrate = other.bitrate ?? bitrate
        result.artURL = other.artURL ?? artURL
        result.lyrics = other.lyrics ?? lyrics
        return result
    }
}

/// What failed, as far as the engine can tell: the player's failure policy keys on it.
public enum FailureKind: Sendable, Equatable, CaseIterable {
    /// Another try may work: a server error, a connection lost mid-track, an unexplained error.
    case transient
    /// The track is not there: no such file, or the origin says it is gone (404, 410).
    case notFound
    /// Its bytes are no format Spool can play: not audio, or no decoder for it.
    case unsupported
    /// Its bytes are in a known format but broken: a demuxer or decoder gave up on them.
    case corrupt
    /// No connection to the track's server could be made: the server or the network is down.
    case unreachable
    /// The track's server has a new version of it, found just after its play began from the
    /// cached copy: start it again at once, where that play began.
    case newVersion
    /// The audio output failed (the sound server went away, the device vanished, the sink
    /// refused to open): no track is at fault, and the next one would fail the same way.
    case outputLost

    /// Whether trying the same track again cannot help: it is missing, unplayable or broken.
    public var isPermanent: Bool {
        switch self {
        case .notFound, .unsupported, .corrupt: true
        case .transient, .unreachable, .newVersion, .outputLost: false
        }
    }
}

/// Why the engine could not play a track.
public struct EngineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A one-line explanation.
    public let message: String
    /// Whether trying again may help.
    public let kind: FailureKind
    /// Where playback of the track was when it failed (its start, when it failed to open), so a
    /// retry resumes there; nil when unknown.
    public let position: Duration?

    /// Creates an error with a message.
    public init(_ message: String, kind: FailureKind = .transient, position: Duration? = nil) {
        self.message = message
        self.kind = kind
        self.position = position
    }

    /// The message.
    public var description: String { message }
}

/// What the sound server asks of the output stream (PulseAudio's cork and uncork requests,
/// as `module-role-cork` or PipeWire's session manager send them).
public enum SoundServerRequest: Sendable, Equatable {
    /// Another stream takes precedence (a call): the server asks the music to pause.
    case pause
    /// The stream that took precedence ended: the server lets the music play again.
    case play
}

extension PlaybackEngine {
    /// An engine that never lets go of its output while paused has nothing to keep.
    public func keepOutput(_ keep: Bool) {}
}

/// What the engine reports back to the player core. Events are delivered in
/// order on an engine thread; the handler must return quickly.
public enum EngineEvent: Sendable, Equatable {
    /// The transport state changed.
    case stateChanged(EngineState)
    /// Audio of this track started (its first sample reached the pipeline).
    case trackStarted(TrackID)
    /// The prepared next track was handed to the pipeline; it starts when the current one ends.
    case nextQueued(TrackID)
    /// What the track's stream says of it: every tag read so far, and its length once known.
    /// Sent first once the length is known (or the track has settled without one, as a live
    /// stream does), so that a lock screen never shows a title without its length; then again
    /// whenever either changes.
    case described(TrackID, TrackTags, duration: Duration?)
    /// Whether the track can seek: false for a stream whose origin ignores Range
    /// or whose length is unknown.
    case seekable(TrackID, Bool)
    /// The track is a live stream (internet radio) of this station: no length, no end, no
    /// seeking. Sent with ``seekable(_:_:)``.
    case liveStream(TrackID, LiveStation)
    /// The live stream's song changed, at the moment its audio is heard (not when the title
    /// was downloaded); an empty text: the station names no song now.
    case streamTitle(TrackID, StreamTitle)
    /// The live stream's audio heard at position `heardAt` went on air at `date` (an HLS
    /// segment's `EXT-X-PROGRAM-DATE-TIME`), sent as each dated segment is heard.
    case programDate(TrackID, Date, heardAt: Duration)
    /// Playback of the track waits for bytes that are not here yet (true), or no longer (false).
    case buffering(TrackID, Bool)
    /// A seek completed; playback continues from `position`.
    case seeked(TrackID, position: Duration)
    /// The track plays this variant of its presentation (an HLS master playlist's), chosen at
    /// its start and at each switch.
    case variant(TrackID, StreamVariant)
    /// The track played to its end.
    case endOfTrack(TrackID)
    /// The sound server asked the output to pause or to play again: its policy gives another
    /// stream precedence (a call corks the music) and later lets the music go on. Only a
    /// request: the engine changes nothing by itself; the player decides.
    case soundServerRequest(SoundServerRequest)
    /// After a long pause or stop the engine let go of its pipeline and decoders. A paused
    /// track stays loaded: its position is still reported, and play() continues it there.
    case pipelineReleased
    /// The track failed; the engine is idle and reports no position for it any more (the
    /// error carries where it was).
    case failed(TrackID?, EngineError)
}

/// A playback engine: plays one track at a time from Spool's media source.
/// Commands return at once; results come back as ``EngineEvent``s. The player
/// core is written against this protocol so it can be tested with a fake.
public protocol PlaybackEngine: AnyObject, Sendable {
    /// Sets the receiver of events (once, before the first command).
    func setEventHandler(_ handler: @escaping @Sendable (EngineEvent) -> Void)
    /// Replaces whatever is loaded with `track`, starting at `position`, playing or paused.
    func load(_ track: EngineTrack, at position: Duration, playing: Bool)
    /// Prepares the track that follows the loaded one (nil: none), so that it
    /// starts without a gap when the current one ends. ``EngineEvent/trackStarted(_:)``
    /// says when its audio actually starts; no ``EngineEvent/endOfTrack(_:)`` is
    /// sent for the track it follows.
    func setNext(_ track: EngineTrack?)
    /// Sets the playback rate (pitch preserved), clamped to ``supportedRates``.
    func setRate(_ rate: Double)
    /// The rates this engine plays at.
    var supportedRates: ClosedRange<Double> { get }
    /// Starts or resumes audio.
    func play()
    /// Pauses audio, keeping the position.
    func pause()
    /// Keeps the output stream open while paused however long that lasts (true), or lets the
    /// engine release it when idle again (false): a sound server tells the end of an
    /// interruption only to the stream it interrupted.
    func keepOutput(_ keep: Bool)
    /// Unloads the track; the engine becomes idle.
    func stop()
    /// Moves the playback position of the loaded track.
    func seek(to position: Duration)
    /// Sets the output volume, 0.0–1.0.
    func setVolume(_ volume: Double)
    /// The current position of the loaded track, when known. Cheap; any thread.
    func position() -> Duration?
    /// The current position with the track it is heard in: across a gapless hand-over the
    /// previous track's last samples still sound after the switch, and the player learns of
    /// the new track one event later. Cheap; any thread.
    func heardPosition() -> HeardPosition?
    /// Stops everything and frees the pipeline; the engine is unusable afterwards.
    func shutdown()
}

/// A position and the track whose audio it is.
public struct HeardPosition: Sendable, Equatable {
    /// The track heard; nil when the engine does not say.
    public var track: TrackID?
    /// The position in it.
    public var position: Duration

    /// Creates a heard position.
    public init(track: TrackID?, position: Duration) {
        self.track = track
        self.position = position
    }
}

extension PlaybackEngine {
    /// The position without its track, for engines that do not tell.
    public func heardPosition() -> HeardPosition? { position().map { HeardPosition(track: nil, position: $0) } }
}
