import Basics
import ByteSourceAPI
internal import CGStreamer
import Dispatch
import EngineAPI
import FoundationEssentials
import Synchronization

/// The gapless hand-over and playbin's streaming-thread callbacks: giving playbin the
/// prepared next track at about-to-finish, attaching feeders to the sources playbin makes,
/// and rescuing the playing track when the next one breaks.
extension GStreamerEngine {
    static let onSourceSetup:
        @convention(c) (UnsafeMutablePointer<GstElement>?, UnsafeMutablePointer<GstElement>?, gpointer?) -> Void = {
            _, source, context in
            guard let source, let context else { return }
            Unmanaged<GStreamerEngine>.fromOpaque(context).takeUnretainedValue().setUp(source)
        }

    func setUp(_ source: UnsafeMutablePointer<GstElement>) {
        let uri = takeGString(gst_uri_handler_get_uri(OpaquePointer(source)))
        if uri == Self.warmUpURI { return feedWarmUp(source) }
        let (feeder, activated) = shared.withLock { state -> (AppSrcFeeder?, DispatchSemaphore?) in
            guard let uri else { return (nil, nil) }
            var activated: DispatchSemaphore?
            if state.activating?.uri == uri {
                activated = state.activating?.done
                state.activating = nil
            }
            return (state.feeders[uri], activated)
        }
        // Signalled with playbin's lock still held by this thread (it is set up inside the
        // group's activation), so a state change that waited for it runs after the activation.
        defer { activated?.signal() }
        guard let feeder else {
            log.error(
                "source-setup for an unknown source \(uri ?? "without a URI") (known: \(shared.withLock { Array($0.feeders.keys) }))"
            )
            return
        }
        feeder.attach(to: UnsafeMutableRawPointer(source).assumingMemoryBound(to: GstAppSrc.self))
    }

    /// How long a state change waits for playbin to activate a handed-over group.
    static let activationWait: DispatchTimeInterval = .seconds(1)

    /// Waits until playbin has begun activating the group of a URI handed over at
    /// about-to-finish. playbin activates it on the streaming thread after the handler returns,
    /// without regard to a state change on another thread: a teardown to NULL that passes in
    /// between leaves an activated group behind in the stopped pipeline, and the next load then
    /// prerolls a group without a URI ("No URI specified to play from") or never starts. Once
    /// the group's source is set up, playbin's own lock orders the state change after it.
    /// On the control queue only.
    func awaitHandOverActivation() {
        guard let done = shared.withLock({ $0.activating?.done }) else { return }
        if done.wait(timeout: .now() + Self.activationWait) == .timedOut {
            log.debug("playbin did not activate the handed-over group within \(Self.activationWait)")
        }
        shared.withLock { if $0.activating?.done === done { $0.activating = nil } }
    }

    static let onElementAdded:
        @convention(c) (
            UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<GstElement>?, gpointer?
        ) ->
            Void = { _, _, element, context in
                guard let element, let context else { return }
                Unmanaged<GStreamerEngine>.fromOpaque(context).takeUnretainedValue().elementAdded(element)
            }

