import Dispatch
import EngineAPI
import FoundationEssentials
import MediaSource
import SpoolLog
import Synchronization
internal import CGStreamer

/// The playback engine on GStreamer: a `playbin` whose source for every track
/// is an `appsrc` (URI `appsrc://spool/N-G.ext`, see ``TypeHint``) fed by Spool's media source, so every
/// byte the decoder reads goes through Spool's reader and cache.
///
/// Threads: commands run in order on one control queue (state changes may wait
/// for streaming threads); a bus thread turns GStreamer messages into events;
/// events reach the handler in order on an event queue. playbin's
/// about-to-finish arrives on a streaming thread and only sets the next URI.
public final class GStreamerEngine: PlaybackEngine, @unchecked Sendable {
    // @unchecked: the element pointers are set once in init and GStreamer's
    // element API used here (state, seek, query, properties) is thread-safe;
    // everything mutable lives in `shared`.

    /// Makes the byte source for a track's URL.
    public typealias SourceFactory = @Sendable (URL) throws(MediaSourceError) -> ByteSource

    /// The rates offered: scaletempo keeps the pitch and sounds clean in this span.
    public static let rates: ClosedRange<Double> = 0.5...2.0

    private struct Current {
        var track: EngineTrack
        var uri: String
        var feeder: AppSrcFeeder?
        var prerolled = false
        var startPosition: Duration?
        var seeking = false
        /// The seek in flight only applies a rate (or starts at 0 at a rate): no Seeked for it.
        var silentSeek = false
        /// The start position is where a rate change found the track: no Seeked for it.
        var silentStart = false
        /// The pipeline is being rebuilt around this track for a new rate filter: the
        /// stream restarts without counting as a new start, pause or seek.
        var reconfiguring = false
        /// The position reported while the pipeline is being rebuilt (it answers no query then),
        /// or while a load that replaces this track is queued.
        var heldPosition: Duration?
        /// The restart marker the rebuilt pipeline's messages follow: an ASYNC_DONE
        /// posted before it (a seek that ended as the rebuild began) is stale.
        var restartMarker: UInt64 = 0
        /// Where the last seek went: the position while the pipeline answers no query during it.
        var seekTarget: Duration?
        var duration: Duration?
    }

    /// What stands in playbin's audio-filter slot.
    private enum RateFilter {
        /// No filter: decoders negotiate the formats they would without Spool (S16 for MP3/AAC).
        case none
        /// An `identity`: scaletempo had to leave while the pipeline was only in READY,
        /// where playsink swaps a filter but cannot drop one.
        case passThrough
        /// A `scaletempo`, which keeps the pitch at a rate other than 1.0 (and makes
        /// decoders output float).
        case scaletempo
    }

    /// A following track whose source is open (or opening), for the gapless hand-over.
    private struct Prepared {
        var track: EngineTrack
        var uri: String
        var feeder: AppSrcFeeder?
        /// Its first bytes are no media type GStreamer knows: playbin is not given it, so the
        /// current track ends normally and the track fails on its own load.
        var unplayable = false
    }

    private struct Shared {
        var handler: (@Sendable (EngineEvent) -> Void)?
        var feeders: [String: AppSrcFeeder] = [:]
        var current: Current?
        var next: Prepared?
        /// The next track's URI was given to playbin; its audio has not started yet.
        var handedOver = false
        /// The next group's stream that broke and was dropped: its further errors are its own.
        var brokenNext: String?
        /// A track handed over without a gap whose start is announced once it is heard.
        var unannounced: (id: TrackID, seekable: Bool)?
        var generation: UInt64 = 0
        var wantPlaying = false
        var busRunning = true
        var rate = 1.0
        /// The filter in playbin now; it changes at a load or when a rate change needs another.
        var filter = RateFilter.none
        /// The newest load asked for; older ones still queued are skipped (rapid Next).
        var latestLoad: UInt64 = 0
        /// The newest seek target not yet applied; a burst of seeks applies only the last.
        var pendingSeek: Duration?
        /// The audio parser of the pipeline's newest stream (mpegaudioparse, flacparse), referenced:
        /// it maps a pushed track's seek target to a byte.
        var parser: ElementRef?
        /// Restart markers posted on the bus (by ``reconfigure(at:)``), and seen by the bus thread.
        var markersPosted: UInt64 = 0
        var markersSeen: UInt64 = 0
    }

    private let playbin: UnsafeMutablePointer<GstElement>
    private let bus: UnsafeMutablePointer<GstBus>
    private let makeSource: SourceFactory
    private let coverArt: CoverArtStore?
    /// The output's gain; it ramps itself along the audio (see SmoothVolume).
    private let volume: SmoothVolume
    private let control = DispatchQueue(label: "spool.engine.control")
    private let eventQueue = DispatchQueue(label: "spool.engine.events")
    private let shared = Mutex(Shared())
    private let busStopped = DispatchSemaphore(value: 0)
    private let log = Logger(label: "engine")
    /// Whether scaletempo is installed (without it a rate change also changes the pitch).
    private let hasScaletempo: Bool

