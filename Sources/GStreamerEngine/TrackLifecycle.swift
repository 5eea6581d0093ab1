import EngineAPI

/// One load of one track: a load, a prepared next track and a promotion each get a new one.
/// The URI playbin is given names it, and every delayed check and every message routed to a
/// stream carries it; ``TrackLifecycle`` drops what comes for one that is no longer current.
struct LoadTicket: Hashable, Sendable, CustomStringConvertible {
    /// The track loaded.
    let track: TrackID
    /// Unique across the engine's life: two loads of one track differ here.
    let generation: UInt64

    /// `track N/G`, for logs.
    var description: String { "\(track)/\(generation)" }
}

/// The tracks in the pipeline and where each is in its life, as one value: the loaded track
/// (opening, then current with its ``TrackPhase``), the track prepared to follow it (opening,
/// prepared, handed over to playbin), a handed-over track not yet heard, and a next stream
/// that broke. The engine's handlers (commands on the control queue, messages on the bus
/// thread, playbin's streaming-thread callbacks) feed it what happened and carry out what it
/// returns; none of them decides. Pure: tested without GStreamer.
struct TrackLifecycle: Sendable {
    /// What a track's stream said of it: sent once its length and its tags are known (or it
    /// settled without one of them), so that a title never reaches the player without its
    /// length, nor a length without the title that comes just after it (a FLAC's length is in
    /// its first header block, its tags in the next); then at every change.
    struct Description: Equatable, Sendable {
        /// Every tag read so far.
        var tags = TrackTags()
        /// Its length, once the pipeline knows it.
        var duration: Duration?
        /// It was sent: later changes go out as they come.
        var sent = false
        /// The track prerolled, or was handed over a while ago: what is not known by now is sent
        /// without.
        var settled = false

        /// Adds tags read for track `id`: the event that sends the description, once it was sent
        /// before or the length is known (until then the length is awaited).
        mutating func add(_ more: TrackTags, for id: TrackID) -> EngineEvent? {
            tags = tags.merging(more)
            return sent || duration != nil ? send(id) : nil
        }

        /// The length is `length`: the event that sends the description, unless its tags are
        /// still awaited (none yet, and the track has not settled).
        mutating func lengthKnown(_ length: Duration, for id: TrackID) -> EngineEvent? {
            duration = length
            return sent || settled || !tags.isEmpty ? send(id) : nil
        }

        /// The event that sends it, marking it sent.
        mutating func send(_ id: TrackID) -> EngineEvent {
            sent = true
            return .described(id, tags, duration: duration)
        }
    }

    /// The track playbin plays or prerolls.
    struct Loaded: Equatable, Sendable {
        /// Its load.
        let ticket: LoadTicket
        /// What is played.
        let track: EngineTrack
        /// The URI playbin has for it.
        let uri: String
        /// Loading, ready, seeking, or rebuilt for a new rate filter.
        var phase: TrackPhase
        /// Whether its source can seek.
        let seekable: Bool
        /// What its stream said of it.
        var description = Description()
        /// playbin reached PAUSED or PLAYING for it: it started, whatever its phase says.
        var reachedPaused = false
        /// Its start was reported; a track is reported started once per load.
        var announced = false

        /// Its length, once the pipeline knows it.
        var duration: Duration? { description.duration }
    }

    /// The track prepared to follow the loaded one, for the gapless hand-over.
    struct Following: Equatable, Sendable {
        /// Where it is.
        enum Stage: Equatable, Sendable {
            /// Its source is opening.
            case opening
            /// Its source is open; `seekable` says whether it can seek.
            case prepared(seekable: Bool)
            /// Its first bytes are no media type GStreamer knows: playbin is not given it, so the
            /// current track ends normally and the track fails on its own load.
            case unplayable
            /// playbin holds its URI (about-to-finish); its stream has not started.
            case handedOver(seekable: Bool)
        }

