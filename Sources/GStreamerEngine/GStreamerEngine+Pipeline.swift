import Basics
import ByteSourceAPI
internal import CGStreamer
import Dispatch
import EngineAPI
import FoundationEssentials
import Synchronization

/// The engine's work on its control queue: opening a track's source, starting, rebuilding
/// and tearing down the pipeline, seeking, and the watchdog of a start that never comes.
extension GStreamerEngine {
    /// Creates and opens a track's source; `done` runs on the control queue. A
    /// source that fails to open is closed here; an opened one belongs to its feeder.
    /// A `background` source (the next track) downloads at preload priority.
    func open(
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
        // The URL's extension alone: the type the origin declares comes with the first response.
        let tail =
            track.url.isFileURL
            ? nil : FeedingMode.tailBeforeStart(format: TypeHint.fileExtension(url: track.url, contentType: nil))
        source.open(tail: tail) { [weak self] result in
            guard let self else { return source.close() }
            self.control.async {
                switch result {
                case .failure(let error):
                    source.close()
                    done(.failure(error))
                case .success(let info):
                    let format = TypeHint.fileExtension(url: track.url, contentType: info.contentType)
                    if let caps = TypeHint.slowDecoderCaps(forExtension: format) {
                        // Loaded while the first bytes travel, but not before the pipeline has
                        // loaded its own plugins (see ``elementAdded(_:)``): loading holds the
                        // dynamic loader's lock, which the first request's set-up, typefind and
                        // the demuxer would wait for (~0.1 s for libav).
                        if background {
                            GStreamer.preloadDecoder(for: caps)
                        } else {
                            self.shared.withLock { $0.decoderToPreload = caps }
                        }
                    }
                    let pulled = FeedingMode.pulls(track, contentType: info.contentType)
                    if pulled, !track.url.isFileURL, info.randomAccess, let length = info.length,
                        let tail = FeedingMode.tailReadBeforeStart(format: format, length: length),
                        !source.holds(tail)
                    {
                        // Asked for now, beside the start, rather than once the header is parsed;
                        // the read only starts the request (no reader waits on it yet), and bytes
                        // already cached are not read here.
                        _ = source.read(at: tail.lowerBound, maxLength: Int(tail.count), wake: {})
                        source.cancelPendingReads()
                    }
                    let feeder = AppSrcFeeder(
                        source: source, info: info, label: "\(track.id)", pulled: pulled,
                        takesShortReads: pulled && FeedingMode.takesShortReads(format: format),
                        tailSoughtBeforeStart: FeedingMode.tailSoughtBeforeStart(format: format, info: info)
                    ) { [weak self] waiting in
                        self?.emit(.buffering(track.id, waiting))
                    }
                    source.whenVariantChosen { [weak self] variant in self?.emit(.variant(track.id, variant)) }
                    if let clock = feeder.liveTitles {
                        source.whenStreamTitle { [weak self] title, offset in
                            clock.titleArrived(title, at: offset)
                            self?.checkLiveTitlesSoon()
                        }
                        source.whenProgramDate { [weak self] date, offset in
                            clock.dateArrived(date, at: offset)
                            self?.checkLiveTitlesSoon()
                        }
                    }
                    done(.success(feeder))
                }
            }
        }
    }

