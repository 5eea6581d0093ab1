import Basics
import ByteSourceAPI
internal import CGStreamer
import Dispatch
import EngineAPI
import FoundationEssentials
import Synchronization

/// The bus thread: GStreamer's messages turned into engine events, each routed to the track
/// whose stream it concerns (stream starts, prerolls and seeks done, tags, durations, errors).
extension GStreamerEngine {
    func runBus() {
        let wanted = [
            GST_MESSAGE_EOS, GST_MESSAGE_ERROR, GST_MESSAGE_WARNING, GST_MESSAGE_STATE_CHANGED,
            GST_MESSAGE_TAG, GST_MESSAGE_STREAM_START, GST_MESSAGE_DURATION_CHANGED, GST_MESSAGE_ASYNC_DONE,
            GST_MESSAGE_APPLICATION, GST_MESSAGE_REQUEST_STATE,
        ].reduce(0) { $0 | $1.rawValue }
        // Waits with no timeout (GST_CLOCK_TIME_NONE): the thread wakes only for a message, and
        // ``shutdown()`` posts one to end it. An idle daemon's bus thread never wakes on its own.
        let thread = currentThreadID()
        shared.withLock { $0.busThread = thread }
        while shared.withLock({ $0.busRunning }) {
            guard
                let message = gst_bus_timed_pop_filtered(
                    bus, GstClockTime.max, GstMessageType(rawValue: wanted))
            else { continue }
            handle(message)
            gst_message_unref(message)
        }
        busStopped.signal()
    }