        /// Its preparation.
        let ticket: LoadTicket
        /// What follows.
        let track: EngineTrack
        /// The URI playbin gets at the hand-over.
        let uri: String
        /// Where it is.
        var stage: Stage
        /// What its stream said of it before it took over.
        var description = Description()
    }

    /// A track handed over without a gap whose stream started while the previous one's last
    /// samples still sound: its start is reported once it is heard, that is once the previous
    /// track's tail has played and the new stream's first audio has reached the output. A
    /// stream can start and break before it has any audio (a truncated file whose demuxer
    /// finds no index): then the previous track ends, and the new one was never playing.
    struct Unannounced: Equatable, Sendable {
        /// The track that started.
        let track: TrackID
        /// Whether it can seek, reported with its start.
        let seekable: Bool
        /// The track still heard.
        let previous: TrackID?
        /// The previous track's length, the position reported while its end sounds (nil: none).
        let previousEnd: Duration?
        /// The previous track's last samples have played.
        var tailPlayed = false
        /// Its stream broke before it was heard: the previous track's end is reported instead.
        var broke = false
    }

    /// What a load or a stop lets go of.
    struct Teardown: Equatable, Sendable {
        /// The URIs whose feeders are detached.
        var uris: [String] = []
        /// A track was in playbin: the pipeline goes to NULL.
        var stopsPipeline = false
    }

    /// What the engine does with a load.
    struct LoadPlan: Equatable, Sendable {
        /// The new load.
        let ticket: LoadTicket
        /// What goes.
        let teardown: Teardown
        /// The prepared next track's URI when the load is of that track: its open source is
        /// started as it is, without a new open.
        let promoted: String?
    }

    /// What a new next track (or none) changes.
    struct NextPlan: Equatable, Sendable {
        /// The URI of the next track given up (its feeder is detached), if any.
        var dropped: String?
        /// The new next track's preparation, whose source is opened.
        var opening: Following?
    }

    /// What a stream start means.
    enum StreamStart: Equatable, Sendable {
        /// The loaded track's stream started: report it.
        case first(TrackID)
        /// The next track took over without a gap and is now the loaded one. It is heard after
        /// `audibleIn`; the previous track's feeder (`previousURI`) is done.
        case handedOver(Loaded, previousURI: String?, audibleIn: Duration)
        /// Another stream's (a rebuild's restart, a track already reported, a stale one).
        case none
    }

    /// Where an error posted by a stream goes.
    enum ErrorRoute: Equatable, Sendable {
        /// The next track's stream broke while the current one plays; the current one goes on.
        case next(uri: String, track: TrackID?)
        /// The loaded track failed.
        case current(LoadTicket)
        /// The handed-over track's stream broke before it was heard (see ``startBroke(_:)``).
        case startBroke(LoadTicket)
        /// Nothing is loaded.
        case none
    }

    /// A pipeline state, as the bus reports it.
    enum PipelineState: Comparable, Sendable {
        case null, ready, paused, playing
    }

    private var issued: UInt64 = 0
    /// The newest load whose source is opening; its open result starts it.
    private(set) var opening: LoadTicket?
    /// The track in playbin.
    private(set) var current: Loaded?
    /// The track prepared to follow it.
    private(set) var next: Following?
    /// A handed-over track started but not heard yet.
    private(set) var unannounced: Unannounced?
    /// The URI of a next stream that broke and was dropped: its further errors are its own.
    private(set) var dropped: String?
    /// The listener wants audio: a prerolled track plays.
    var wantPlaying = false

    /// Whether playbin holds the next track's URI (handed over at about-to-finish).
    var isHandedOver: Bool {
        if case .handedOver = next?.stage { return true }
        return false
    }

    private mutating func issue(_ track: TrackID) -> LoadTicket {
        issued &+= 1
        return LoadTicket(track: track, generation: issued)
    }

    // MARK: Loads