    /// Creates the pipeline. `audioSink` is a gst-launch description (nil: the
    /// desktop's sound server, falling back to a real-time null sink);
    /// `artDirectory` receives embedded cover art (nil: art is not extracted).
    public init(audioSink: String?, artDirectory: URL? = nil, makeSource: @escaping SourceFactory) throws(EngineError) {
        GStreamer.initialize()
        guard let playbin = gst_element_factory_make("playbin", "spool-player") else {
            throw EngineError("GStreamer's playbin is missing (install gstreamer1.0-plugins-base)")
        }
        gst_object_ref_sink(UnsafeMutableRawPointer(playbin))
        self.playbin = playbin
        self.makeSource = makeSource
        coverArt = artDirectory.map(CoverArtStore.init(directory:))
        bus = gst_element_get_bus(playbin)
        setProperty(playbin, "flags", "audio+soft-volume")
        do {
            let output = try AudioOutput.make(description: audioSink, log: log)
            setProperty(playbin, "audio-sink", object: output.bin)
            gst_object_unref(UnsafeMutableRawPointer(output.bin))
            volume = output.volume
        } catch {
            gst_object_unref(UnsafeMutableRawPointer(bus))
            gst_object_unref(UnsafeMutableRawPointer(playbin))
            throw error
        }
        hasScaletempo = GStreamer.hasElement("scaletempo")
        if !hasScaletempo {
            log.warning("scaletempo is missing: rates other than 1.0 will change the pitch")
        }
        // playbin holds these unretained pointers until it is disposed, in shutdown().
        let context = Unmanaged.passUnretained(self).toOpaque()
        g_signal_connect_data(
            asGObject(playbin), "source-setup", unsafeBitCast(GStreamerEngine.onSourceSetup, to: GCallback.self),
            context, nil, GConnectFlags(rawValue: 0))
        g_signal_connect_data(
            asGObject(playbin), "about-to-finish", unsafeBitCast(GStreamerEngine.onAboutToFinish, to: GCallback.self),
            context, nil, GConnectFlags(rawValue: 0))
        g_signal_connect_data(
            asGObject(playbin), "deep-element-added",
            unsafeBitCast(GStreamerEngine.onElementAdded, to: GCallback.self), context, nil, GConnectFlags(rawValue: 0))
        startThread(name: "spool.engine.bus") { [self] in self.runBus() }
    }

    // MARK: PlaybackEngine

    /// The rates this engine plays at.
    public var supportedRates: ClosedRange<Double> { Self.rates }

    /// Sets the receiver of engine events.
    public func setEventHandler(_ handler: @escaping @Sendable (EngineEvent) -> Void) {
        shared.withLock { $0.handler = handler }
    }

    /// Opens the track's source, then plays it (or prerolls it paused) from `position`.
    public func load(_ track: EngineTrack, at position: Duration, playing: Bool) {
        let ticket = shared.withLock { state -> UInt64 in
            state.latestLoad &+= 1
            state.pendingSeek = nil
            // Until the queued load replaces it, the old track must not report its position as
            // the new one's (a session saved in between resumed the new track there).
            state.current?.heldPosition = position
            return state.latestLoad
        }
        control.async { [self] in
            guard shared.withLock({ $0.latestLoad == ticket && $0.busRunning }) else { return }  // superseded, or shut down
            teardown()
            let generation = shared.withLock { state -> UInt64 in
                state.generation &+= 1
                state.wantPlaying = playing
                return state.generation
            }
            log.info("loading \(track.id): \(loggable(track.url))")
            open(track) { [self] result in
                guard shared.withLock({ $0.generation == generation && $0.busRunning }) else {
                    if case .success(let feeder) = result { feeder.detach() }
                    return
                }
                switch result {
                case .failure(let error):
                    log.warning("\(track.id): \(error)")
                    let kind = FailureKinds.kind(of: error)
                    emit(.failed(track.id, EngineError(error.description, kind: kind, position: position)))
                case .success(let feeder):
                    emit(.seekable(track.id, feeder.seekable))
                    start(track, feeder: feeder, generation: generation, at: position)
                }
            }
        }
    }

    /// Opens the following track's source ahead of time for a gapless hand-over.
    public func setNext(_ track: EngineTrack?) {
        control.async { [self] in
            let (old, generation) = shared.withLock { state -> (Prepared?, UInt64) in
                if state.next?.track == track { return (nil, state.generation) }
                if state.handedOver { return (nil, state.generation) }  // playbin already has it
                defer { state.next = nil }
                if let old = state.next { state.feeders[old.uri] = nil }
                return (state.next, state.generation)
            }
            old?.feeder?.detach()
            guard let track, shared.withLock({ $0.next == nil && !$0.handedOver }) else { return }
            let uri = TypeHint.uri("appsrc://spool/\(track.id.rawValue)-\(generation)-next", url: track.url)
            shared.withLock { $0.next = Prepared(track: track, uri: uri) }
            open(track, background: true) { [self] result in
                let accepted = shared.withLock { state -> Bool in
                    guard state.generation == generation, state.next?.uri == uri, case .success(let feeder) = result
                    else { return false }
                    state.next?.feeder = feeder
                    state.next?.unplayable = !Self.mayBeMedia(feeder.source, url: track.url)
                    state.feeders[uri] = feeder
                    return true
                }
                if !accepted {
                    if case .success(let feeder) = result { feeder.detach() }
                    if case .failure(let error) = result {
                        // The current track plays on; the player will try this one again when it comes.
                        log.warning("next \(track.id) cannot be prepared: \(error)")
                        shared.withLock { if $0.next?.uri == uri { $0.next = nil } }
                    }
                }
            }
        }
    }

    /// Starts or resumes playback of the loaded track.
    public func play() {
        control.async { [self] in
            let loaded = shared.withLock { state -> Bool in
                state.wantPlaying = true
                return state.current?.prerolled ?? false
            }
            if loaded { gst_element_set_state(playbin, GST_STATE_PLAYING) }
        }
    }