    func handle(_ message: UnsafeMutablePointer<GstMessage>) {
        let fromPlaybin = UnsafeMutableRawPointer(message.pointee.src) == UnsafeMutableRawPointer(playbin)
        if message.pointee.type == GST_MESSAGE_STREAM_START {
            streamStarted()
            return
        }
        if message.pointee.type == GST_MESSAGE_APPLICATION {
            if let structure = gst_message_get_structure(message) {
                switch String(cString: gst_structure_get_name(structure)) {
                case Self.restartMarkerName: shared.withLock { $0.markersSeen &+= 1 }
                case Self.warmUpMarkerName: warmUpPassed.signal()
                default: break
                }
            }
            return
        }
        if message.pointee.type == GST_MESSAGE_REQUEST_STATE {
            soundServerRequested(message)
            return
        }
        guard let current = shared.withLock({ $0.lifecycle.current }) else { return }
        let id = current.track.id
        switch message.pointee.type {
        case GST_MESSAGE_EOS:
            log.info("\(id) ended")
            if current.duration == nil { reportDuration(of: current) }  // a short track ended before it was asked
            for event in shared.withLock({ $0.lifecycle.endOfStream() }) { emit(event) }
        case GST_MESSAGE_ERROR:
            var error: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            gst_message_parse_error(message, &error, &debug)
            let text = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            // The output bin's own elements (the sink, its converters) fail for no track's sake.
            let fromOutput = gst_object_has_as_ancestor(message.pointee.src, outputObject) != 0
            let details = takeGString(debug) ?? ""
            let generic = error.map { FailureKinds.isGeneric(domain: $0.pointee.domain, code: $0.pointee.code) } ?? true
            let kind: FailureKind =
                fromOutput
                ? .outputLost
                : generic && FailureKinds.noStreamHadData(details)
                    ? .unsupported
                    : error.map { FailureKinds.kind(domain: $0.pointee.domain, code: $0.pointee.code) } ?? .transient
            if let error { g_error_free(error) }
            let from =
                fromOutput ? .pipeline : streamOrigin(of: message.pointee.src, below: UnsafeMutableRawPointer(playbin))
            switch shared.withLock({ $0.lifecycle.route(errorFrom: from) }) {
            case .next(let uri, let track):
                // The next track's stream broke while the current one still plays: it plays to its
                // end, and the player loads the next track again then and hears its own error.
                log.error("\(track.map { "\($0)" } ?? "a dropped track") (next): \(text) (\(details))")
                onControl { [self] in dropBrokenNext(uri: uri) }
            case .startBroke(let ticket):
                log.error("\(ticket.track) broke before it was heard; the track before it ends: \(text) (\(details))")
                let events = shared.withLock { $0.lifecycle.startBroke(ticket) }
                for event in events { emit(event) }
            case .current(let ticket):
                log.error("\(ticket.track): \(text) (\(details))")
                // One failure per track: errors that follow before it is handled only make its kind
                // more exact (an element's own error and the generic one its stream's end posts
                // come from two threads, in either order).
                let first = shared.withLock { state -> Bool in
                    if let pending = state.pendingFailure, pending.ticket == ticket {
                        if pending.kind == .transient && kind != .transient {
                            state.pendingFailure = (ticket, text, kind)
                        }
                        return false
                    }
                    state.pendingFailure = (ticket, text, kind)
                    return true
                }
                if first { onControl { [self] in fail(ticket) } }
            case .none:
                // A stream no track has any more (a dropped next, a load replaced): said, so a track
                // that waits on an error which went elsewhere can be traced.
                log.debug("an error of a stream no track has (\(from.uri ?? "torn down")): \(text) (\(details))")
            }
        case GST_MESSAGE_WARNING:
            var error: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            gst_message_parse_warning(message, &error, &debug)
            log.warning("\(id): \(error.map { String(cString: $0.pointee.message) } ?? "") \(takeGString(debug) ?? "")")
            if let error { g_error_free(error) }
        case GST_MESSAGE_STATE_CHANGED where fromPlaybin:
            var old = GST_STATE_NULL
            var new = GST_STATE_NULL
            var pending = GST_STATE_NULL
            gst_message_parse_state_changed(message, &old, &new, &pending)
            func lifecycleState(_ state: GstState) -> TrackLifecycle.PipelineState {
                switch state {
                case GST_STATE_PLAYING: .playing
                case GST_STATE_PAUSED: .paused
                case GST_STATE_READY: .ready
                default: .null
                }
            }
            let next = pending == GST_STATE_VOID_PENDING ? nil : lifecycleState(pending)
            if let event = shared.withLock({ $0.lifecycle.pipelineChanged(to: lifecycleState(new), pending: next) }) {
                emit(event)
            }
        case GST_MESSAGE_TAG:
            var list: UnsafeMutablePointer<GstTagList>?
            gst_message_parse_tag(message, &list)
            if let list {
                var tags = TagReader.read(list)
                let picture = coverArt?.picture(in: list)
                gst_tag_list_unref(list)
                if let picture, let coverArt {
                    tags.artURL = picture.url
                    // Written on the event queue, ahead of every event that could name it; the bus
                    // thread writes no file.
                    eventQueue.async { coverArt.write(picture) }
                }
                guard !tags.isEmpty else { break }
                let from = streamOrigin(of: message.pointee.src, below: UnsafeMutableRawPointer(playbin))
                if let event = shared.withLock({ $0.lifecycle.tagsRead(tags, from: from) }) { emit(event) }
            }
        case GST_MESSAGE_DURATION_CHANGED:
            reportDuration(of: current)
        case GST_MESSAGE_ASYNC_DONE where fromPlaybin:
            asyncDone(current, afterMarker: shared.withLock { $0.markersSeen })
        default:
            break
        }
    }

    /// The sink asks for a state on the sound server's behalf: pulsesink turns the server's cork
    /// request into PAUSED and its uncork into PLAYING. The player decides what to do.
    func soundServerRequested(_ message: UnsafeMutablePointer<GstMessage>) {
        var requested = GST_STATE_VOID_PENDING
        gst_message_parse_request_state(message, &requested)
        let request: SoundServerRequest
        switch requested {
        case GST_STATE_PAUSED: request = .pause
        case GST_STATE_PLAYING: request = .play
        default: return
        }
        log.info("the sound server asks to \(request == .pause ? "pause" : "play again")")
        emit(.soundServerRequest(request))
    }

