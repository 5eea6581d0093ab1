import EngineAPI
import Foundation
import MediaSource
import SpoolLog
import Synchronization
internal import CGStreamer

/// The playback engine on GStreamer: a `playbin` whose source for every track
/// is an `appsrc` (URI `appsrc://spool/N`) fed by Spool's media source, so every
/// byte the decoder reads goes through Spool's reader and cache.
///
/// Threads: commands run in order on one control queue (state changes may wait
/// for streaming threads); a bus thread turns GStreamer messages into events;
/// events reach the handler in order on an event queue.
public final class GStreamerEngine: PlaybackEngine, @unchecked Sendable {
    // @unchecked: the element pointers are set once in init and GStreamer's
    // element API used here (state, seek, query, properties) is thread-safe;
    // everything mutable lives in `shared`.

    /// Makes the byte source for a track's URL.
    public typealias SourceFactory = @Sendable (URL) throws(MediaSourceError) -> ByteSource

    private struct Current {
        var track: EngineTrack
        var uri: String
        var feeder: AppSrcFeeder?
        var prerolled = false
        var startPosition: Duration?
        var seeking = false
        var duration: Duration?
    }

    private struct Shared {
        var handler: (@Sendable (EngineEvent) -> Void)?
        var feeders: [String: AppSrcFeeder] = [:]
        var current: Current?
        var loadGeneration: UInt64 = 0
        var wantPlaying = false
        var busRunning = true
    }

    private let playbin: UnsafeMutablePointer<GstElement>
    private let bus: UnsafeMutablePointer<GstBus>
    private let makeSource: SourceFactory
    private let control = DispatchQueue(label: "spool.engine.control")
    private let eventQueue = DispatchQueue(label: "spool.engine.events")
    private let shared = Mutex(Shared())
    private let busStopped = DispatchSemaphore(value: 0)
    private let log = Logger(label: "engine")

    /// Creates the pipeline. `audioSink` is a gst-launch description (nil: the
    /// desktop's sound server, falling back to a real-time null sink).
    public init(audioSink: String?, makeSource: @escaping SourceFactory) throws(EngineError) {
        GStreamer.initialize()
        guard let playbin = gst_element_factory_make("playbin", "spool-player") else {
            throw EngineError("GStreamer's playbin is missing (install gstreamer1.0-plugins-base)")
        }
        gst_object_ref_sink(UnsafeMutableRawPointer(playbin))
        self.playbin = playbin
        self.makeSource = makeSource
        bus = gst_element_get_bus(playbin)
        setProperty(playbin, "flags", "audio+soft-volume")
        do {
            let sink = try AudioOutput.makeSink(description: audioSink, log: log)
            setProperty(playbin, "audio-sink", object: sink)
            gst_object_unref(UnsafeMutableRawPointer(sink))
        } catch {
            gst_object_unref(UnsafeMutableRawPointer(bus))
            gst_object_unref(UnsafeMutableRawPointer(playbin))
            throw error
        }
        // playbin keeps this reference until it is disposed; the engine outlives it.
        g_signal_connect_data(
            asGObject(playbin), "source-setup",
            unsafeBitCast(GStreamerEngine.onSourceSetup, to: GCallback.self),
            Unmanaged.passUnretained(self).toOpaque(), nil, GConnectFlags(rawValue: 0))
        let busThread = Thread { [self] in self.runBus() }
        busThread.name = "spool.engine.bus"
        busThread.start()
    }

    // MARK: PlaybackEngine

    /// Sets the receiver of engine events.
    public func setEventHandler(_ handler: @escaping @Sendable (EngineEvent) -> Void) {
        shared.withLock { $0.handler = handler }
    }

