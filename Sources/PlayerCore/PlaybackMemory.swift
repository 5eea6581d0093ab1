import EngineAPI
import FoundationEssentials
import Synchronization

/// Where a listener was in one track, keyed by the track's cache key (not its raw URL).
public struct SavedPosition: Sendable, Equatable, Codable {
    /// The track's stable key (its cache key: signed-URL tokens removed).
    public var key: String
    /// Where playback was.
    public var position: Duration
    /// The track's length then, when known.
    public var duration: Duration?
    /// The rate it was played at.
    public var rate: Double
    /// Whether the track was played to its end.
    public var finished: Bool

    /// Creates a saved position.
    public init(key: String, position: Duration, duration: Duration?, rate: Double, finished: Bool) {
        self.key = key
        self.position = position
        self.duration = duration
        self.rate = rate
        self.finished = finished
    }
}

/// The whole session, restored paused when the daemon starts.
public struct SavedSession: Sendable, Equatable, Codable {
    /// One queue entry as saved.
    public struct Entry: Sendable, Equatable, Codable {
        /// What to play.
        public var url: URL
        /// A title known before playing.
        public var title: String?
        /// What the queue showed of its tags, and its length: read or heard once, never probed
        /// again after a restart. Absent in sessions of older versions.
        public var tags: TrackTags?
        public var duration: Duration?
        /// A station's other addresses, tried in turn when one fails; absent when none.
        public var mirrors: [URL]?
        /// Creates an entry.
        public init(
            url: URL, title: String?, tags: TrackTags? = nil, duration: Duration? = nil, mirrors: [URL]? = nil
        ) {
            self.url = url
            self.title = title
            self.tags = tags
            self.duration = duration
            self.mirrors = mirrors
        }
    }

    /// The format version, so that an older daemon never misreads a newer file.
    public var version = 1
    /// Queue entries in list order.
    public var entries: [Entry]
    /// The list index of the current entry.
    public var currentIndex: Int?
    /// Position in the current entry.
    public var position: Duration
    /// Loop mode.
    public var loop: LoopMode
    /// Shuffle on or off.
    public var shuffle: Bool
    /// Playback rate.
    public var rate: Double
    /// Volume.
    public var volume: Double
    /// The current track's tags as last shown, so a restored session names it before Play.
    public var currentTags: TrackTags?
    /// The current track's length, when it was known.
    public var currentDuration: Duration?

    /// Creates a session record.
    public init(
        entries: [Entry], currentIndex: Int?, position: Duration, loop: LoopMode, shuffle: Bool, rate: Double,
        volume: Double, currentTags: TrackTags? = nil, currentDuration: Duration? = nil
    ) {
        self.currentTags = currentTags
        self.currentDuration = currentDuration
        self.entries = entries
        self.currentIndex = currentIndex
        self.position = position
        self.loop = loop
        self.shuffle = shuffle
        self.rate = rate
        self.volume = volume
    }
}

/// Stores resume positions, the session and the songs heard on internet radio. Calls are cheap
/// (the history's read excepted) and never throw:
/// a store that cannot write logs and carries on, because losing a position is
/// better than stopping the music.
public protocol PlaybackMemory: Sendable {
    /// The saved position of the track with this key.
    func position(forKey key: String) -> SavedPosition?
    /// Saves (replaces) a track's position.
    func save(_ position: SavedPosition)
    /// Forgets a track's position.
    func forgetPosition(forKey key: String)
    /// The saved session, if any.
    func session() -> SavedSession?
    /// Saves (replaces) the session.
    func save(_ session: SavedSession)
    /// Returns once every save asked for so far is stored (before the system sleeps, at quit).
    func flush()
    /// ``flush()`` for a caller that awaits: it holds no thread while the store writes.
    func written() async
    /// Adds a song heard on a live stream to the history, which keeps the newest
    /// ``HeardSong/historyLimit``.
    func recordHeard(_ song: HeardSong)
    /// The songs heard, newest first, at most `limit`. It may wait for writes in flight: call it
    /// off the player's executor (``Player/heardSongs(limit:)`` does).
    func heardSongs(limit: Int) -> [HeardSong]
}

extension PlaybackMemory {
    /// A memory that stores as it is asked has nothing to wait for.
    public func flush() {}
    /// A memory that stores as it is asked has nothing to wait for.
    public func written() async {}
    /// A memory without a history forgets the song.
    public func recordHeard(_ song: HeardSong) {}
    /// A memory without a history has heard nothing.
    public func heardSongs(limit: Int) -> [HeardSong] { [] }
}

/// A memory that lives only as long as the process: for tests and for when the
/// state directory cannot be used.
public final class TransientMemory: PlaybackMemory {
    private let state = Mutex<(positions: [String: SavedPosition], session: SavedSession?)>(([:], nil))
    /// The songs heard, oldest first.
    private let heard = Mutex<[HeardSong]>([])

    /// Creates an empty memory.
    public init() {}

    /// The saved position of the track with this key.
    public func position(forKey key: String) -> SavedPosition? { state.withLock { $0.positions[key] } }
    /// Saves a track's position.
    public func save(_ position: SavedPosition) { state.withLock { $0.positions[position.key] = position } }
    /// Forgets a track's position.
    public func forgetPosition(forKey key: String) { state.withLock { _ = $0.positions.removeValue(forKey: key) } }
    /// The saved session.
    public func session() -> SavedSession? { state.withLock { $0.session } }
    /// Saves the session.
    public func save(_ session: SavedSession) { state.withLock { $0.session = session } }
    /// Adds a song heard; beyond ``HeardSong/historyLimit`` the oldest is forgotten.
    public func recordHeard(_ song: HeardSong) {
        heard.withLock { songs in
            songs.append(song)
            if songs.count > HeardSong.historyLimit { songs.removeFirst(songs.count - HeardSong.historyLimit) }
        }
    }
    /// The songs heard, newest first, at most `limit`.
    public func heardSongs(limit: Int) -> [HeardSong] { heard.withLock { Array($0.suffix(max(0, limit)).reversed()) } }
}

/// Settings of the resume rules.
public struct ResumePolicy: Sendable, Equatable {
    /// Positions earlier than this are not worth resuming.
    public var minimum: Duration = .seconds(5)
    /// Positions closer than this to the end count as finished.
    public var endMargin: Duration = .seconds(10)
    /// How far before the saved position playback resumes, so the listener finds their place.
    public var rewind: Duration = .seconds(2)
    /// How often the position is saved while playing. A crash may lose at most 5 s;
    /// 4 s leaves room for the timer's drift and the write itself (the timer restarts
    /// after each save, so at 5 s a kill just before a save could lose a little more).
    public var saveInterval: Duration = .seconds(4)

    /// The wall-clock time between saves at `rate`: `saveInterval` bounds the *media*
    /// time a crash loses, so faster playback saves more often (slower, never less often).
    public func saveInterval(atRate rate: Double) -> Duration {
        rate > 1 ? saveInterval / rate : saveInterval
    }

    /// The defaults.
    public init() {}

    /// Where to start a track with this saved position; nil to start at 0.
    public func startPosition(for saved: SavedPosition) -> Duration? {
        guard !saved.finished, saved.position >= minimum else { return nil }
        if let duration = saved.duration, saved.position > duration - endMargin { return nil }
        return max(.zero, saved.position - rewind)
    }
}
