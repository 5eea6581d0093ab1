import ByteSourceAPI
import EngineAPI
import FoundationEssentials

/// What an engine event means for the player, decided from which of its tracks the event is
/// about: the loaded one, the one prepared to follow it, or the one the engine committed to at
/// about-to-finish. Pure: `PlaybackMachine.handle` carries out the route and decides nothing about
/// which track an event concerns. Table-tested.
enum EngineEventRoute: Equatable, Sendable {
    /// The loaded track was queued as its own follower: loop Track restarts it at its end.
    case loopRestartQueued
    /// The engine committed the prepared track as the next one (about-to-finish).
    case committed(TrackID)
    /// The engine restarted the loaded track for loop Track, which was turned off since: the
    /// track ended.
    case loopRestartAbandoned(TrackID)
    /// The loaded track's audio started; `restarted`: again, for loop Track.
    case started(TrackID, restarted: Bool)
    /// The prepared track, the queue's next, took over without a gap.
    case handedOver(TrackID)
    /// The engine went on with the track it had committed to, but the queue changed since (an
    /// insert, a removal, loop or shuffle): the loaded track ended, and what follows it now loads.
    case committedTrackStale(ended: TrackID?)
    /// The loaded track's tags and length.
    case described(TrackTags, duration: Duration?)
    /// The prepared track's tags, heard before its audio started.
    case describedAhead(TrackID, TrackTags)
    /// The loaded track waits for bytes (true), or no longer.
    case buffering(Bool)
    /// Whether the loaded track can seek.
    case seekable(TrackID, Bool)
    /// Whether another track can seek, kept for when it plays.
    case seekableAhead(TrackID, Bool)
    /// The loaded track is a live stream of this station.
    case live(TrackID, LiveStation)
    /// Another track is a live stream, kept for when it plays.
    case liveAhead(TrackID, LiveStation)
    /// The loaded track plays this variant of its presentation.
    case variant(TrackID, StreamVariant)
    /// A prepared track will play this variant when it starts.
    case variantAhead(TrackID, StreamVariant)
    /// The loaded live stream's song is heard.
    case streamTitle(StreamTitle)
    /// The loaded live stream's audio heard at `heardAt` went on air at `date`.
    case programDate(Date, heardAt: Duration)
    /// A seek of the loaded track landed.
    case seeked(Duration)
    /// The loaded track played to its end.
    case ended(TrackID)
    /// The loaded track (or, without an id, whatever is loaded) failed.
    case failed(TrackID?, EngineError)
    /// The sound server asks the output to pause or play again.
    case soundServer(SoundServerRequest)
    /// About no track the player has, or nothing it acts on.
    case ignored

    /// The player's tracks an event may be about.
    struct Tracks: Equatable, Sendable {
        /// The track in the engine.
        var loaded: TrackID?
        /// The track the engine was given to follow it.
        var prepared: TrackID?
        /// The track the engine committed to at about-to-finish.
        var committed: TrackID?
        /// The loaded track was queued as its own follower (loop Track).
        var loopRestartQueued = false
        /// What the queue plays after the loaded track when it ends.
        var upcoming: TrackID?
    }

    /// The route of `event` given the player's `tracks`.
    static func route(_ event: EngineEvent, _ tracks: Tracks) -> EngineEventRoute {
        let loaded = tracks.loaded
        switch event {
        case .nextQueued(let id) where id == loaded && id == tracks.prepared:
            // Only a track prepared as its own follower restarts; a queued event that crossed a
            // Next or a load for the same entry is stale.
            return .loopRestartQueued
        case .nextQueued(let id) where id == tracks.prepared:
            return .committed(id)
        case .trackStarted(let id) where id == loaded && tracks.loopRestartQueued && tracks.upcoming != id:
            return .loopRestartAbandoned(id)
        case .trackStarted(let id) where id == loaded:
            return .started(id, restarted: tracks.loopRestartQueued)
        case .trackStarted(let id) where id == tracks.prepared && tracks.upcoming == id:
            return .handedOver(id)
        case .trackStarted(let id) where id == tracks.committed:
            return .committedTrackStale(ended: loaded)
        case .described(let id, let tags, let duration) where id == loaded:
            return .described(tags, duration: duration)
        case .described(let id, let tags, duration: _) where id == tracks.prepared:
            return .describedAhead(id, tags)
        case .buffering(let id, let waiting) where id == loaded:
            return .buffering(waiting)
        case .seekable(let id, let seekable) where id == loaded:
            return .seekable(id, seekable)
        case .seekable(let id, let seekable):
            return .seekableAhead(id, seekable)
        case .liveStream(let id, let station) where id == loaded:
            return .live(id, station)
        case .liveStream(let id, let station):
            return .liveAhead(id, station)
        case .variant(let id, let variant) where id == loaded:
            return .variant(id, variant)
        case .variant(let id, let variant):
            return .variantAhead(id, variant)
        case .streamTitle(let id, let title) where id == loaded:
            return .streamTitle(title)
        case .programDate(let id, let date, let heardAt) where id == loaded:
            return .programDate(date, heardAt: heardAt)
        case .seeked(let id, let position) where id == loaded:
            return .seeked(position)
        case .endOfTrack(let id) where id == loaded:
            return .ended(id)
        case .failed(let id, let error) where id == nil || id == loaded:
            return .failed(id ?? loaded, error)
        case .soundServerRequest(let request):
            return .soundServer(request)
        default:
            return .ignored
        }
    }
}