    /// Opens the track's source, then plays it (or prerolls it paused) from `position`.
    public func load(_ track: EngineTrack, at position: Duration, playing: Bool) {
        control.async { [self] in
            teardown()
            let generation = shared.withLock { state -> UInt64 in
                state.loadGeneration &+= 1
                state.wantPlaying = playing
                return state.loadGeneration
            }
            let source: ByteSource
            do throws(MediaSourceError) {
                source = try makeSource(track.url)
            } catch {
                emit(.failed(track.id, EngineError(error.description)))
                return
            }
            log.info("loading \(track.id): \(loggable(track.url))")
            source.open { [weak self] result in
                guard let engine = self else { return source.close() }
                engine.control.async { engine.opened(track, source, result, generation, position) }
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

    /// Unloads the track.
    public func stop() {
        control.async { [self] in
            shared.withLock { $0.loadGeneration &+= 1 }  // drops a load still opening
            teardown()
            emit(.stateChanged(.idle))
        }
    }

    /// Seeks the loaded track accurately to `position`.
    public func seek(to position: Duration) {
        control.async { [self] in
            let ready = shared.withLock { state -> Bool in
                guard state.current != nil else { return false }
                if state.current?.prerolled == false {
                    state.current?.startPosition = position  // applied once prerolled
                    return false
                }
                state.current?.seeking = true
                return true
            }
            if ready { performSeek(to: position) }
        }
    }

    /// Sets playbin's volume (software volume, 0.0–1.0).
    public func setVolume(_ volume: Double) {
        setProperty(playbin, "volume", double: min(1, max(0, volume)))
    }

    /// The position of the loaded track, from the pipeline.
    public func position() -> Duration? {
        guard shared.withLock({ $0.current?.prerolled ?? false }) else { return nil }
        var position: gint64 = 0
        guard gst_element_query_position(playbin, GST_FORMAT_TIME, &position) != 0, position >= 0 else {
            return nil
        }
        return .nanoseconds(Int64(position))
    }

    /// Stops playback, ends the bus thread and frees the pipeline.
    public func shutdown() {
        let first = shared.withLock { state -> Bool in
            defer { state.busRunning = false }
            return state.busRunning
        }
        guard first else { return }
        control.sync { teardown() }
        busStopped.wait()
        gst_object_unref(UnsafeMutableRawPointer(bus))
        gst_object_unref(UnsafeMutableRawPointer(playbin))
    }

    // MARK: Control queue

    private func opened(
        _ track: EngineTrack, _ source: ByteSource, _ result: Result<ResourceInfo, MediaSourceError>,
        _ generation: UInt64, _ position: Duration
    ) {
        guard shared.withLock({ $0.loadGeneration == generation }) else {
            source.close()  // superseded by a later load or a stop
            return
        }
        let info: ResourceInfo
        switch result {
        case .failure(let error):
            source.close()
            log.warning("\(track.id): \(error)")
            emit(.failed(track.id, EngineError(error.description)))
            return
        case .success(let opened):
            info = opened
        }
        let uri = "appsrc://spool/\(track.id.rawValue)-\(generation)"
        let feeder = AppSrcFeeder(source: source, info: info, label: "\(track.id)")
        let playing = shared.withLock { state -> Bool in
            state.feeders[uri] = feeder
            state.current = Current(
                track: track, uri: uri, feeder: feeder,
                startPosition: position > .zero ? position : nil)
            return state.wantPlaying
        }
        setProperty(playbin, "uri", uri)
        let target = playing && position == .zero ? GST_STATE_PLAYING : GST_STATE_PAUSED
        if gst_element_set_state(playbin, target) == GST_STATE_CHANGE_FAILURE {
            log.warning("\(track.id): the pipeline refused to start")
        }
    }

    private func teardown() {
        let old = shared.withLock { state -> Current? in
            defer {
                state.current = nil
                state.feeders.removeAll()
            }
            return state.current
        }
        guard let old else { return }
        old.feeder?.detach()  // before the state change, so no streaming thread waits on the network
        gst_element_set_state(playbin, GST_STATE_NULL)
    }

    private func performSeek(to position: Duration) {
        let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_ACCURATE.rawValue)
        if gst_element_seek_simple(playbin, GST_FORMAT_TIME, flags, gint64(nanoseconds(position))) == 0 {
            log.warning("seek to \(position) refused")
            shared.withLock { $0.current?.seeking = false }
        }
    }

    // MARK: Source setup (the thread changing playbin's state)

    private static let onSourceSetup:
        @convention(c) (UnsafeMutablePointer<GstElement>?, UnsafeMutablePointer<GstElement>?, gpointer?) -> Void = {
            _, source, context in
            guard let source, let context else { return }
            Unmanaged<GStreamerEngine>.fromOpaque(context).takeUnretainedValue().setUp(source)
        }

    private func setUp(_ source: UnsafeMutablePointer<GstElement>) {
        guard let uri = takeGString(gst_uri_handler_get_uri(OpaquePointer(source))),
            let feeder = shared.withLock({ $0.feeders[uri] })
        else {
            log.error("source-setup for an unknown source")
            return
        }
        feeder.attach(to: UnsafeMutableRawPointer(source).assumingMemoryBound(to: GstAppSrc.self))
    }

    // MARK: Bus thread

    private func runBus() {
        let wanted = [
            GST_MESSAGE_EOS, GST_MESSAGE_ERROR, GST_MESSAGE_WARNING, GST_MESSAGE_STATE_CHANGED,
            GST_MESSAGE_TAG, GST_MESSAGE_STREAM_START, GST_MESSAGE_DURATION_CHANGED, GST_MESSAGE_ASYNC_DONE,
        ].reduce(0) { $0 | $1.rawValue }
        while shared.withLock({ $0.busRunning }) {
            guard
                let message = gst_bus_timed_pop_filtered(
                    bus, 100_000_000, GstMessageType(rawValue: wanted))
            else { continue }
            handle(message)
            gst_message_unref(message)
        }
        busStopped.signal()
    }

    private func handle(_ message: UnsafeMutablePointer<GstMessage>) {
        let fromPlaybin = UnsafeMutableRawPointer(message.pointee.src) == UnsafeMutableRawPointer(playbin)
        guard let current = shared.withLock({ $0.current }) else { return }
        let id = current.track.id
        switch message.pointee.type {
        case GST_MESSAGE_EOS:
            log.info("\(id) ended")
            emit(.endOfTrack(id))
        case GST_MESSAGE_ERROR:
            var error: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            gst_message_parse_error(message, &error, &debug)
            let text = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            log.error("\(id): \(text) (\(takeGString(debug) ?? ""))")
            if let error { g_error_free(error) }
            control.async { [self] in
                guard shared.withLock({ $0.current?.uri == current.uri }) else { return }
                teardown()
                emit(.failed(id, EngineError(text)))
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
            if new == GST_STATE_PLAYING {
                emit(.stateChanged(.playing))
            } else if new == GST_STATE_PAUSED && pending == GST_STATE_VOID_PENDING {
                emit(.stateChanged(.paused))
            }
        case GST_MESSAGE_TAG:
            var list: UnsafeMutablePointer<GstTagList>?
            gst_message_parse_tag(message, &list)
            if let list {
                let tags = TagReader.read(list)
                gst_tag_list_unref(list)
                if !tags.isEmpty { emit(.tags(id, tags)) }
            }
        case GST_MESSAGE_STREAM_START:
            emit(.trackStarted(id))
        case GST_MESSAGE_DURATION_CHANGED:
            reportDuration(of: current)
        case GST_MESSAGE_ASYNC_DONE where fromPlaybin:
            asyncDone(current)
        default:
            break
        }
    }

    /// A state change or seek finished: apply a pending start position, report a finished seek.
    private func asyncDone(_ current: Current) {
        reportDuration(of: current)
        control.async { [self] in
            enum Next { case seek(Duration), seeked(Bool), nothing }
            let next = shared.withLock { state -> Next in
                guard state.current?.uri == current.uri else { return .nothing }
                state.current?.prerolled = true
                if let start = state.current?.startPosition {
                    state.current?.startPosition = nil
                    state.current?.seeking = true
                    return .seek(start)
                }
                if state.current?.seeking == true {
                    state.current?.seeking = false
                    return .seeked(state.wantPlaying)
                }
                return .nothing
            }
            switch next {
            case .seek(let start):
                performSeek(to: start)
            case .seeked(let playing):
                if let position = position() { emit(.seeked(current.track.id, position: position)) }
                if playing { gst_element_set_state(playbin, GST_STATE_PLAYING) }
            case .nothing:
                if shared.withLock({ $0.wantPlaying && $0.current?.uri == current.uri }) {
                    gst_element_set_state(playbin, GST_STATE_PLAYING)
                }
            }
        }
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
        if changed { emit(.duration(current.track.id, value)) }
    }

    private func emit(_ event: EngineEvent) {
        guard let handler = shared.withLock({ $0.handler }) else { return }
        eventQueue.async { handler(event) }
    }
}