    /// On a streaming thread: keeps the newest parser (playbin builds one per stream), and
    /// starts loading a slow decoder the track needs once its demuxer or parser is there (the
    /// pipeline's own plugins are loaded by then, and the decoder is needed only after the
    /// demuxer has read the stream's header), and corrects faad's timing (see ``FaadTiming``).
    func elementAdded(_ element: UnsafeMutablePointer<GstElement>) {
        guard let metadata = gst_element_get_metadata(element, "klass") else { return }
        let klass = String(cString: metadata)
        if klass.contains("Decoder"), klass.contains("Audio"),
            shared.withLock({ $0.feeders.values.contains { $0.timeline != nil } }),
            let uri = streamOrigin(
                of: UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self),
                below: UnsafeMutableRawPointer(playbin)
            ).uri,
            let timeline = shared.withLock({ $0.feeders[uri]?.timeline })
        {
            // Before faad's own segment probe: it then sees the presentation's segment.
            timeline.watch(decoder: element)
        }
        if klass.contains("Decoder") { FaadTiming.attach(to: element) }
        // Only while a feeder can use it: the walk up to the stream's URI is skipped for the rest.
        if klass.contains("Demuxer"), shared.withLock({ $0.feeders.values.contains { $0.takesShortReads } }),
            let uri = streamOrigin(
                of: UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self),
                below: UnsafeMutableRawPointer(playbin)
            ).uri,
            let feeder = shared.withLock({ $0.feeders[uri] })
        {
            feeder.demuxerAdded()
        }
        if klass.contains("Demuxer") || klass.contains("Parser"),
            let caps = shared.withLock({ state in
                defer { state.decoderToPreload = nil }
                return state.decoderToPreload
            })
        {
            GStreamer.preloadDecoder(for: caps)
        }
        guard klass.contains("Parser") else { return }
        if shared.withLock({ $0.feeders.values.contains { $0.liveTitles != nil } }),
            let uri = streamOrigin(
                of: UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self),
                below: UnsafeMutableRawPointer(playbin)
            ).uri,
            let clock = shared.withLock({ $0.feeders[uri]?.liveTitles })
        {
            clock.watch(parser: element)
        }
        let old = shared.withLock { state -> ElementRef? in
            defer { state.parser = ElementRef(element) }
            return state.parser
        }
        old?.release()
    }

    static let onAboutToFinish: @convention(c) (UnsafeMutablePointer<GstElement>?, gpointer?) -> Void = {
        _, context in
        guard let context else { return }
        Unmanaged<GStreamerEngine>.fromOpaque(context).takeUnretainedValue().aboutToFinish()
    }

    /// On a streaming thread, about a second before the end: hand playbin the
    /// prepared next track, if its source is open. Nothing else happens here.
    func aboutToFinish() {
        let (next, parser) = shared.withLock { state -> (TrackLifecycle.Following?, ElementRef?) in
            guard let next = state.lifecycle.aboutToFinish() else { return (nil, nil) }
            state.activating = (next.uri, DispatchSemaphore(value: 0))
            // The next stream's parser, if its format has one, is added once playbin has the URI;
            // this stream's must not answer for a next one without (a seek now reloads anyway).
            defer { state.parser = nil }
            return (next, state.parser)
        }
        parser?.release()
        guard let next else { return }
        setProperty(playbin, "uri", next.uri)
        emit(.nextQueued(next.track.id))
        onControl { [self] in watchHandOver(to: next.uri, last: nil) }
    }

    /// How long playback may stand still at the boundary while the next track's bytes are all
    /// here before it counts as broken.
    static let handOverStall: Duration = .milliseconds(1500)

    /// Rescues the current track when the next group hangs without a word (the same swallowed
    /// demuxer error as at a load): its last buffers wait for a stream that never starts, and the
    /// position stands still. It is then loaded again without the next track, as for a next
    /// track that reports its error.
    func watchHandOver(to uri: String, last: Duration?, stalledFor stalled: Duration = .zero) {
        let step = Duration.milliseconds(500)
        onControl(at: .now() + .milliseconds(500)) { [self] in
            let waiting = shared.withLock { state -> Bool? in
                guard state.lifecycle.next?.uri == uri, state.lifecycle.isHandedOver, state.lifecycle.wantPlaying
                else { return nil }
                return state.feeders[uri]?.isWaitingForBytes ?? false
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

    /// Forgets the prepared next track whose stream broke in playbin's next group. playbin holds
    /// the current track's last buffers back until the next stream starts, which it never will,
    /// and keeps the broken group through a rebuild: the current track is loaded again from
    /// scratch where it is heard, without a next, so it plays to its end and ends with an end of
    /// stream; the player then loads the broken track and hears its error.
    func dropBrokenNext(uri: String) {
        let reload = shared.withLock { $0.lifecycle.nextBroke(uri: uri) }
        guard let (track, playing) = reload else { return }
        log.info("reloading \(track.id) without the broken next track")
        load(track, at: position() ?? .zero, playing: playing)
    }

    /// Whether the first bytes `source` holds now may be media: false only when 4 KiB or the
    /// whole resource are here and GStreamer's type finders know none of it or call it text or
    /// an image (an HTML error page named `.mp3`); bytes not here yet are not waited for.
    static func mayBeMedia(_ source: ByteSource, url: URL) -> Bool {
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
}