    /// Starts the opened `track` of the load `ticket` at `position`; `resumed`: it comes back
    /// after the idle release. A load no longer the newest lets go of its feeder instead.
    func start(
        _ track: EngineTrack, feeder: AppSrcFeeder, ticket: LoadTicket, at position: Duration, resumed: Bool = false
    ) {
        let uri = Self.uri(of: ticket, url: track.url, contentType: feeder.info.contentType)
        var movedToStart = false
        // A seek while the track was coming back moved its place; until now it was reported.
        let (asked, rate) = shared.withLock { (resumed ? ($0.released?.position ?? position) : position, $0.rate) }
        feeder.start(fromItsBeginning: asked == .zero && rate == 1)
        // A source that seeks by restarting begins where asked before the pipeline reads it.
        var restartedAt: Duration?
        if let timeline = feeder.timeline {
            if asked > .zero, feeder.seekable {
                restartedAt = feeder.restart(at: asked, rate: rate)
            } else {
                timeline.restart(target: .zero, pieceStart: .zero, rate: rate)
            }
        }
        let playing = shared.withLock { state -> Bool? in
            // A track that cannot seek starts at its beginning, wherever it was asked to start
            // (the player, which showed the place asked, is told below).
            movedToStart = (!feeder.seekable && asked > .zero) || restartedAt == .zero
            let position = feeder.seekable ? asked : .zero
            // A rate other than 1.0 is applied by a seek once prerolled, even at position 0 (a
            // restarted stream's segment carries it).
            let start: Duration? = feeder.timeline == nil && (position > .zero || state.rate != 1) ? position : nil
            let phase: TrackPhase =
                if let restartedAt, restartedAt > .zero {
                    .restarted(at: restartedAt, reported: !resumed)
                } else {
                    resumed ? .resuming(at: start) : .loading(start: start)
                }
            guard state.lifecycle.start(ticket, track: track, uri: uri, phase: phase, seekable: feeder.seekable)
            else { return nil }
            state.released = nil
            state.feeders[uri] = feeder
            return state.lifecycle.wantPlaying && start == nil
        }
        guard let playing else {
            feeder.detach()
            return
        }
        emit(.seekable(track.id, feeder.seekable))
        if feeder.lengthHidden { whenWholeHeld(feeder, track: track, uri: uri) }
        if movedToStart { emit(.seeked(track.id, position: .zero)) }
        if let station = feeder.info.live { emit(.liveStream(track.id, station)) }
        // The pipeline is stopped (NULL): the filter can be set or dropped.
        installRateFilter(stopped: true)
        setProperty(playbin, "uri", uri)
        if gst_element_set_state(playbin, playing ? GST_STATE_PLAYING : GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE {
            log.warning("\(track.id): the pipeline refused to start")
        }
        watchPreroll(of: ticket)
    }

    /// How long a track may fail to start while none of its reads waits for bytes.
    static let prerollStall: Duration = .seconds(4)

    /// Fails a track that neither starts nor waits for bytes: decodebin swallows an error that
    /// a demuxer posts while it is still being set up (it filters errors until the element's
    /// state change returns, and drops them when that succeeds: a truncated M4A, one time in
    /// a few), and the pipeline then waits forever for a stream that will never come. A pipeline
    /// that reached PAUSED started, so it is never failed for this.
    func watchPreroll(of ticket: LoadTicket, stalledFor stalled: Duration = .zero) {
        let step = Duration.milliseconds(500)
        onControl(at: .now() + .milliseconds(500)) { [self] in
            let check = shared.withLock { state -> (id: TrackID, waiting: Bool)? in
                guard state.lifecycle.isCurrent(ticket), let current = state.lifecycle.current,
                    !current.phase.isPrerolled, !current.reachedPaused
                else { return nil }
                return (current.track.id, state.feeders[current.uri]?.isWaitingForBytes ?? false)
            }
            guard let check else { return }
            let stalledNow = check.waiting ? .zero : stalled + step
            guard stalledNow >= Self.prerollStall else {
                watchPreroll(of: ticket, stalledFor: stalledNow)
                return
            }
            log.error("\(check.id): no stream started within \(Self.prerollStall.forPeople) and nothing is awaited")
            teardown()
            emit(
                .failed(
                    check.id,
                    EngineError("the stream stopped before it started (the file may be damaged)", kind: .corrupt)))
        }
    }

    /// Whether the filter in place is not the one the rate needs: scaletempo at
    /// any rate other than 1.0 (when installed), none (or a pass-through) at 1.0.
    /// Only a track that can seek is rebuilt: a stream restarted from its first byte
    /// could not go back to where it was (its rate change stays a plain seek).
    func filterMismatchLocked(_ state: Shared) -> Bool {
        guard state.lifecycle.current?.seekable == true else { return false }
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
    func installRateFilter(stopped: Bool) {
        let (rate, filter) = shared.withLock { ($0.rate, $0.filter) }
        var wanted: RateFilter = hasScaletempo && rate != 1 ? .scaletempo : .none
        if wanted == .none && filter != .none && !stopped { wanted = .passThrough }
        switch wanted {
        case .none:
            if filter != .none {
                setProperty(playbin, "audio-filter", object: nil as UnsafeMutablePointer<GstElement>?)
            }
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
    func reconfigure(at position: Duration) {
        if let feeder = currentFeeder(), feeder.timeline != nil {
            return restart(feeder, at: position, reported: false)
        }
        let uri = shared.withLock { state -> String? in
            guard let current = state.lifecycle.current else { return nil }
            state.markersPosted &+= 1
            let (marker, rateIsOne) = (state.markersPosted, state.rate == 1)
            // The restart marker the rebuilt pipeline's messages follow: an ASYNC_DONE posted
            // before it (a seek that ended as the rebuild began) is stale.
            state.lifecycle.withPhase { $0.rebuild(at: position, marker: marker, rateIsOne: rateIsOne) }
            // playbin may already hold the next URI (about-to-finish): play this
            // track again; the next one is handed over again near the end.
            state.lifecycle.rebuilt()
            return current.uri
        }
        guard let uri else { return }
        awaitHandOverActivation()
        log.debug("rebuilding the pipeline at \(position.forPeople) (rate \(shared.withLock { $0.rate }))")
        gst_element_set_state(playbin, GST_STATE_READY)
        // Everything on the bus before this marker belongs to the pipeline before the rebuild.
        postMarker(Self.restartMarkerName)
        installRateFilter(stopped: false)
        setProperty(playbin, "uri", uri)
        if gst_element_set_state(playbin, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE {
            log.warning("the pipeline refused to restart for a new rate")
        }
    }

    /// Opens the audio device (a sound server's connection takes ~20 ms) while the pipeline is
    /// stopped, so the next start does not wait for it after its decoder is built. On the
    /// control queue, as every state change of the pipeline is: the pipeline cannot start in
    /// between. The idle release and a stop leave the device closed; a load opens it again.
    /// In READY too: playsink sets its audio chain, the device with it, to NULL on the way
    /// down from PAUSED.
    func openOutput() {
        var current = GST_STATE_NULL
        var pending = GST_STATE_NULL
        gst_element_get_state(playbin, &current, &pending, 0)
        guard current == GST_STATE_NULL || current == GST_STATE_READY, pending == GST_STATE_VOID_PENDING else {
            return
        }
        if gst_element_set_state(output, GST_STATE_READY) == GST_STATE_CHANGE_FAILURE {
            log.warning("the audio output could not be opened ahead of the track")
        }
    }

    /// Lets go of every track in the pipeline (see ``tearDown(_:)``).
    func teardown() {
        tearDown { state in (state.lifecycle.teardown(), ()) }
    }

    /// Applies `change` to the shared state and lets go of what the lifecycle's teardown it
    /// returns names: feeders detached (before the state change, so that no streaming thread
    /// waits on the network), then the pipeline to `state`: READY, for a track that starts at
    /// once, keeps playbin's decoding bins for reuse (1 ms less from Next to a prepared track's
    /// first audio). A hand-over's activation is waited out first: its source's set-up still
    /// looks its feeder up.
    @discardableResult
    func tearDown<R>(to state: GstState = GST_STATE_NULL, _ change: (inout Shared) -> (TrackLifecycle.Teardown, R))
        -> R
    {
        awaitHandOverActivation()
        let (gone, stopsPipeline, parser, result) = shared.withLock {
            state -> ([AppSrcFeeder], Bool, ElementRef?, R) in
            let (teardown, result) = change(&state)
            let gone = teardown.uris.compactMap { state.feeders.removeValue(forKey: $0) }
            state.decoderToPreload = nil
            defer { state.parser = nil }
            return (gone, teardown.stopsPipeline, state.parser, result)
        }
        parser?.release()
        for feeder in gone { feeder.detach() }
        if stopsPipeline { gst_element_set_state(playbin, state) }
        return result
    }

    /// Once every byte of `feeder`, whose demuxer was not told the length, is here: the track
    /// can seek (a seek loads it again, see ``AppSrcFeeder/seeksByReload``), and its length is
    /// read from the bytes by a probe of its own, as MPRIS seeks only in a track of known length.
    private func whenWholeHeld(_ feeder: AppSrcFeeder, track: EngineTrack, uri: String) {
        let announced = Atomic(false)
        let announce: @Sendable () -> Void = { [weak self, weak feeder] in
            guard let self, let feeder, feeder.seeksByReload,
                announced.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
            else { return }
            DispatchQueue.global(qos: .utility).async { [self] in
                let found = (try? makeSource(track.url)).flatMap { TagProbe.read($0, url: track.url) }
                onControl { [self] in
                    guard shared.withLock({ $0.feeders[uri] === feeder }) else { return }
                    let length = found?.duration?.forPeople ?? "unknown"
                    log.debug("\(track.id): every byte is here: it can seek; its length: \(length)")
                    emit(.seekable(track.id, true))
                    if let duration = found?.duration { emit(.described(track.id, TrackTags(), duration: duration)) }
                }
            }
        }
        feeder.source.whenTransferred { _ in announce() }
        announce()  // the download may have ended before the handler was in place
    }

    /// Seeks to `position`, as a time or, in a pushed track whose bytes before the target are
    /// not here, as the byte the parser maps it to (see ``SeekRoute``).
    func performSeek(to position: Duration, accurate: Bool = true) {
        if let feeder = currentFeeder(), feeder.timeline != nil {
            let reported = shared.withLock { state in
                state.lifecycle.withPhase { $0.stage == .seeking(reported: true) } ?? false
            }
            return restart(feeder, at: position, reported: reported)
        }
        // A reference of its own: the streaming thread that adds a new parser drops the old one.
        let (rate, feeder, parser) = shared.withLock { state -> (Double, AppSrcFeeder?, ElementRef?) in
            state.lifecycle.withPhase { $0.aim(at: position) }
            let feeder = state.lifecycle.current.flatMap { state.feeders[$0.uri] }
            return (state.rate, feeder, state.parser.map { ElementRef($0.pointer) })
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
            log.debug("seek to \(position.forPeople): byte \(offset) of the parsed stream")
            accepted = gst_element_seek(
                playbin, rate, GST_FORMAT_BYTES, GstSeekFlags(rawValue: flush), GST_SEEK_TYPE_SET, gint64(offset),
                GST_SEEK_TYPE_NONE, -1)
        }
        if accepted == 0 {
            log.warning("seek to \(position.forPeople) at rate \(rate) refused")
            let playing = shared.withLock { state -> Bool in
                state.lifecycle.withPhase { $0.seekRefused() }
                return state.lifecycle.wantPlaying
            }
            if playing { gst_element_set_state(playbin, GST_STATE_PLAYING) }
        }
    }

    /// The loaded track's feeder.
    func currentFeeder() -> AppSrcFeeder? {
        shared.withLock { state in state.lifecycle.current.flatMap { state.feeders[$0.uri] } }
    }

    /// Seeks a track whose source restarts at a time (HLS): the pipeline goes back to READY,
    /// the source begins again at the piece holding `position`, and the stream prerolls there
    /// on the presentation's timeline (``PresentationTimeline``), as a rebuild does around an
    /// open source. The rate filter is set for the current rate on the way. `reported`: a
    /// listener's seek, which ends with a Seeked event.
    func restart(_ feeder: AppSrcFeeder, at position: Duration, reported: Bool) {
        let taken = shared.withLock { state -> (uri: String, rate: Double)? in
            guard let current = state.lifecycle.current, state.feeders[current.uri] === feeder else { return nil }
            state.markersPosted &+= 1
            let marker = state.markersPosted
            state.lifecycle.withPhase { $0.restart(at: position, marker: marker, reported: reported) }
            // playbin may already hold the next URI (about-to-finish): this track plays again,
            // and the next one is handed over again near the end.
            state.lifecycle.rebuilt()
            return (current.uri, state.rate)
        }
        guard let taken else { return }
        awaitHandOverActivation()
        gst_element_set_state(playbin, GST_STATE_READY)
        // Everything on the bus before this marker belongs to the pipeline before the restart.
        postMarker(Self.restartMarkerName)
        let landed = feeder.restart(at: position, rate: taken.rate)
        if landed != position {
            log.warning("the stream could not restart at \(position.forPeople); it starts again from 0")
        }
        log.debug("restarting the stream at \(position.forPeople)")
        installRateFilter(stopped: false)
        setProperty(playbin, "uri", taken.uri)
        if gst_element_set_state(playbin, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE {
            log.warning("the pipeline refused to restart at \(position.forPeople)")
        }
    }
}