    /// A new stream's audio started: the first track, or the next one after a gapless hand-over.
    func streamStarted() {
        let playing = stringProperty(playbin, "current-uri")
        // Still the previous track's position: its samples are not all played yet.
        var switchPosition: gint64 = -1
        let positionKnown =
            gst_element_query_position(playbin, GST_FORMAT_TIME, &switchPosition) != 0 && switchPosition >= 0
        let (start, previousFeeder, needsRate) = shared.withLock {
            state -> (TrackLifecycle.StreamStart, AppSrcFeeder?, Bool) in
            let start = state.lifecycle.streamStarted(
                uri: playing, positionAtSwitch: positionKnown ? .nanoseconds(switchPosition) : nil, rate: state.rate)
            guard case .handedOver(_, let previous, _) = start else { return (start, nil, false) }
            return (start, previous.flatMap { state.feeders.removeValue(forKey: $0) }, state.rate != 1)
        }
        switch start {
        case .first(let id):
            emit(.trackStarted(id))
        case .handedOver(let started, _, let audibleIn):
            let id = started.track.id
            log.info("\(id) started (gapless), heard in \(audibleIn)")
            previousFeeder?.detach()  // the old track's bytes are all read by now
            shared.withLock { $0.feeders[started.uri] }?.source.setBackground(false)
            let heard = DispatchTime.now() + .nanoseconds(Int(nanoseconds(audibleIn)))
            onControl(at: heard) { [self] in previousTailPlayed(startedTrack: id) }
            // Formats whose length is known up front post no DURATION_CHANGED for the new
            // stream, and playbin answers the query only once the stream has settled.
            // After the last try its tags go without a length.
            for delay in [0, 50, 200, 1000] {
                onControl(at: heard + .milliseconds(delay)) { [self] in
                    if let now = shared.withLock({ $0.lifecycle.current }), now.ticket == started.ticket,
                        now.duration == nil
                    {
                        reportDuration(of: now)
                    }
                    guard delay == 1000 else { return }
                    if let event = shared.withLock({ $0.lifecycle.settled(started.ticket) }) { emit(event) }
                }
            }
            // A new stream starts at rate 1.0; carry the listener's rate over. The filter
            // may not fit the new track (one that could not seek kept its rate change as
            // a plain seek, without a rebuild): rebuild then.
            onControl { [self] in
                enum Plan { case seek, rebuild, nothing }
                let plan = shared.withLock { state -> Plan in
                    guard state.lifecycle.isCurrent(started.ticket) else { return .nothing }
                    if filterMismatchLocked(state) { return .rebuild }
                    guard needsRate else { return .nothing }
                    state.lifecycle.withPhase { $0.rateSeek() }
                    return .seek
                }
                switch plan {
                // The new track is at its start (the previous one's tail still plays).
                case .seek: performSeek(to: .zero)
                case .rebuild: reconfigure(at: .zero)
                case .nothing: break
                }
            }
        case .none:
            break
        }
    }

    /// A state change or seek finished: apply a pending start position, report a finished seek.
    func asyncDone(_ current: TrackLifecycle.Loaded, afterMarker marker: UInt64) {
        reportDuration(of: current)
        // Prerolled without a length (a live stream): its tags go without one.
        if let event = shared.withLock({ $0.lifecycle.settled(current.ticket) }) { emit(event) }
        onControl { [self] in
            enum Next {
                case seek(Duration, exact: Bool)
                case reconfigure(Duration)
                case seeked(playing: Bool, silent: Bool)
                case stale, nothing
            }
            let next = shared.withLock { state -> Next in
                guard state.lifecycle.isCurrent(current.ticket), let now = state.lifecycle.current else {
                    return .nothing
                }
                // The rate crossed 1.0 before the track was ready: another filter first.
                let mismatch = !now.phase.isPrerolled && filterMismatchLocked(state)
                let exact = FeedingMode.exactSeeks(now.track)
                let action = state.lifecycle.withPhase {
                    $0.asyncDone(markersSeen: marker, filterMismatch: mismatch, exactSeeks: exact)
                }
                switch action {
                case .stale: return .stale
                case .rebuild(let position): return .reconfigure(position)
                case .seek(let start, let exact): return .seek(start, exact: exact)
                case .seeked(let quiet): return .seeked(playing: state.lifecycle.wantPlaying, silent: quiet)
                case .resume, nil: return .nothing
                }
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
                if shared.withLock({ $0.lifecycle.wantPlaying && $0.lifecycle.isCurrent(current.ticket) }) {
                    gst_element_set_state(playbin, GST_STATE_PLAYING)
                }
            }
        }
    }