    /// A load of `track`: everything in the pipeline goes, except the prepared next track when
    /// it is `track` and its source is open, which is promoted.
    mutating func load(_ track: EngineTrack) -> LoadPlan {
        var promoted: String?
        if let next, next.track == track, case .prepared = next.stage { promoted = next.uri }
        var teardown = self.teardown()
        teardown.uris.removeAll { $0 == promoted }
        let ticket = issue(track.id)
        opening = ticket
        return LoadPlan(ticket: ticket, teardown: teardown, promoted: promoted)
    }

    /// Forgets every track in the pipeline (a load, a stop, a failure, the idle release). A load
    /// still opening is kept: only ``cancelOpening()`` drops it.
    mutating func teardown() -> Teardown {
        var result = Teardown(stopsPipeline: current != nil || next != nil)
        if let current { result.uris.append(current.uri) }
        if let next { result.uris.append(next.uri) }
        current = nil
        next = nil
        unannounced = nil
        dropped = nil
        return result
    }

    /// A stop or shutdown: a load still opening never starts.
    mutating func cancelOpening() { opening = nil }

    /// Whether `ticket` is the newest load, still opening: its source's result is used.
    func isOpening(_ ticket: LoadTicket) -> Bool { opening == ticket }

    /// The newest load's source failed to open: nothing of it remains.
    mutating func openFailed(_ ticket: LoadTicket) -> Bool {
        guard opening == ticket else { return false }
        opening = nil
        return true
    }

    /// The newest load's source is open and playbin gets `uri`: the track is current, in `phase`.
    /// False for a load no longer the newest.
    mutating func start(
        _ ticket: LoadTicket, track: EngineTrack, uri: String, phase: TrackPhase, seekable: Bool
    ) -> Bool {
        guard opening == ticket else { return false }
        opening = nil
        current = Loaded(ticket: ticket, track: track, uri: uri, phase: phase, seekable: seekable)
        return true
    }

    /// Whether `ticket` is the loaded track's: a delayed check or a message for another is dropped.
    func isCurrent(_ ticket: LoadTicket) -> Bool { current?.ticket == ticket }

    /// Changes the loaded track's phase; nil when nothing is loaded.
    mutating func withPhase<R>(_ body: (inout TrackPhase) -> R) -> R? {
        guard current != nil else { return nil }
        return body(&current!.phase)
    }

    // MARK: The next track

    /// The player's next track (nil: none). The same track, or any while playbin already holds
    /// the next URI, changes nothing; `uri` names a new preparation.
    mutating func prepareNext(_ track: EngineTrack?, uri: (LoadTicket) -> String) -> NextPlan {
        if next?.track == track || isHandedOver { return NextPlan() }
        var plan = NextPlan(dropped: next?.uri)
        next = nil
        if let track {
            let ticket = issue(track.id)
            next = Following(ticket: ticket, track: track, uri: uri(ticket), stage: .opening)
            plan.opening = next
        }
        return plan
    }

    /// The next track's source opened; `mayBeMedia` is false when its first bytes are not
    /// media. False when it is no longer wanted (its source is closed).
    mutating func nextOpened(_ ticket: LoadTicket, seekable: Bool, mayBeMedia: Bool) -> Bool {
        guard next?.ticket == ticket, next?.stage == .opening else { return false }
        next?.stage = mayBeMedia ? .prepared(seekable: seekable) : .unplayable
        return true
    }

    /// The next track's source failed to open: the player tries it again when it comes.
    mutating func nextFailed(_ ticket: LoadTicket) {
        if next?.ticket == ticket { next = nil }
    }

    /// About a second before the loaded track's end: the prepared next track to give playbin, if
    /// its source is open and may be media.
    mutating func aboutToFinish() -> Following? {
        guard current != nil, let following = next, case .prepared(let seekable) = following.stage else { return nil }
        next?.stage = .handedOver(seekable: seekable)
        return next
    }

    /// The pipeline was rebuilt around the loaded track: playbin forgot the next URI it held,
    /// and gets it again near the end.
    mutating func rebuilt() {
        if case .handedOver(let seekable) = next?.stage { next?.stage = .prepared(seekable: seekable) }
    }

