import Basics
import EngineAPI
import FoundationEssentials

/// Everything that can happen to the player, as input to ``PlaybackMachine``: the listener's
/// commands, the engine's events, the timers the shell runs for it, and what the preloader and
/// the tag reader report back.
public enum PlaybackInput: Sendable {
    /// The saved session, restored paused and not loaded (its art already checked on disk).
    case restore(SavedSession)
    /// Replaces the queue with these items and plays the first.
    case open([TrackItem])
    /// Adds items after an entry (nil: at the end; `atStart`: before everything); nothing starts,
    /// unless `play`: then the first of them plays, in the same step.
    case add([TrackItem], after: TrackID?, atStart: Bool, play: Bool = false)
    /// Removes an entry; removing the current one moves on, keeping play/pause.
    case remove(TrackID)
    /// Moves an entry to a list position.
    case move(TrackID, to: Int)
    /// Empties the queue and stops.
    case clear
    /// Makes an entry current and plays it.
    case jump(TrackID)
    /// Sets the loop mode.
    case setLoop(LoopMode)
    /// Turns shuffle on or off.
    case setShuffle(Bool)
    /// Starts or resumes playback.
    case play
    /// Pauses playback.
    case pause
    /// Pauses when playing, plays otherwise.
    case playPause
    /// Stops; the current track stays current and plays from 0 on Play.
    case stop
    /// The next track in play order.
    case next
    /// The start of the track after its first 3 s, else the previous track.
    case previous
    /// Seeks to a position in the current track.
    case seek(to: Duration)
    /// Moves the position by an offset (MPRIS `Seek`).
    case seekBy(Duration)
    /// Moves to a position in a named track (MPRIS `SetPosition`).
    case setPosition(TrackID, Duration)
    /// Sets the rate (0 pauses).
    case setRate(Double)
    /// Sets the volume.
    case setVolume(Double)
    /// Metered rules on or off.
    case setMetered(Bool)
    /// Saves everything and stops the engine.
    case shutdown
    /// Saves the position and the session now.
    case saveNow
    /// An event of the engine (its tags already made fit to show).
    case engine(EngineEvent)
    /// The periodic save while playing is due.
    case saveDue
    /// A failed track's retry is due (its delay passed, or the network came back).
    case retryDue(TrackID)
    /// The preload plan says whether the engine gets the following track now.
    case preloadPlanned(handOverNext: Bool, following: TrackID?)
    /// A tag read of a queued entry ended (nil: nothing could be read).
    case tagsRead(ReadTags?, of: TrackID)
    /// Folders were read for their art file (nil: none).
    case foldersRead([String: URL?])
    /// A local MP3's length was estimated from its bitrate (nil: it could not be).
    case lengthEstimated(Duration?, of: TrackID)
    /// A track's lyrics were read: `fromSidecar` from a `.lrc` file beside it, else from
    /// `tagText`, the lyrics tag they were asked with.
    case lyricsRead(Lyrics?, of: TrackID, tagText: String?, fromSidecar: Bool)
}