    /// The track before the handed-over `id` has played its last samples: `id` is heard if its
    /// audio has reached the output (else once it does), or the previous track ended if `id`
    /// broke before that.
    func previousTailPlayed(startedTrack id: TrackID) {
        let audio = firstAudio.isFlowing
        for event in shared.withLock({ $0.lifecycle.tailPlayed(id, audioFlowing: audio) }) { emit(event) }
    }

    /// A new stream's first audio reached the output: a handed-over track waiting for it is heard.
    func audioReachedOutput() {
        for event in shared.withLock({ $0.lifecycle.audioFlowing() }) { emit(event) }
    }

    /// On the control queue: the loaded track of `ticket` failed (with the pending failure's
    /// message and kind); the pipeline is torn down, and the failure carries where the track
    /// was, so a retry resumes there.
    func fail(_ ticket: LoadTicket) {
        let failure = shared.withLock { state -> (text: String, kind: FailureKind)? in
            guard let pending = state.pendingFailure, pending.ticket == ticket else { return nil }
            state.pendingFailure = nil
            return state.lifecycle.isCurrent(ticket) ? (pending.text, pending.kind) : nil
        }
        guard let failure else { return }
        let error = EngineError(failure.text, kind: failure.kind, position: position())
        let events = shared.withLock { $0.lifecycle.failed(ticket, error) }
        teardown()
        for event in events { emit(event) }
    }

    /// Reports the loaded track's length once the pipeline answers a new one, and tells its
    /// source the byte rate (its wait-or-seek rule counts seconds of audio as well as bytes).
    func reportDuration(of current: TrackLifecycle.Loaded) {
        // A live stream has no length, whatever a header frame in it (a looped file's Xing
        // frame) makes the parser believe.
        let info = shared.withLock { $0.feeders[current.uri]?.info }
        if info?.live != nil { return }
        var length: gint64 = 0
        if let known = info?.duration {
            // The source knows the length (a playlist of segments, which the decoder sees as
            // one stream with no length, or with a guess).
            length = gint64(known / .nanoseconds(1))
        } else {
            guard gst_element_query_duration(playbin, GST_FORMAT_TIME, &length) != 0, length > 0 else { return }
        }
        let value = Duration.nanoseconds(Int64(length))
        // The source learns a new length's byte rate at once; the description may wait for the
        // track's tags (``TrackLifecycle/durationKnown(_:for:)``).
        let (isNew, event, feeder) = shared.withLock { state -> (Bool, EngineEvent?, AppSrcFeeder?) in
            guard state.lifecycle.isCurrent(current.ticket), state.lifecycle.current?.duration != value else {
                return (false, nil, nil)
            }
            return (true, state.lifecycle.durationKnown(value, for: current.ticket), state.feeders[current.uri])
        }
        guard isNew else { return }
        if let feeder, let bytes = feeder.info.length, bytes > 0 {
            feeder.source.setByteRate(Double(bytes) / (Double(length) / 1e9))
        }
        if let event { emit(event) }
    }

    func emit(_ event: EngineEvent) {
        guard let handler = shared.withLock({ $0.handler }) else { return }
        eventQueue.async { handler(event) }
    }
}