    /// The next stream broke in playbin's next group (or never started): it is dropped, and the
    /// loaded track is to be loaded again where it is heard, without it. Nil when `uri` is not
    /// the next track's.
    mutating func nextBroke(uri: String) -> (track: EngineTrack, playing: Bool)? {
        guard let next, next.uri == uri, let current else { return nil }
        dropped = uri
        return (current.track, wantPlaying)
    }

    // MARK: Messages

    /// A stream started in playbin; `uri` is the one playbin plays now. At a hand-over the
    /// previous track's position at the switch and the rate say when the new one is heard.
    mutating func streamStarted(uri: String?, positionAtSwitch: Duration?, rate: Double) -> StreamStart {
        if let following = next, following.uri == uri, case .handedOver(let seekable) = following.stage {
            let old = current
            let audibleIn = HandOverTiming.audibleDelay(
                previousLength: old?.duration, positionAtSwitch: positionAtSwitch, rate: rate)
            var started = Loaded(
                ticket: following.ticket, track: following.track, uri: following.uri, phase: .ready, seekable: seekable)
            started.reachedPaused = true
            started.description = following.description
            current = started
            next = nil
            unannounced = Unannounced(
                track: following.track.id, seekable: seekable, previous: old?.track.id,
                previousEnd: audibleIn > .zero ? old?.duration : nil)
            return .handedOver(started, previousURI: old?.uri, audibleIn: audibleIn)
        }
        guard let loaded = current, loaded.uri == uri, !loaded.phase.isRebuilding, !loaded.announced else {
            return .none
        }
        current?.announced = true
        return .first(loaded.track.id)
    }

    /// The previous track's tail has played since the hand-over to `id`; `audioFlowing` says
    /// whether the new stream's first audio has reached the output. The start, once both are
    /// true; the previous track's end if the new stream broke first.
    mutating func tailPlayed(_ id: TrackID, audioFlowing: Bool) -> [EngineEvent] {
        guard let pending = unannounced, pending.track == id else { return [] }
        if pending.broke { return endOfBrokenStart() }
        unannounced?.tailPlayed = true
        return audioFlowing ? heard(id) : []
    }

    /// The newest stream's first audio reached the output: a handed-over track whose
    /// predecessor's tail has played is heard now.
    mutating func audioFlowing() -> [EngineEvent] {
        guard let pending = unannounced, pending.tailPlayed, !pending.broke else { return [] }
        return heard(pending.track)
    }

    /// The handed-over track of `ticket` broke before it was heard: it never played, so the
    /// player is told that the previous track ended (at once if its tail has played, else when
    /// it has) and loads the broken track itself, which then fails on its own load. Its stream's
    /// further errors are a dropped stream's.
    mutating func startBroke(_ ticket: LoadTicket) -> [EngineEvent] {
        guard let current, current.ticket == ticket, let pending = unannounced, pending.track == ticket.track,
            !pending.broke
        else { return [] }
        dropped = current.uri
        if pending.tailPlayed { return endOfBrokenStart() }
        unannounced?.broke = true
        return []
    }

    private mutating func endOfBrokenStart() -> [EngineEvent] {
        let previous = unannounced?.previous
        unannounced = nil
        return previous.map { [.endOfTrack($0)] } ?? []
    }

    /// The handed-over track `id` is heard: its start, once.
    mutating func heard(_ id: TrackID) -> [EngineEvent] {
        guard let pending = unannounced, pending.track == id else { return [] }
        unannounced = nil
        guard current?.track.id == id else { return [] }
        current?.announced = true
        return [.seekable(id, pending.seekable), .trackStarted(id)]
    }

    /// The end of the last stream: a pending start first (a track shorter than the previous
    /// one's tail starts before it ends), then tags still held for a length never known, then
    /// the end.
    mutating func endOfStream() -> [EngineEvent] {
        // The stream that broke at its start ended: so has the previous track's tail.
        if unannounced?.broke == true { return endOfBrokenStart() }
        // Nor is it the broken track's end: it never played.
        guard let ticket = current?.ticket, current?.uri != dropped else { return [] }
        return heard(ticket.track) + (settled(ticket).map { [$0] } ?? []) + [.endOfTrack(ticket.track)]
    }