/// What ``PlaybackMachine`` asks its shell to do, in order.
public enum PlaybackEffect: Sendable, Equatable {
    /// A command to the engine.
    case engine(EngineCommand)
    /// Tell observers.
    case publish(PlayerUpdate)
    /// Remember a track's position.
    case savePosition(SavedPosition)
    /// Forget the position saved under a key.
    case forgetPosition(key: String)
    /// Remember the session.
    case saveSession(SavedSession)
    /// Add a song heard on a live stream to the history (``HeardSong``). The machine keeps no
    /// clock: the shell dates the song as it carries this out, which is when its title is heard.
    case recordHeard(station: String, artist: String?, title: String, url: URL)
    /// Wait until every save asked for is stored.
    case flushMemory
    /// Start (true) or stop the periodic save while playing; each save comes back as
    /// ``PlaybackInput/saveDue``.
    case periodicSaves(Bool)
    /// Send ``PlaybackInput/retryDue(_:)`` for the track after the delay.
    case retry(TrackID, after: Duration)
    /// Watch the network and send ``PlaybackInput/retryDue(_:)`` once the URL's host is
    /// reachable (or after 30 s, in case the interfaces do not tell).
    case waitForNetwork(TrackID, URL)
    /// Stop watching the network.
    case stopWaitingForNetwork
    /// Plan the preload now (the plan comes back as ``PlaybackInput/preloadPlanned(handOverNext:following:)``).
    case planPreload
    /// Nothing is loaded: no preloading.
    case stopPreload
    /// Read the tags of a queued entry (the result comes back as ``PlaybackInput/tagsRead(_:of:)``).
    case readTags(TrackID, URL)
    /// Read these folders for their art files (``PlaybackInput/foldersRead(_:)``).
    case readFolders([String])
    /// Estimate a local MP3's length from its bitrate (``PlaybackInput/lengthEstimated(_:of:)``).
    case estimateLength(TrackID, URL)
    /// Read a track's lyrics: its `.lrc`, else `tagText`; with `remote`, also fetch the `.lrc`
    /// beside an http track (each answer is a ``PlaybackInput/lyricsRead(_:of:tagText:fromSidecar:)``).
    case readLyrics(TrackID, URL, tagText: String?, remote: Bool)
    /// A log line.
    case log(LogLevel, String)
}

/// A command for the ``PlaybackEngine``, as data.
public enum EngineCommand: Sendable, Equatable {
    /// `load(_:at:playing:)`.
    case load(EngineTrack, at: Duration, playing: Bool)
    /// `setNext(_:)`.
    case setNext(EngineTrack?)
    /// `play()`.
    case play
    /// `pause()`.
    case pause
    /// `stop()`.
    case stop
    /// `shutdown()`.
    case shutdown
    /// `seek(to:)`.
    case seek(Duration)
    /// `setRate(_:)`.
    case setRate(Double)
    /// `setVolume(_:)`.
    case setVolume(Double)
    /// `keepOutput(_:)`.
    case keepOutput(Bool)
}

/// What ``PlaybackMachine`` reads of the world while it decides: the engine's position, saved
/// positions, whether the network reaches a host, whether a track's bytes are all here. Read at
/// the moment of the step, never stored; tests pass plain values.
public struct PlaybackWorld: Sendable {
    /// The engine's position in its track (nil: nothing loaded).
    public var enginePosition: @Sendable () -> Duration?
    /// The position heard at the output (nil: not known).
    public var heardPosition: @Sendable () -> Duration?
    /// The position saved under a key.
    public var savedPosition: @Sendable (String) -> SavedPosition?
    /// Whether a URL's host can be reached at all.
    public var networkUp: @Sendable (URL) -> Bool
    /// Whether every byte of a URL is here, so its tags can be read without the network.
    public var holdsAllBytes: @Sendable (URL) -> Bool

    /// A world of these answers.
    public init(
        enginePosition: @escaping @Sendable () -> Duration? = { nil },
        heardPosition: (@Sendable () -> Duration?)? = nil,
        savedPosition: @escaping @Sendable (String) -> SavedPosition? = { _ in nil },
        networkUp: @escaping @Sendable (URL) -> Bool = { _ in true },
        holdsAllBytes: @escaping @Sendable (URL) -> Bool = { _ in false }
    ) {
        self.enginePosition = enginePosition
        self.heardPosition = heardPosition ?? enginePosition
        self.savedPosition = savedPosition
        self.networkUp = networkUp
        self.holdsAllBytes = holdsAllBytes
    }
}

/// What one input to ``PlaybackMachine`` led to.
public struct PlaybackStep: Sendable, Equatable {
    /// What the shell carries out, in order.
    public var effects: [PlaybackEffect] = []
    /// Why a seek could not be honoured (nil: applied, or not a seek).
    public var refusal: String?
    /// The ids of entries an `add` created.
    public var added: [TrackID] = []

    /// An empty step.
    public init() {}
}
