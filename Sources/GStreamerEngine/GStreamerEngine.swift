import Basics
import ByteSourceAPI
internal import CGStreamer
import Dispatch
import EngineAPI
import FoundationEssentials
import Synchronization

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

    /// What stands in playbin's audio-filter slot.
    enum RateFilter {
        /// No filter: decoders negotiate the formats they would without Spool (S16 for MP3/AAC).
        case none
        /// An `identity`: scaletempo had to leave while the pipeline was only in READY,
        /// where playsink swaps a filter but cannot drop one.
        case passThrough
        /// A `scaletempo`, which keeps the pitch at a rate other than 1.0 (and makes
        /// decoders output float).
        case scaletempo
    }

    struct Shared {
        var handler: (@Sendable (EngineEvent) -> Void)?
        /// The feeders of the tracks in the lifecycle, by the URI playbin has for each.
        var feeders: [String: AppSrcFeeder] = [:]
        /// The loaded track, the prepared next one, and where each is (see ``TrackLifecycle``).
        var lifecycle = TrackLifecycle()
        /// The next URI handed to playbin whose group playbin has not activated yet, and the
        /// signal of its activation (see ``awaitHandOverActivation()``).
        var activating: (uri: String, done: DispatchSemaphore)?
        /// A failure of the loaded track the bus reported and the control queue has not handled
        /// yet: later errors of the same track can only make its kind more exact.
        var pendingFailure: (ticket: LoadTicket, text: String, kind: FailureKind)?
        /// The caps of a slow decoder the loading track needs, loaded once its demuxer or
        /// parser is in place.
        var decoderToPreload: String?
        /// False once `shutdown()` began: no control work starts after that, as it frees the
        /// pipeline such work would touch.
        var accepting = true
        /// The bus thread reads on while true; `shutdown()` clears it only after the control
        /// queue's last work, which may wait for messages only the bus thread passes (the
        /// warm-up's marker).
        var busRunning = true
        /// The bus thread's kernel id, once it runs (tests watch it sleep).
        var busThread: Int32?
        /// Whether the warm-up gave up waiting for the bus to pass its messages.
        var warmUpMissedItsMarker = false
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
        /// When a pause or stop has lasted long enough to let go of the pipeline.
        var idleRelease: IdleRelease
        /// The track let go of after a long pause, which play() loads again (see ``Released``).
        var released: Released?
        /// The player wants the output stream kept (see ``keepOutput(_:)``): no idle release.
        var outputKept = false
        /// The position last reported and the load it is of (see ``HandOverTiming/steadied``).
        var lastHeard: (ticket: LoadTicket, position: Duration)?
        /// The check of live streams' titles against what is heard is scheduled.
        var titleCheckScheduled = false
    }

    let playbin: UnsafeMutablePointer<GstElement>
    let bus: UnsafeMutablePointer<GstBus>
    let makeSource: SourceFactory
    let coverArt: CoverArtStore?
    /// The output's gain; it ramps itself along the audio (see SmoothVolume).
    let volume: SmoothVolume
    /// The output bin (gain and sink) playbin plays into; a reference of the engine's own.
    let output: UnsafeMutablePointer<GstElement>
    /// Whether the newest stream's audio reaches the output: a hand-over is heard only then.
    let firstAudio: FirstAudioWatch
    /// The output bin as a `GstObject`, for the bus's question whether an error came from it.
    var outputObject: UnsafeMutablePointer<GstObject> {
        UnsafeMutableRawPointer(output).assumingMemoryBound(to: GstObject.self)
    }
    let control = DispatchQueue(label: "spool.engine.control")
    let eventQueue = DispatchQueue(label: "spool.engine.events")
    let shared: Mutex<Shared>
    let busStopped = DispatchSemaphore(value: 0)
    /// Signalled when the bus thread has passed the pipeline warm-up's messages.
    let warmUpPassed = DispatchSemaphore(value: 0)
    /// Signalled when the pipeline warm-up begins (tests shut the engine down during it).
    let warmUpBegan = DispatchSemaphore(value: 0)
    let log = Logger(label: "engine")
    /// Whether scaletempo is installed (without it a rate change also changes the pitch).
    let hasScaletempo: Bool

    /// Creates the pipeline. `audioSink` is a gst-launch description (nil: the
    /// desktop's sound server, falling back to a real-time null sink);
    /// `artDirectory` receives embedded cover art (nil: art is not extracted);
    /// after `idleRelease` paused or stopped the pipeline is let go of (nil or zero: never).
    public init(
        audioSink: String?, artDirectory: URL? = nil, idleRelease: Duration? = GStreamerEngine.defaultIdleRelease,
        makeSource: @escaping SourceFactory
    ) throws(EngineError) {
        GStreamer.initialize()
        shared = Mutex(Shared(idleRelease: IdleRelease(delay: idleRelease)))
        guard let playbin = gst_element_factory_make("playbin", "spool-player") else {
            throw EngineError("GStreamer's playbin is missing (install gstreamer1.0-plugins-base)")
        }
        gst_object_ref_sink(UnsafeMutableRawPointer(playbin))
        self.playbin = playbin
        self.makeSource = makeSource
        coverArt = artDirectory.map(CoverArtStore.init(directory:))
        bus = gst_element_get_bus(playbin)
        setProperty(playbin, "flags", "audio+soft-volume")
        // Without a video sink of its own, playbin meets a video stream (a video podcast, or a
        // damaged file that parses as one) by creating and readying candidate video sinks for
        // the decoder it considers, whatever its flags: DirectFB's crashed a headless process.
        // A sink whose caps no decoder makes lets it try none, and skip the video decoders;
        // the stream is left unlinked.
        if let noVideo = gst_element_factory_make("appsink", "spool-no-video") {
            gst_object_ref_sink(UnsafeMutableRawPointer(noVideo))
            setProperty(noVideo, "caps", "video/x-spool-none")
            setProperty(playbin, "video-sink", object: noVideo)
            gst_object_unref(UnsafeMutableRawPointer(noVideo))
        }
        do throws(EngineError) {
            let output = try AudioOutput.make(description: audioSink, log: log)
            setProperty(playbin, "audio-sink", object: output.bin)
            guard let watch = FirstAudioWatch(element: output.bin) else {
                gst_object_unref(UnsafeMutableRawPointer(output.bin))
                throw EngineError("the audio output has no input pad")
            }
            self.output = output.bin
            volume = output.volume
            firstAudio = watch
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
        firstAudio.whenFirstAudio { [weak self] in
            guard let engine = self else { return }
            engine.onControl { engine.audioReachedOutput() }
        }
        startThread(name: "spool.engine.bus") { [self] in self.runBus() }
        onControl { [self] in
            GStreamer.warmUp()
            warmPipeline()
        }
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
            state.released = nil
            // Until the queued load replaces it, the old track must not report its position as
            // the new one's (a session saved in between resumed the new track there).
            state.lifecycle.withPhase { $0.replaced(startingAt: position) }
            return state.latestLoad
        }
        onControl { [self] in
            // Superseded, or shut down.
            guard shared.withLock({ $0.latestLoad == ticket && $0.accepting }) else { return }
            transportChanged(to: playing ? .playing : .paused)
            loadNow(track, at: position, playing: playing)
        }
    }

    /// On the control queue: replaces whatever is loaded with `track` at `position`. `resumed`:
    /// the track comes back after the idle release, where it was (no seek is reported). The
    /// prepared next track, when it is `track`, starts from its open source.
    func loadNow(_ track: EngineTrack, at position: Duration, playing: Bool, resumed: Bool = false) {
        // READY: the track starts at once, in playbin's decoding bins of the last one.
        let (ticket, promoted) = tearDown(to: GST_STATE_READY) {
            state -> (TrackLifecycle.Teardown, (LoadTicket, AppSrcFeeder?)) in
            let plan = state.lifecycle.load(track)
            state.lifecycle.wantPlaying = playing
            let promoted = plan.promoted.flatMap { state.feeders.removeValue(forKey: $0) }
            return (plan.teardown, (plan.ticket, promoted))
        }
        log.info("loading \(track.id): \(loggable(track.url))")
        if let promoted {
            log.debug("\(track.id): its prepared source is open; starting it")
            promoted.source.setBackground(false)
            start(track, feeder: promoted, ticket: ticket, at: position, resumed: resumed)
            return
        }
        defer { openOutput() }  // once the request has left: the two wait side by side
        open(track) { [self] result in
            switch result {
            case .failure(let error):
                let current = shared.withLock { state -> Bool in
                    guard state.lifecycle.openFailed(ticket) else { return false }
                    state.released = nil
                    return true
                }
                guard current else { return }
                log.warning("\(track.id): \(error)")
                let kind = FailureKinds.kind(of: error)
                emit(.failed(track.id, EngineError(error.description, kind: kind, position: position)))
            case .success(let feeder):
                start(track, feeder: feeder, ticket: ticket, at: position, resumed: resumed)
            }
        }
    }

    /// Opens the following track's source ahead of time for a gapless hand-over.
    public func setNext(_ track: EngineTrack?) {
        onControl { [self] in
            // Let go of with its track: prepared again when that track comes back.
            if shared.withLock({ state -> Bool in
                guard let released = state.released, !released.resuming else { return false }
                state.released?.next = track
                return true
            }) {
                return
            }
            let (plan, dropped) = shared.withLock { state -> (TrackLifecycle.NextPlan, AppSrcFeeder?) in
                let plan = state.lifecycle.prepareNext(track) { Self.uri(of: $0, url: track?.url) }
                return (plan, plan.dropped.flatMap { state.feeders.removeValue(forKey: $0) })
            }
            dropped?.detach()
            guard let following = plan.opening else { return }
            open(following.track, background: true) { [self] result in
                switch result {
                case .failure(let error):
                    // The current track plays on; the player will try this one again when it comes.
                    log.warning("next \(following.track.id) cannot be prepared: \(error)")
                    shared.withLock { $0.lifecycle.nextFailed(following.ticket) }
                case .success(let feeder):
                    let mayBeMedia = Self.mayBeMedia(feeder.source, url: following.track.url)
                    let accepted = shared.withLock { state -> Bool in
                        guard
                            state.lifecycle.nextOpened(
                                following.ticket, seekable: feeder.seekable, mayBeMedia: mayBeMedia)
                        else { return false }
                        state.feeders[following.uri] = feeder
                        return true
                    }
                    if !accepted { feeder.detach() }
                    if accepted, let station = feeder.info.live { emit(.liveStream(following.track.id, station)) }
                }
            }
        }
    }

    /// The appsrc URI playbin gets for a load: the ticket names it, and the extension tells
    /// GStreamer's type finders what to try first (see ``TypeHint``).
    static func uri(of ticket: LoadTicket, url: URL?, contentType: String? = nil) -> String {
        let base = "appsrc://spool/\(ticket.track.rawValue)-\(ticket.generation)"
        guard let url else { return base }
        return TypeHint.uri(base, url: url, contentType: contentType)
    }

    /// Starts or resumes playback of the loaded track.
    public func play() {
        onControl { [self] in
            transportChanged(to: .playing)
            if resumeReleased() { return }
            let loaded = shared.withLock { state -> Bool in
                state.lifecycle.wantPlaying = true
                return state.lifecycle.current?.phase.isPrerolled ?? false
            }
            if loaded { gst_element_set_state(playbin, GST_STATE_PLAYING) }
        }
    }

    /// Pauses playback, keeping the position.
    public func pause() {
        onControl { [self] in
            transportChanged(to: .paused)
            let loaded = shared.withLock { state -> Bool in
                state.lifecycle.wantPlaying = false
                return state.lifecycle.current != nil
            }
            if loaded { gst_element_set_state(playbin, GST_STATE_PAUSED) }
        }
    }

    /// Keeps the paused pipeline, and with it the sound server's stream, past `idleRelease`
    /// while `keep` holds: the server tells the end of a call to the stream it corked.
    public func keepOutput(_ keep: Bool) {
        shared.withLock { $0.outputKept = keep }
    }

    /// Unloads the track (and the prepared next one).
    public func stop() {
        onControl { [self] in
            shared.withLock { state in
                state.lifecycle.cancelOpening()
                state.released = nil
            }
            transportChanged(to: .stopped)
            teardown()
            emit(.stateChanged(.idle))
        }
    }

    /// Seeks the loaded track accurately to `target`, at the current rate.
    public func seek(to target: Duration) {
        shared.withLock {
            $0.pendingSeek = target
            $0.lastHeard = nil  // the position moves: what was heard before says nothing of it
        }
        onControl { [self] in
            enum Plan {
                case seek(exact: Bool)
                case later
                case reload(EngineTrack, EngineTrack?, playing: Bool)
                case released(TrackID)
                case nothing
            }
            func plan(for position: Duration, in state: inout Shared) -> Plan {
                if let released = state.released {
                    // Let go of after a long pause: the track comes back at the new place.
                    state.released?.position = position
                    return .released(released.track.id)
                }
                guard let current = state.lifecycle.current else { return .nothing }
                if state.lifecycle.isHandedOver {
                    // playbin cannot seek back once it holds the next URI: reload the
                    // track at the target (from cache) and queue the next one again.
                    return .reload(current.track, state.lifecycle.next?.track, playing: state.lifecycle.wantPlaying)
                }
                if state.feeders[current.uri]?.seeksByReload == true {
                    // Its demuxer cannot seek (see ``AppSrcFeeder/lengthHidden``), but every byte
                    // is here: loaded again at the target, it reads them at will.
                    return .reload(current.track, state.lifecycle.next?.track, playing: state.lifecycle.wantPlaying)
                }
                // Not prerolled yet: the seek becomes the start, applied once prerolled.
                guard state.lifecycle.withPhase({ $0.listenerSeek(to: position) }) == .now else { return .later }
                return .seek(exact: FeedingMode.exactSeeks(current.track))
            }
            // One step: the position reported goes from the pending seek to the phase's target
            // with no moment in between where the pipeline, flushing, answers.
            let taken = shared.withLock { state -> (Duration, Plan)? in
                guard let position = state.pendingSeek else { return nil }  // a later seek in the burst took it
                state.pendingSeek = nil
                return (position, plan(for: position, in: &state))
            }
            guard let (position, plan) = taken else { return }
            switch plan {
            case .seek(let exact):
                performSeek(to: position, accurate: exact)
            case .reload(let track, let next, let playing):
                log.debug("\(track.id): reloading at \(position.forPeople) to seek there")
                load(track, at: position, playing: playing)
                setNext(next)
            case .released(let id):
                emit(.seeked(id, position: position))
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
        onControl { [self] in
            enum Plan {
                case seek(exact: Bool)
                case reconfigure, nothing
            }
            let plan = shared.withLock { state -> Plan in
                guard state.rate != clamped else { return .nothing }
                state.rate = clamped
                // Not prerolled yet: asyncDone applies the rate (and the filter it needs).
                guard let current = state.lifecycle.current, current.phase.isPrerolled else { return .nothing }
                if filterMismatchLocked(state) {
                    // playbin already holds the next track (about-to-finish): a rebuild now races the
                    // hand-over (seen under load: the next track never started). What is left of this
                    // track is already decoded ahead; the hand-over rebuilds for the new rate instead.
                    if state.lifecycle.isHandedOver { return .nothing }
                    return .reconfigure
                }
                state.lifecycle.withPhase { $0.rateSeek() }
                // At the play head baseparse is exact anyway when it got there by parsing; after a
                // far seek (through the seek table) an accurate one would parse up from its index.
                return .seek(exact: FeedingMode.exactSeeks(current.track))
            }
            log.trace("rate \(clamped): \(plan)")
            // A seek in flight answers no position query: it is going to its target.
            let position = position() ?? shared.withLock { $0.lifecycle.current?.phase.target } ?? .zero
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
    static let restartMarkerName = "spool-restart"
    /// The name of the application message that wakes the bus thread to end it.
    static let busStopMarkerName = "spool-bus-stop"

    /// Posts an application message named `name` on the pipeline's bus: the bus thread meets it
    /// after every message posted before it. Not in NULL, where the bus drops what is posted.
    func postMarker(_ name: String) {
        guard let structure = gst_structure_new_empty(name) else { return }
        gst_bus_post(
            bus,
            gst_message_new_application(
                UnsafeMutableRawPointer(playbin).assumingMemoryBound(to: GstObject.self), structure))
    }

    /// The position of the loaded track, from the pipeline.
    public func position() -> Duration? { heardPosition()?.position }

    /// The position and the track it is heard in: the previous one while its last samples
    /// still sound after a hand-over.
    public func heardPosition() -> HeardPosition? {
        let (phase, ticket, unannounced, released, pendingSeek, handingOver, last) = shared.withLock {
            (
                $0.lifecycle.current?.phase, $0.lifecycle.current?.ticket, $0.lifecycle.unannounced,
                $0.released?.position, $0.pendingSeek, $0.lifecycle.isHandedOver, $0.lastHeard
            )
        }
        let current = ticket?.track
        // Let go of after a long pause; it comes back there.
        if let released { return HeardPosition(track: current, position: released) }
        // A seek asked for and not yet on its way: the listener asked to be there.
        if let pendingSeek, phase != nil { return HeardPosition(track: current, position: pendingSeek) }
        if let unannounced, let previousEnd = unannounced.previousEnd {
            // The previous track's last samples are still playing.
            return HeardPosition(track: unannounced.previous, position: previousEnd)
        }
        guard let phase, let ticket else { return nil }
        let reported = phase.reportedPosition { [playbin] in
            var position: gint64 = 0
            guard gst_element_query_position(playbin, GST_FORMAT_TIME, &position) != 0, position >= 0 else {
                return nil
            }
            return .nanoseconds(Int64(position))
        }
        guard
            let position = HandOverTiming.steadied(reported, last: last, ticket: ticket, handingOver: handingOver)
        else { return nil }
        shared.withLock { state in
            if state.lifecycle.current?.ticket == ticket { state.lastHeard = (ticket, position) }
        }
        return HeardPosition(track: current, position: position)
    }

    /// Runs `work` on the control queue (at `deadline`, if given) unless the engine has shut
    /// down by then: shutdown frees the pipeline the work would touch, and a watchdog or a
    /// deferred report can come due after it.
    func onControl(at deadline: DispatchTime? = nil, _ work: @escaping @Sendable () -> Void) {
        let unlessShutDown: @Sendable () -> Void = { [self] in
            guard shared.withLock({ $0.accepting }) else { return }
            work()
        }
        if let deadline {
            control.asyncAfter(deadline: deadline, execute: unlessShutDown)
        } else {
            control.async(execute: unlessShutDown)
        }
    }

    /// Stops playback, ends the bus thread and frees the pipeline.
    public func shutdown() {
        let first = shared.withLock { state -> Bool in
            defer {
                state.accepting = false
                // A load whose source is still opening must not start on a freed pipeline.
                state.lifecycle.cancelOpening()
            }
            return state.accepting
        }
        guard first else { return }
        control.sync {
            teardown()
            // A load whose source failed to open left the pipeline in READY with no track, and
            // the device may be open ahead of a track: GStreamer wants every element at NULL
            // (its device closed) before its last reference goes.
            gst_element_set_state(playbin, GST_STATE_NULL)
            gst_element_set_state(output, GST_STATE_NULL)
        }
        shared.withLock { $0.busRunning = false }
        // The pipeline at NULL leaves its bus flushing, which drops posts: the wake-up is let
        // through, and the bus thread, waiting with no timeout, sees that it is to stop.
        gst_bus_set_flushing(bus, 0)
        postMarker(Self.busStopMarkerName)
        busStopped.wait()
        gst_object_unref(UnsafeMutableRawPointer(bus))
        gst_object_unref(UnsafeMutableRawPointer(playbin))
        gst_object_unref(UnsafeMutableRawPointer(output))
    }
}