    /// Where an error posted from `origin` goes.
    func route(errorFrom origin: StreamOrigin) -> ErrorRoute {
        let uri: String
        switch origin {
        // A stream torn down (a broken next one, reloaded away from, posting late) is no track's.
        case .detached: return .none
        // An element of no stream (the output, playbin itself) fails the loaded track.
        case .pipeline: return current.map { .current($0.ticket) } ?? .none
        case .stream(let streamURI): uri = streamURI
        }
        if uri == next?.uri || uri == dropped { return .next(uri: uri, track: next?.track.id) }
        // A stream of no track now is not the loaded track's.
        guard let current, uri == current.uri else { return .none }
        if let pending = unannounced, pending.track == current.track.id, pending.previous != nil {
            return .startBroke(current.ticket)
        }
        return .current(current.ticket)
    }

    /// The loaded track `ticket` failed: the events that say so, its pending start first (the
    /// player learns which track failed); the shell tears the pipeline down. Empty when stale.
    mutating func failed(_ ticket: LoadTicket, _ error: EngineError) -> [EngineEvent] {
        guard isCurrent(ticket) else { return [] }
        let events = heard(ticket.track) + [.failed(ticket.track, error)]
        return events
    }

    /// Tags read from `origin`: the description to send, if it is due. Tags of the handed-over
    /// next track arrive while the loaded one still plays; the sink's name no stream.
    mutating func tagsRead(_ tags: TrackTags, from origin: StreamOrigin) -> EngineEvent? {
        let forNext: Bool
        if origin == .detached { return nil }  // a stream torn down
        if let uri = origin.uri {
            // A stream that is no longer the current or the next one's (a group torn down).
            guard uri == next?.uri || uri == current?.uri else { return nil }
            forNext = uri == next?.uri
        } else {
            forNext = isHandedOver
        }
        // The next track's length is known only once it plays: its tags are held until then.
        if forNext, let id = next?.track.id { return next?.description.add(tags, for: id) }
        guard let id = current?.track.id else { return nil }
        return current?.description.add(tags, for: id)
    }

    /// The pipeline answered `length` for the loaded track `ticket`: its description, when
    /// the length is new.
    mutating func durationKnown(_ length: Duration, for ticket: LoadTicket) -> EngineEvent? {
        guard isCurrent(ticket), current?.duration != length else { return nil }
        return current?.description.lengthKnown(length, for: ticket.track)
    }

    /// The loaded track `ticket` settled (prerolled, or handed over a while ago): what it said
    /// goes now, without a length a live stream never has, or tags a file may not have; later
    /// changes as they come.
    mutating func settled(_ ticket: LoadTicket) -> EngineEvent? {
        guard isCurrent(ticket) else { return nil }
        current?.description.settled = true
        guard let description = current?.description, !description.sent,
            !description.tags.isEmpty || description.duration != nil
        else { return nil }
        return current?.description.send(ticket.track)
    }

    /// playbin changed state to `new`, on its way to `pending` (nil: settled). The transport
    /// event to report, if any; a rebuild's state changes are not the track's, nor is a step
    /// down to READY or NULL: the previous track's teardown, whose PAUSED reaches the bus after
    /// the new track is loaded (taken as its start, a new track that hangs was never failed).
    mutating func pipelineChanged(to new: PipelineState, pending: PipelineState?) -> EngineEvent? {
        guard let loaded = current, !loaded.phase.isRebuilding else { return nil }
        if let pending, pending < new { return nil }
        let settled = pending == nil
        if new == .paused || new == .playing { current?.reachedPaused = true }
        if new == .playing { return .stateChanged(.playing) }
        if new == .paused && settled { return .stateChanged(.paused) }
        return nil
    }
}