    /// Pauses playback, keeping the position.
    public func pause() {
        control.async { [self] in
            let loaded = shared.withLock { state -> Bool in
                state.wantPlaying = false
                return state.current != nil
            }
            if loaded { gst_element_set_state(playbin, GST_STATE_PAUSED) }
        }
    }

    /// Unloads the track (and the prepared next one).
    public func stop() {
        control.async { [self] in
            shared.withLock { $0.generation &+= 1 }  // drops a load still opening
            teardown()
            emit(.stateChanged(.idle))
        }
    }

    /// Seeks the loaded track accurately to `target`, at the current rate.
    public func seek(to target: Duration) {
        shared.withLock { $0.pendingSeek = target }
        control.async { [self] in
            guard let position = shared.withLock({ state -> Duration? in
                defer { state.pendingSeek = nil }
                return state.pendingSeek
            }) else { return }  // a later seek in the burst took it
            enum Plan { case seek(exact: Bool), later, reload(EngineTrack, EngineTrack?, playing: Bool), nothing }
            let plan = shared.withLock { state -> Plan in
                guard let current = state.current else { return .nothing }
                if state.handedOver {
                    // playbin cannot seek back once it holds the next URI: reload the
                    // track at the target (from cache) and queue the next one again.
                    return .reload(current.track, state.next?.track, playing: state.wantPlaying)
                }
                if !current.prerolled {
                    state.current?.startPosition = position  // applied once prerolled
                    state.current?.silentStart = false  // the listener's seek is reported
                    if current.reconfiguring { state.current?.heldPosition = position }
                    return .later
                }
                state.current?.seeking = true
                state.current?.silentSeek = false
                return .seek(exact: FeedingMode.exactSeeks(current.track))
            }
            switch plan {
            case .seek(let exact):
                performSeek(to: position, accurate: exact)
            case .reload(let track, let next, let playing):
                log.debug("\(track.id): seek after the hand-over; reloading at \(position)")
                load(track, at: position, playing: playing)
                setNext(next)
            case .later, .nothing:
                break
            }
        }
    }

    /// Changes the rate with a seek to the current position; the pitch is kept.
    /// A change to or from 1.0 also swaps the rate filter, which rebuilds the
    /// pipeline around the open source (see ``reconfigure(at:)``): 1.0 plays
    /// without scaletempo, so decoders output exactly what they would without Spool.
    public func setRate(_ rate: Double) {
        let clamped = min(Self.rates.upperBound, max(Self.rates.lowerBound, rate))
        control.async { [self] in
            enum Plan { case seek(exact: Bool), reconfigure, nothing }
            let plan = shared.withLock { state -> Plan in
                guard state.rate != clamped else { return .nothing }
                state.rate = clamped
                // Not prerolled yet: asyncDone applies the rate (and the filter it needs).
                guard let current = state.current, current.prerolled else { return .nothing }
                if filterMismatchLocked(state) {
                    // playbin already holds the next track (about-to-finish): a rebuild now races the
                    // hand-over (seen under load: the next track never started). What is left of this
                    // track is already decoded ahead; the hand-over rebuilds for the new rate instead.
                    if state.handedOver { return .nothing }
                    return .reconfigure
                }
                state.current?.seeking = true
                state.current?.silentSeek = true
                // At the play head baseparse is exact anyway when it got there by parsing; after a
                // far seek (through the seek table) an accurate one would parse up from its index.
                return .seek(exact: FeedingMode.exactSeeks(current.track))
            }
            log.trace("rate \(clamped): \(plan)")
            // A seek in flight answers no position query: it is going to its target.
            let position = position() ?? shared.withLock { $0.current?.seekTarget } ?? .zero
            switch plan {
            case .seek(let exact):
                performSeek(to: position, accurate: exact)
            case .reconfigure:
                reconfigure(at: position)
            case .nothing:
                break
            }
        }
    }

    /// Moves the volume to `volume` (0.0–1.0) along a short ramp in the audio itself
    /// (SmoothVolume: 50 ms for the whole range), so the change makes no click.
    public func setVolume(_ volume: Double) {
        self.volume.set(min(1, max(0, volume)))
    }

    /// The name of the application message that marks a pipeline rebuild on the bus.
    private static let restartMarkerName = "spool-restart"

    /// The position of the loaded track, from the pipeline.
    public func position() -> Duration? {
        let (prerolled, held, start) = shared.withLock {
            ($0.current?.prerolled ?? false, $0.current?.heldPosition, $0.current?.startPosition)
        }
        if let held { return held }
        guard prerolled else { return start }  // loading: where it is about to start
        var position: gint64 = 0
        guard gst_element_query_position(playbin, GST_FORMAT_TIME, &position) != 0, position >= 0 else {
            return nil
        }
        return .nanoseconds(Int64(position))
    }

    /// Stops playback, ends the bus thread and frees the pipeline.
    public func shutdown() {
        let first = shared.withLock { state -> Bool in
            defer {
                state.busRunning = false
                // A load whose source is still opening must not start on a freed pipeline.
                state.generation &+= 1
            }
            return state.busRunning
        }
        guard first else { return }
        control.sync { teardown() }
        busStopped.wait()
        gst_object_unref(UnsafeMutableRawPointer(bus))
        gst_object_unref(UnsafeMutableRawPointer(playbin))
    }

    // MARK: Control queue

    /// Creates and opens a track's source; `done` runs on the control queue. A
    /// source that fails to open is closed here; an opened one belongs to its feeder.
    /// A `background` source (the next track) downloads at preload priority.
    private func open(
        _ track: EngineTrack, background: Bool = false,
        _ done: @escaping @Sendable (Result<AppSrcFeeder, MediaSourceError>) -> Void
    ) {
        let source: ByteSource
        do throws(MediaSourceError) {
            source = try makeSource(track.url)
        } catch {
            done(.failure(error))
            return
        }
        source.setBackground(background)
        source.open { [weak self] result in
            guard let self else { return source.close() }
            self.control.async {
                switch result {
                case .failure(let error):
                    source.close()
                    done(.failure(error))
                case .success(let info):
                    let format = TypeHint.fileExtension(url: track.url, contentType: info.contentType)
                    if let caps = TypeHint.slowDecoderCaps(forExtension: format) {
                        // While the first bytes travel. Not before the open: loading holds the
                        // dynamic loader's lock, which the first request's set-up waited for.
                        GStreamer.preloadDecoder(for: caps)
                    }
                    let feeder = AppSrcFeeder(
                        source: source, info: info, label: "\(track.id)",
                        pulled: FeedingMode.pulls(track, contentType: info.contentType)
                    ) { [weak self] waiting in
                        self?.emit(.buffering(track.id, waiting))
                    }
                    done(.success(feeder))
                }
            }
        }
    }

    private func start(_ track: EngineTrack, feeder: AppSrcFeeder, generation: UInt64, at position: Duration) {
        let uri = TypeHint.uri(
            "appsrc://spool/\(track.id.rawValue)-\(generation)", url: track.url, contentType: feeder.info.contentType)
        let playing = shared.withLock { state -> Bool in
            state.feeders[uri] = feeder
            // A rate other than 1.0 is applied by a seek once prerolled, even at position 0.
            let start: Duration? = position > .zero || state.rate != 1 ? position : nil
            state.current = Current(track: track, uri: uri, feeder: feeder, startPosition: start)
            return state.wantPlaying && start == nil
        }
        // The pipeline is stopped (NULL): the filter can be set or dropped.
        installRateFilter(stopped: true)
        setProperty(playbin, "uri", uri)
        if gst_element_set_state(playbin, playing ? GST_STATE_PLAYING : GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE {
            log.warning("\(track.id): the pipeline refused to start")
        }
        watchPreroll(of: uri, generation: generation)
    }

    /// How long a track may fail to start while none of its reads waits for bytes.
    static let prerollStall: Duration = .seconds(4)

    /// Fails a track that neither starts nor waits for bytes: decodebin swallows an error that
    /// a demuxer posts while it is still being set up (it filters errors until the element's
    /// state change returns, and drops them when that succeeds: a truncated M4A, one time in
    /// a few), and the pipeline then waits forever for a stream that will never come.
    private func watchPreroll(of uri: String, generation: UInt64, stalledFor stalled: Duration = .zero) {
        let step = Duration.milliseconds(500)
        control.asyncAfter(deadline: .now() + .milliseconds(500)) { [self] in
            let check = shared.withLock { state -> (id: TrackID, waiting: Bool)? in
                guard state.generation == generation, let current = state.current, current.uri == uri,
                    !current.prerolled
                else { return nil }
                return (current.track.id, current.feeder?.isWaitingForBytes ?? false)
            }
            guard let check else { return }
            let stalledNow = check.waiting ? .zero : stalled + step
            guard stalledNow >= Self.prerollStall else {
                watchPreroll(of: uri, generation: generation, stalledFor: stalledNow)
                return
            }
            log.error("\(check.id): no stream started within \(Self.prerollStall) and nothing is awaited")
            teardown()
            emit(.failed(check.id, EngineError("the stream stopped before it started (the file may be damaged)")))
        }
    }

    /// Whether the filter in place is not the one the rate needs: scaletempo at
    /// any rate other than 1.0 (when installed), none (or a pass-through) at 1.0.
    /// Only a track that can seek is rebuilt: a stream restarted from its first byte
    /// could not go back to where it was (its rate change stays a plain seek).
    private func filterMismatchLocked(_ state: Shared) -> Bool {
        guard state.current?.feeder?.seekable == true else { return false }
        let wanted = hasScaletempo && state.rate != 1
        return wanted != (state.filter == .scaletempo)
    }

    /// Gives playbin the filter the current rate needs; only while the pipeline is
    /// in NULL (`stopped`) or READY, when playsink rebuilds its audio chain.
    /// scaletempo stretches by the segment's rate and keeps the pitch. Every
    /// element is new: a scaletempo reused across tracks of other formats at a
    /// rate other than 1.0 crashed in its memcpy (GStreamer 1.22). In READY,
    /// playsink swaps a filter but ignores its removal, so an `identity` replaces
    /// scaletempo there; the next load drops it.
    private func installRateFilter(stopped: Bool) {
        let (rate, filter) = shared.withLock { ($0.rate, $0.filter) }
        var wanted: RateFilter = hasScaletempo && rate != 1 ? .scaletempo : .none
        if wanted == .none && filter != .none && !stopped { wanted = .passThrough }
        switch wanted {
        case .none:
            if filter != .none { setProperty(playbin, "audio-filter", object: nil as UnsafeMutablePointer<GstElement>?) }
        case .passThrough, .scaletempo:
            guard let element = gst_element_factory_make(wanted == .scaletempo ? "scaletempo" : "identity", nil) else {
                log.warning("cannot create the rate filter")
                return
            }
            setProperty(playbin, "audio-filter", object: element)
        }
        shared.withLock { $0.filter = wanted }
    }

    /// Rebuilds the pipeline around the open source so that playsink takes another
    /// rate filter, then resumes at `position` at the current rate. playbin takes a
    /// new audio filter only in NULL or READY; READY keeps the sink open and the
    /// track's feeder (its source and cache reads) alive: playbin makes a new appsrc,
    /// the feeder answers it from the same source, and the start is a seek to
    /// `position`. No Seeked, no new start, no pause is reported for it.
    private func reconfigure(at position: Duration) {
        let uri = shared.withLock { state -> String? in
            guard let current = state.current else { return nil }
            state.markersPosted &+= 1
            state.current?.restartMarker = state.markersPosted
            state.current?.reconfiguring = true
            state.current?.heldPosition = position
            state.current?.prerolled = false
            state.current?.seeking = false
            // A fresh pipeline starts at 0 at 1.0: no seek then (an AAC decoder primes
            // differently after one), else a seek to where the change found the track.
            state.current?.startPosition = position == .zero && state.rate == 1 ? nil : position
            state.current?.silentStart = true
            // playbin may already hold the next URI (about-to-finish): play this
            // track again; the next one is handed over again near the end.
            state.handedOver = false
            return current.uri
        }
        guard let uri else { return }
        log.debug("rebuilding the pipeline at \(position) (rate \(shared.withLock { $0.rate }))")
        gst_element_set_state(playbin, GST_STATE_READY)
        // Everything on the bus before this marker belongs to the pipeline before the rebuild.
        if let structure = gst_structure_new_empty(Self.restartMarkerName) {
            gst_bus_post(bus, gst_message_new_application(UnsafeMutableRawPointer(playbin).assumingMemoryBound(to: GstObject.self), structure))
        }
        installRateFilter(stopped: false)
        setProperty(playbin, "uri", uri)
        if gst_element_set_state(playbin, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE {
            log.warning("the pipeline refused to restart for a new rate")
        }
    }

    private func teardown() {
        let (old, next, parser) = shared.withLock { state -> (Current?, Prepared?, ElementRef?) in
            defer {
                state.current = nil
                state.next = nil
                state.handedOver = false
                state.unannounced = nil
                state.brokenNext = nil
                state.feeders.removeAll()
                state.parser = nil
            }
            return (state.current, state.next, state.parser)
        }
        parser?.release()
        // Detach before the state change, so no streaming thread waits on the network.
        old?.feeder?.detach()
        next?.feeder?.detach()
        if old != nil || next != nil { gst_element_set_state(playbin, GST_STATE_NULL) }
    }

    /// Seeks to `position`, as a time or, in a pushed track whose bytes before the target are
    /// not here, as the byte the parser maps it to (see ``SeekRoute``).
    private func performSeek(to position: Duration, accurate: Bool = true) {
        // A reference of its own: the streaming thread that adds a new parser drops the old one.
        let (rate, feeder, parser) = shared.withLock { state -> (Double, AppSrcFeeder?, ElementRef?) in
            state.current?.seekTarget = position
            return (state.rate, state.current?.feeder, state.parser.map { ElementRef($0.pointer) })
        }
        defer { parser?.release() }
        let route = SeekRoute.choose(
            target: position, accurate: accurate, pushed: feeder?.pushed ?? false,
            byte: { parser?.byte(at: $0) }, holds: { feeder?.holds(streamRange: $0) ?? true })
        let flush = GST_SEEK_FLAG_FLUSH.rawValue
        let accepted: gboolean
        switch route {
        case .time(let accurate):
            let flags = GstSeekFlags(rawValue: flush | (accurate ? GST_SEEK_FLAG_ACCURATE.rawValue : 0))
            accepted = gst_element_seek(
                playbin, rate, GST_FORMAT_TIME, flags, GST_SEEK_TYPE_SET, gint64(nanoseconds(position)),
                GST_SEEK_TYPE_NONE, -1)
        case .bytes(let offset):
            log.debug("seek to \(position): byte \(offset) of the parsed stream")
            accepted = gst_element_seek(
                playbin, rate, GST_FORMAT_BYTES, GstSeekFlags(rawValue: flush), GST_SEEK_TYPE_SET, gint64(offset),
                GST_SEEK_TYPE_NONE, -1)
        }
        if accepted == 0 {
            log.warning("seek to \(position) at rate \(rate) refused")
            let playing = shared.withLock { state -> Bool in
                state.current?.seeking = false
                state.current?.reconfiguring = false
                state.current?.heldPosition = nil
                return state.wantPlaying
            }
            if playing { gst_element_set_state(playbin, GST_STATE_PLAYING) }
        }
    }

    // MARK: Streaming-thread callbacks

    private static let onSourceSetup:
        @convention(c) (UnsafeMutablePointer<GstElement>?, UnsafeMutablePointer<GstElement>?, gpointer?) -> Void = {
            _, source, context in
            guard let source, let context else { return }
            Unmanaged<GStreamerEngine>.fromOpaque(context).takeUnretainedValue().setUp(source)
        }

    private func setUp(_ source: UnsafeMutablePointer<GstElement>) {
        let uri = takeGString(gst_uri_handler_get_uri(OpaquePointer(source)))
        guard let uri, let feeder = shared.withLock({ $0.feeders[uri] }) else {
            log.error("source-setup for an unknown source \(uri ?? "without a URI") (known: \(shared.withLock { Array($0.feeders.keys) }))")
            return
        }
        feeder.attach(to: UnsafeMutableRawPointer(source).assumingMemoryBound(to: GstAppSrc.self))
    }

    private static let onElementAdded:
        @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<GstElement>?, gpointer?) ->
        Void = { _, _, element, context in
            guard let element, let context else { return }
            Unmanaged<GStreamerEngine>.fromOpaque(context).takeUnretainedValue().elementAdded(element)
        }

    /// On a streaming thread: keeps the newest parser (playbin builds one per stream).
    private func elementAdded(_ element: UnsafeMutablePointer<GstElement>) {
        guard let klass = gst_element_get_metadata(element, "klass"), String(cString: klass).contains("Parser") else {
            return
        }
        let old = shared.withLock { state -> ElementRef? in
            defer { state.parser = ElementRef(element) }
            return state.parser
        }
        old?.release()
    }

    private static let onAboutToFinish: @convention(c) (UnsafeMutablePointer<GstElement>?, gpointer?) -> Void = {
        _, context in
        guard let context else { return }
        Unmanaged<GStreamerEngine>.fromOpaque(context).takeUnretainedValue().aboutToFinish()
    }

    /// On a streaming thread, about a second before the end: hand playbin the
    /// prepared next track, if its source is open. Nothing else happens here.
    private func aboutToFinish() {
        let (next, parser) = shared.withLock { state -> (Prepared?, ElementRef?) in
            guard let next = state.next, next.feeder != nil, !next.unplayable, !state.handedOver else { return (nil, nil) }
            state.handedOver = true
            // The next stream's parser, if its format has one, is added once playbin has the URI;
            // this stream's must not answer for a next one without (a seek now reloads anyway).
            defer { state.parser = nil }
            return (next, state.parser)
        }
        parser?.release()
        guard let next else { return }
        setProperty(playbin, "uri", next.uri)
        emit(.nextQueued(next.track.id))
        control.async { [self] in watchHandOver(to: next.uri, last: nil) }
    }

    /// How long playback may stand still at the boundary while the next track's bytes are all
    /// here before it counts as broken.
    static let handOverStall: Duration = .milliseconds(1500)

    /// Rescues the current track when the next group hangs without a word (the same swallowed
    /// demuxer error as at a load): its last buffers wait for a stream that never starts, and the
    /// position stands still. It is then loaded again without the next track, as for a next
    /// track that reports its error.
    private func watchHandOver(to uri: String, last: Duration?, stalledFor stalled: Duration = .zero) {
        let step = Duration.milliseconds(500)
        control.asyncAfter(deadline: .now() + .milliseconds(500)) { [self] in
            let waiting = shared.withLock { state -> Bool? in
                guard let next = state.next, next.uri == uri, state.handedOver, state.wantPlaying else { return nil }
                return next.feeder?.isWaitingForBytes ?? false
            }
            guard let waiting else { return }  // handed over, replaced or paused
            let now = position()
            let stalledNow = !waiting && now != nil && now == last ? stalled + step : .zero
            guard stalledNow >= Self.handOverStall else {
                watchHandOver(to: uri, last: now, stalledFor: stalledNow)
                return
            }
            log.error("the next track never started and the current one stands still at \(now ?? .zero)")
            dropBrokenNext(uri: uri)
        }
    }

    // MARK: Bus thread

    private func runBus() {
        let wanted = [
            GST_MESSAGE_EOS, GST_MESSAGE_ERROR, GST_MESSAGE_WARNING, GST_MESSAGE_STATE_CHANGED,
            GST_MESSAGE_TAG, GST_MESSAGE_STREAM_START, GST_MESSAGE_DURATION_CHANGED, GST_MESSAGE_ASYNC_DONE,
            GST_MESSAGE_APPLICATION,
        ].reduce(0) { $0 | $1.rawValue }
        while shared.withLock({ $0.busRunning }) {
            guard let message = gst_bus_timed_pop_filtered(bus, 100_000_000, GstMessageType(rawValue: wanted))
            else { continue }
            handle(message)
            gst_message_unref(message)
        }
        busStopped.signal()
    }

    private func handle(_ message: UnsafeMutablePointer<GstMessage>) {
        let fromPlaybin = UnsafeMutableRawPointer(message.pointee.src) == UnsafeMutableRawPointer(playbin)
        if message.pointee.type == GST_MESSAGE_STREAM_START {
            streamStarted()
            return
        }
        if message.pointee.type == GST_MESSAGE_APPLICATION {
            if let structure = gst_message_get_structure(message),
                String(cString: gst_structure_get_name(structure)) == Self.restartMarkerName
            {
                shared.withLock { $0.markersSeen &+= 1 }
            }
            return
        }
        guard let current = shared.withLock({ $0.current }) else { return }
        let id = current.track.id
        switch message.pointee.type {
        case GST_MESSAGE_EOS:
            announceStart(of: id)  // a track shorter than the previous one's tail starts before it ends
            log.info("\(id) ended")
            emit(.endOfTrack(id))
        case GST_MESSAGE_ERROR:
            var error: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            gst_message_parse_error(message, &error, &debug)
            let text = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            let kind = error.map { FailureKinds.kind(domain: $0.pointee.domain, code: $0.pointee.code) } ?? .transient
            if let error { g_error_free(error) }
            let from = streamURI(of: message.pointee.src, below: UnsafeMutableRawPointer(playbin))
            let (next, broken) = shared.withLock { ($0.next, $0.brokenNext) }
            if let from, from == next?.uri || from == broken {
                // The next track's stream broke while the current one still plays: it plays to its
                // end, and the player loads the next track again then and hears its own error.
                log.error("\(next.map { "\($0.track.id)" } ?? "a dropped track") (next): \(text) (\(takeGString(debug) ?? ""))")
                control.async { [self] in dropBrokenNext(uri: from) }
                return
            }
            log.error("\(id): \(text) (\(takeGString(debug) ?? ""))")
            control.async { [self] in
                guard shared.withLock({ $0.current?.uri == current.uri }) else { return }
                announceStart(of: id)  // the player learns which track failed
                // Taken before the teardown, which forgets it: a retry resumes here.
                let position = position()
                teardown()
                emit(.failed(id, EngineError(text, kind: kind, position: position)))
            }
        case GST_MESSAGE_WARNING:
            var error: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            gst_message_parse_warning(message, &error, &debug)
            log.warning("\(id): \(error.map { String(cString: $0.pointee.message) } ?? "") \(takeGString(debug) ?? "")")
            if let error { g_error_free(error) }
        case GST_MESSAGE_STATE_CHANGED where fromPlaybin && !current.reconfiguring:
            var old = GST_STATE_NULL
            var new = GST_STATE_NULL
            var pending = GST_STATE_NULL
            gst_message_parse_state_changed(message, &old, &new, &pending)
            if new == GST_STATE_PLAYING {
                emit(.stateChanged(.playing))
            } else if new == GST_STATE_PAUSED && pending == GST_STATE_VOID_PENDING {
                emit(.stateChanged(.paused))
            }
        case GST_MESSAGE_TAG:
            var list: UnsafeMutablePointer<GstTagList>?
            gst_message_parse_tag(message, &list)
            if let list {
                var tags = TagReader.read(list)
                tags.artURL = coverArt?.store(from: list)
                gst_tag_list_unref(list)
                // Tags of the next track arrive while the current one still plays: hold them for it.
                let owner = shared.withLock { state -> TrackID in
                    state.handedOver ? (state.next?.track.id ?? id) : id
                }
                if !tags.isEmpty { emit(.tags(owner, tags)) }
            }
        case GST_MESSAGE_DURATION_CHANGED:
            reportDuration(of: current)
        case GST_MESSAGE_ASYNC_DONE where fromPlaybin:
            asyncDone(current, afterMarker: shared.withLock { $0.markersSeen })
        default:
            break
        }
    }

    /// A new stream's audio started: the first track, or the next one after a gapless hand-over.
    private func streamStarted() {
        let playing = stringProperty(playbin, "current-uri")
        // Still the previous track's position: its samples are not all played yet.
        var switchPosition: gint64 = -1
        let positionKnown = gst_element_query_position(playbin, GST_FORMAT_TIME, &switchPosition) != 0 && switchPosition >= 0
        enum Start {
            case first(TrackID)
            case handedOver(TrackID, AppSrcFeeder?, needsRate: Bool, seekable: Bool, audibleIn: Duration)
            case none
        }
        let start = shared.withLock { state -> Start in
            if let next = state.next, next.uri == playing, state.handedOver {
                let old = state.current
                if let old { state.feeders[old.uri] = nil }
                state.current = Current(track: next.track, uri: next.uri, feeder: next.feeder, prerolled: true)
                state.next = nil
                state.handedOver = false
                let audibleIn = HandOverTiming.audibleDelay(
                    previousLength: old?.duration, positionAtSwitch: positionKnown ? .nanoseconds(switchPosition) : nil,
                    rate: state.rate)
                return .handedOver(
                    next.track.id, old?.feeder, needsRate: state.rate != 1,
                    seekable: next.feeder?.seekable ?? false, audibleIn: audibleIn)
            }
            if let current = state.current, current.uri == playing {
                return current.reconfiguring ? .none : .first(current.track.id)
            }
            return .none
        }
        switch start {
        case .first(let id):
            emit(.trackStarted(id))
        case .handedOver(let id, let oldFeeder, let needsRate, let seekable, let audibleIn):
            log.info("\(id) started (gapless), heard in \(audibleIn)")
            oldFeeder?.detach()  // the old track's bytes are all read by now
            shared.withLock { $0.current?.feeder }?.source.setBackground(false)
            // Announced when it is heard: until then the previous track's end still sounds.
            shared.withLock { $0.unannounced = (id, seekable) }
            let heard = Int(audibleIn.components.seconds) * 1000 + Int(audibleIn.components.attoseconds / 1_000_000_000_000_000)
            control.asyncAfter(deadline: .now() + .milliseconds(heard)) { [self] in announceStart(of: id) }
            // Formats whose length is known up front post no DURATION_CHANGED for the new
            // stream, and playbin answers the query only once the stream has settled.
            for delay in [0, 50, 200, 1000] {
                control.asyncAfter(deadline: .now() + .milliseconds(heard + delay)) { [self] in
                    if let started = shared.withLock({ $0.current }), started.track.id == id, started.duration == nil {
                        reportDuration(of: started)
                    }
                }
            }
            // A new stream starts at rate 1.0; carry the listener's rate over. The filter
            // may not fit the new track (one that could not seek kept its rate change as
            // a plain seek, without a rebuild): rebuild then.
            control.async { [self] in
                enum Plan { case seek, rebuild, nothing }
                let plan = shared.withLock { state -> Plan in
                    guard state.current?.track.id == id else { return .nothing }
                    if filterMismatchLocked(state) { return .rebuild }
                    guard needsRate else { return .nothing }
                    state.current?.seeking = true
                    state.current?.silentSeek = true
                    return .seek
                }
                switch plan {
                case .seek: performSeek(to: position() ?? .zero)
                case .rebuild: reconfigure(at: position() ?? .zero)
                case .nothing: break
                }
            }
        case .none:
            break
        }
    }

    /// A state change or seek finished: apply a pending start position, report a finished seek.
    private func asyncDone(_ current: Current, afterMarker marker: UInt64) {
        reportDuration(of: current)
        control.async { [self] in
            enum Next {
                case seek(Duration, exact: Bool), reconfigure(Duration), seeked(playing: Bool, silent: Bool), stale, nothing
            }
            let next = shared.withLock { state -> Next in
                guard let now = state.current, now.uri == current.uri else { return .nothing }
                // A seek or preroll of the pipeline before a rebuild ended late: not the restart.
                if now.reconfiguring && marker != now.restartMarker { return .stale }
                if !now.prerolled && filterMismatchLocked(state) {
                    // The rate crossed 1.0 before the track was ready: another filter first.
                    return .reconfigure(now.startPosition ?? now.heldPosition ?? .zero)
                }
                state.current?.prerolled = true
                if let start = now.startPosition {
                    state.current?.startPosition = nil
                    state.current?.seeking = true
                    // A rate applied at the start, or the position a rate change found.
                    state.current?.silentSeek = start == .zero || now.silentStart
                    state.current?.silentStart = false
                    // A restart where a rate change found the track goes back exactly to what was
                    // heard; a start position (resume, a seek before the preroll) is a listener's seek.
                    return .seek(start, exact: now.silentStart || FeedingMode.exactSeeks(now.track))
                }
                if now.seeking {
                    state.current?.seeking = false
                    state.current?.silentSeek = false
                    state.current?.reconfiguring = false
                    state.current?.heldPosition = nil
                    return .seeked(playing: state.wantPlaying, silent: now.silentSeek)
                }
                state.current?.reconfiguring = false  // a rebuild that needed no seek is done
                state.current?.heldPosition = nil
                return .nothing
            }
            log.trace("async-done (marker \(marker)): \(next)")
            switch next {
            case .reconfigure(let position):
                reconfigure(at: position)
            case .seek(let start, let exact):
                performSeek(to: start, accurate: exact)
            case .seeked(let playing, let silent):
                if !silent, let position = position() { emit(.seeked(current.track.id, position: position)) }
                if playing { gst_element_set_state(playbin, GST_STATE_PLAYING) }
            case .stale:
                break
            case .nothing:
                if shared.withLock({ $0.wantPlaying && $0.current?.uri == current.uri }) {
                    gst_element_set_state(playbin, GST_STATE_PLAYING)
                }
            }
        }
    }

    /// Forgets the prepared next track whose stream broke in playbin's next group. playbin holds
    /// the current track's last buffers back until the next stream starts, which it never will,
    /// and keeps the broken group through a rebuild: the current track is loaded again from
    /// scratch where it is heard, without a next, so it plays to its end and ends with an end of
    /// stream; the player then loads the broken track and hears its error.
    private func dropBrokenNext(uri: String) {
        let reload = shared.withLock { state -> (EngineTrack, Bool)? in
            guard let next = state.next, next.uri == uri, let current = state.current else { return nil }
            state.brokenNext = uri
            return (current.track, state.wantPlaying)
        }
        guard let (track, playing) = reload else { return }
        log.info("reloading \(track.id) without the broken next track")
        load(track, at: position() ?? .zero, playing: playing)
    }

    /// Whether the first bytes `source` holds now may be media: false only when 4 KiB or the
    /// whole resource are here and GStreamer's type finders know none of it or call it text or
    /// an image (an HTML error page named `.mp3`); bytes not here yet are not waited for.
    private static func mayBeMedia(_ source: ByteSource, url: URL) -> Bool {
        guard case .data(let head) = source.read(at: 0, maxLength: 16 * 1024, wake: {}) else {
            source.cancelPendingReads()
            return true
        }
        guard head.count >= 4096 || head.count < 16 * 1024 else { return true }
        let ext = url.pathExtension.isEmpty ? nil : url.pathExtension
        var probability = GST_TYPE_FIND_NONE
        let caps = head.withUnsafeBytes { bytes in
            gst_type_find_helper_for_data_with_extension(
                nil, bytes.baseAddress?.assumingMemoryBound(to: guint8.self), gsize(bytes.count), ext, &probability)
        }
        guard let caps else { return false }
        defer { gst_caps_unref(caps) }
        // decodebin stops at a text or image type with "this appears to be a text file".
        let name = gst_caps_get_structure(caps, 0).map { String(cString: gst_structure_get_name($0)) } ?? ""
        return !name.hasPrefix("text/") && !name.hasPrefix("image/")
    }

    /// Tells the player that the handed-over track `id` is heard, once.
    private func announceStart(of id: TrackID) {
        let seekable = shared.withLock { state -> Bool? in
            guard let pending = state.unannounced, pending.id == id else { return nil }
            state.unannounced = nil
            return state.current?.track.id == id ? pending.seekable : nil
        }
        guard let seekable else { return }
        emit(.seekable(id, seekable))
        emit(.trackStarted(id))
    }

    private func reportDuration(of current: Current) {
        var length: gint64 = 0
        guard gst_element_query_duration(playbin, GST_FORMAT_TIME, &length) != 0, length > 0 else { return }
        let value = Duration.nanoseconds(Int64(length))
        let changed = shared.withLock { state -> Bool in
            guard state.current?.uri == current.uri, state.current?.duration != value else { return false }
            state.current?.duration = value
            return true
        }
        if changed {
            if let feeder = current.feeder, let bytes = feeder.info.length, bytes > 0 {
                // The source's wait-or-seek rule counts seconds of audio as well as bytes.
                feeder.source.setByteRate(Double(bytes) / (Double(length) / 1e9))
            }
            emit(.duration(current.track.id, value))
        }
    }

    private func emit(_ event: EngineEvent) {
        guard let handler = shared.withLock({ $0.handler }) else { return }
        eventQueue.async { handler(event) }
    }
}
