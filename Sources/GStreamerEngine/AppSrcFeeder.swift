import Basics
import ByteSourceAPI
internal import CGStreamer
import Dispatch
import FoundationEssentials
import Synchronization

/// Feeds one `appsrc` from a ``ByteSource`` in random-access mode (or, when told, in
/// seekable push mode, where appsrc asks the same way: seek-data on a seek, need-data to go on).
///
/// GStreamer asks for bytes with seek-data(offset) and need-data(length) on its
/// streaming threads. Bytes already here are pushed from the callback at once;
/// otherwise the callback returns and the bytes are pushed from the source's
/// wake-up when they land. Every push happens under `lock` and only for the
/// request that is current: seek-data, an upstream flush and detach all
/// invalidate it, so a buffer from before a seek is never taken as data at the
/// new offset. Lock order is feeder → appsrc (appsrc calls us with its own
/// mutex released), so pushing while holding the lock cannot deadlock.
final class AppSrcFeeder: Sendable {
    private struct Request {
        let generation: UInt64
        let length: Int
    }

    private struct State {
        /// The appsrc, referenced while attached; nil once detached.
        var appsrc: UnsafeMutablePointer<GstAppSrc>?
        /// The appsrc's source pad, compared only: a flush on a replaced appsrc's pad is not ours.
        var pad: UnsafeMutablePointer<GstPad>?
        var offset: Int64 = 0
        var generation: UInt64 = 0
        var pending: Request?
        /// A read has been waiting since this wait (of ``waits``); reported once it lasts.
        var waitingSince: UInt64?
        /// Counts the waits, naming each (``waitingSince``).
        var waits: UInt64 = 0
        var reportedWaiting = false
        /// No bytes were pushed to this appsrc yet: its first pull is the type finder's.
        var typeFinding = true
        /// Bytes before the parsed stream (an ID3v2 tag, which id3demux strips), once the first
        /// bytes were pushed.
        var leadingTag: Int64?
        /// The stream's demuxer is in place: type finding is over.
        var demuxing = false
        /// The demuxer is not told the stream's length (``start(fromItsBeginning:)``).
        var lengthHidden = false
    }

    let source: ByteSource
    let info: ResourceInfo
    let label: String
    /// When a live stream's titles are heard; nil for anything but a live stream.
    let liveTitles: LiveTitleClock?
    /// The presentation's timeline of a stream that seeks by restarting; nil for any other.
    let timeline: PresentationTimeline?
    private let lock: Mutex<LockedState>
    private let log = Logger(label: "appsrc")

    /// Wrapper making the state sendable: the raw appsrc pointer is only used under the lock.
    private struct LockedState: @unchecked Sendable { var state = State() }

    /// The bytes the type finder's first pull waits for. The type-find helper rounds every peek
    /// up to a 4 KiB pull (gsttypefindhelper.c, helper_find_peek) but takes a shorter buffer
    /// that covers the peek, and a format's header needs a few dozen bytes: waiting for 4 KiB
    /// held an M4A whose `moov` is last 0.1 s at 40 kB/s before its tail was even asked for.
    /// A finder that peeks past a short answer pulls again, and that pull waits in full.
    static let typeFindingMinimum = 1024

    /// How long a read may wait before it counts as buffering (short waits are normal).
    static let bufferingDelay: DispatchTimeInterval = .milliseconds(200)

    /// The same for a live stream, whose bytes come as fast as they play: its reads wait a
    /// fraction of a second for each chunk while the pipeline plays what it holds, and only a
    /// longer wait means the station has fallen behind.
    static let liveBufferingDelay: DispatchTimeInterval = .milliseconds(1_500)

    /// Told when reads start or stop waiting for the network (never under the feeder's lock).
    private let onBuffering: @Sendable (Bool) -> Void

    /// Whether a seekable resource is pulled (random-access mode) rather than pushed with
    /// seeks (seekable mode); see ``GStreamerEngine`` for the choice.
    let pulled: Bool

    /// Whether the demuxer takes short answers (see ``FeedingMode/takesShortReads(format:)``),
    /// once it is in place: a type finder given a short answer gives up.
    let takesShortReads: Bool

    /// The bytes the demuxer would seek to before the first audio if told the stream's length,
    /// which the source brings only at the end of its download (see
    /// ``FeedingMode/tailSoughtBeforeStart(format:info:)``); nil when it is told.
    let tailSoughtBeforeStart: Range<Int64>?

    init(
        source: ByteSource, info: ResourceInfo, label: String, pulled: Bool = true, takesShortReads: Bool = false,
        tailSoughtBeforeStart: Range<Int64>? = nil, onBuffering: @escaping @Sendable (Bool) -> Void = { _ in }
    ) {
        self.source = source
        self.info = info
        self.label = label
        self.pulled = pulled
        self.takesShortReads = takesShortReads
        self.tailSoughtBeforeStart = tailSoughtBeforeStart
        self.onBuffering = onBuffering
        liveTitles = info.live == nil ? nil : LiveTitleClock()
        timeline = info.seeksByRestart ? PresentationTimeline() : nil
        lock = Mutex(LockedState())
    }

    /// The stream's demuxer was added to the pipeline: type finding is over, and a demuxer that
    /// takes short answers gets them (``takesShortReads``).
    func demuxerAdded() {
        lock.withLock { $0.state.demuxing = true }
    }

    /// Whether a read waits for bytes that are not here yet.
    var isWaitingForBytes: Bool { lock.withLock { $0.state.waitingSince != nil } }

    /// Whether GStreamer may read at any offset: the length is known and the origin honours ranges.
    var randomAccess: Bool { info.randomAccess && info.length != nil }

    /// Whether the track can seek. Always: a resource read only from its start (an origin
    /// without Range) is pushed in seekable mode, and a seek-data beyond what has arrived is a
    /// read the source answers when the sequential download gets there (the download planner
    /// waits for it; it never fails such a read). Bytes already here are served at once.
    /// A live stream never: it has no place to go to but the present; nor a source that says
    /// it can only play from its start.
    var seekable: Bool { info.live == nil && info.seekable && !lengthHidden }

    /// Whether the demuxer is left without the stream's length, for a play from its start.
    var lengthHidden: Bool { lock.withLock { $0.state.lengthHidden } }

    /// Whether the track, whose demuxer was not told the length (so cannot seek), can seek by
    /// being loaded again: every byte is here now, and a new load reads them at will.
    var seeksByReload: Bool {
        guard lengthHidden, let length = info.length else { return false }
        return source.holds(0..<length)
    }

    /// The track starts; `fromItsBeginning`: at 0 and at the normal rate, with no seek to
    /// follow. Only then is the length hidden from a demuxer that would otherwise wait for the
    /// download's end (``tailSoughtBeforeStart``) before the first audio: it could not seek to
    /// another start. Call before ``attach(to:)``.
    func start(fromItsBeginning: Bool) {
        let hidden = fromItsBeginning && tailSoughtBeforeStart.map { !source.holds($0) } == true
        lock.withLock { $0.state.lengthHidden = hidden }
        if hidden { log.debug("\(label): the demuxer is not told the length, so it plays before the download ends") }
    }

    /// Whether GStreamer pushes from this feeder (seekable mode) rather than pulling.
    var pushed: Bool { !(randomAccess && pulled) }

    /// Whether the source holds `range` of the parsed stream: the file's bytes after any
    /// leading ID3v2 tag (the offsets a parser behind id3demux counts in).
    func holds(streamRange range: Range<Int64>) -> Bool {
        let shift = lock.withLock { $0.state.leadingTag } ?? 0
        return source.holds((range.lowerBound + shift)..<(range.upperBound + shift))
    }

    /// Configures `appsrc` and starts answering its callbacks. Attaching again
    /// (playbin rebuilt its source, for a new rate filter) moves the feeder to the
    /// new appsrc: the old one's callbacks are ignored from then on.
    func attach(to appsrc: UnsafeMutablePointer<GstAppSrc>) {
        gst_object_ref(UnsafeMutableRawPointer(appsrc))
        let pad = gst_element_get_static_pad(
            UnsafeMutableRawPointer(appsrc).assumingMemoryBound(to: GstElement.self), "src")
        let (previous, lengthHidden) = lock.withLock { box -> (UnsafeMutablePointer<GstAppSrc>?, Bool) in
            defer {
                // A new appsrc comes with a rebuild at the position playing, which the demuxer
                // must seek to: it is told the length.
                if box.state.appsrc != nil { box.state.lengthHidden = false }
                box.state.appsrc = appsrc
                box.state.pad = pad
                box.state.offset = 0
                box.state.typeFinding = true
                box.state.demuxing = false
                box.state.generation &+= 1
                box.state.pending = nil
                box.state.waitingSince = nil
            }
            return (box.state.appsrc, box.state.appsrc == nil && box.state.lengthHidden)
        }
        if let previous {
            source.cancelPendingReads()
            gst_object_unref(UnsafeMutableRawPointer(previous))
        }
        if let length = info.length, !lengthHidden {
            gst_app_src_set_size(appsrc, gint64(length))
        }
        // Pulled only with random access: a pull of bytes the origin sends only in order would
        // hold a streaming thread (and the type finders' far probes) until the download got there.
        let type =
            info.live != nil
            ? GST_APP_STREAM_TYPE_STREAM
            : randomAccess && pulled ? GST_APP_STREAM_TYPE_RANDOM_ACCESS : GST_APP_STREAM_TYPE_SEEKABLE
        gst_app_src_set_stream_type(appsrc, type)
        var callbacks = GstAppSrcCallbacks()
        callbacks.need_data = AppSrcFeeder.onNeedData
        callbacks.seek_data = AppSrcFeeder.onSeekData
        // appsrc owns this reference and drops it when the callbacks are replaced or it is disposed.
        gst_app_src_set_callbacks(appsrc, &callbacks, Unmanaged.passRetained(self).toOpaque(), AppSrcFeeder.release)

        source.whenFailed { [weak self] error in self?.failedOnItsOwn(error) }
        source.whenRestartMoved { [weak self] start in self?.timeline?.move(pieceStart: start) }

        // Demuxers seek in pull mode by sending flush-start upstream to unblock a
        // pending pull; a read answered after that would land in the new segment.
        if let pad {
            gst_pad_add_probe(
                pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, AppSrcFeeder.onUpstreamEvent,
                Unmanaged.passRetained(self).toOpaque(), AppSrcFeeder.release)
            gst_object_unref(UnsafeMutableRawPointer(pad))
        }
    }

    /// Restarts the source at `target` (see ``ByteSource/restart(at:)``) while its appsrc is
    /// stopped, and puts the stream the next appsrc reads on the presentation's timeline.
    /// The read pending for the stopped appsrc is dropped first: answered after the restart,
    /// it would read the new stream at the old one's offset. Answers where the stream starts
    /// (the target, or 0 when the source cannot restart there).
    func restart(at target: Duration, rate: Double) -> Duration {
        lock.withLock { box in
            box.state.generation &+= 1
            box.state.pending = nil
        }
        source.cancelPendingReads()
        guard let pieceStart = source.restart(at: target) else {
            timeline?.restart(target: .zero, pieceStart: .zero, rate: rate)
            return .zero
        }
        timeline?.restart(target: target, pieceStart: pieceStart, rate: rate)
        return target
    }

    /// Stops pushing, drops the pending read and releases the appsrc. Idempotent.
    func detach() {
        source.cancelPendingReads()
        let appsrc = lock.withLock { box -> UnsafeMutablePointer<GstAppSrc>? in
            defer {
                box.state.appsrc = nil
                box.state.pad = nil
                box.state.pending = nil
                box.state.generation &+= 1
            }
            return box.state.appsrc
        }
        source.close()
        if let appsrc { gst_object_unref(UnsafeMutableRawPointer(appsrc)) }
    }

    // MARK: Callbacks (GStreamer streaming threads)

    static let onNeedData: @convention(c) (UnsafeMutablePointer<GstAppSrc>?, guint, gpointer?) -> Void = {
        appsrc, length, context in
        guard let appsrc, let context else { return }
        Unmanaged<AppSrcFeeder>.fromOpaque(context).takeUnretainedValue().needData(Int(length), from: appsrc)
    }

    static let onSeekData: @convention(c) (UnsafeMutablePointer<GstAppSrc>?, guint64, gpointer?) -> gboolean = {
        appsrc, offset, context in
        guard let appsrc, let context else { return 0 }
        Unmanaged<AppSrcFeeder>.fromOpaque(context).takeUnretainedValue().seek(to: Int64(offset), from: appsrc)
        return 1
    }

    static let onUpstreamEvent:
        @convention(c) (UnsafeMutablePointer<GstPad>?, UnsafeMutablePointer<GstPadProbeInfo>?, gpointer?) ->
            GstPadProbeReturn = { pad, info, context in
                guard let pad, let context, let data = info?.pointee.data else { return GST_PAD_PROBE_OK }
                let event = data.assumingMemoryBound(to: GstEvent.self)
                if event.pointee.type == GST_EVENT_FLUSH_START {
                    Unmanaged<AppSrcFeeder>.fromOpaque(context).takeUnretainedValue().invalidatePending(on: pad)
                }
                return GST_PAD_PROBE_OK
            }

    static let release: @convention(c) (gpointer?) -> Void = { context in
        guard let context else { return }
        Unmanaged<AppSrcFeeder>.fromOpaque(context).release()
    }

    private func seek(to offset: Int64, from appsrc: UnsafeMutablePointer<GstAppSrc>) {
        let current = lock.withLock { box -> Bool in
            guard box.state.appsrc == appsrc else { return false }  // a replaced appsrc
            box.state.generation &+= 1
            box.state.offset = offset
            box.state.pending = nil
            box.state.waitingSince = nil
            return true
        }
        guard current else { return }
        source.cancelPendingReads()
        log.trace("\(label): seek-data \(offset)")
    }

    private func invalidatePending(on pad: UnsafeMutablePointer<GstPad>) {
        lock.withLock { box in
            guard box.state.pad == pad else { return }
            box.state.generation &+= 1
            box.state.pending = nil
        }
    }

    private func needData(_ length: Int, from appsrc: UnsafeMutablePointer<GstAppSrc>) {
        let change = lock.withLock { box -> Bool? in
            guard box.state.appsrc == appsrc else { return nil }  // detached, or a replaced appsrc
            box.state.pending = Request(generation: box.state.generation, length: max(1, length))
            serveLocked(&box.state)
            return bufferingChangeLocked(&box.state)
        }
        if let change { onBuffering(change) }
    }

    /// What to tell about buffering after serving: false once a reported wait ends;
    /// a new wait is reported only if it is still pending after ``bufferingDelay``.
    private func bufferingChangeLocked(_ state: inout State) -> Bool? {
        if state.pending == nil {
            state.waitingSince = nil
            if state.reportedWaiting {
                state.reportedWaiting = false
                return false
            }
            return nil
        }
        if state.waitingSince == nil {
            // Each wait is timed on its own: a check scheduled for an earlier wait, which ended,
            // must not report the one that follows it (a live stream's reads wait a moment for
            // every chunk).
            state.waits &+= 1
            let wait = state.waits
            state.waitingSince = wait
            let delay = info.live == nil ? Self.bufferingDelay : Self.liveBufferingDelay
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
                self?.reportWaitIfStillPending(wait)
            }
        }
        return nil
    }

    private func reportWaitIfStillPending(_ wait: UInt64) {
        let report = lock.withLock { box -> Bool in
            guard box.state.pending != nil, box.state.waitingSince == wait, !box.state.reportedWaiting else {
                return false
            }
            box.state.reportedWaiting = true
            return true
        }
        if report {
            log.debug("\(label): buffering")
            onBuffering(true)
        }
    }

    /// Called by the source when bytes may have arrived for the request of `generation`.
    private func retry(generation: UInt64) {
        let change = lock.withLock { box -> Bool? in
            guard let pending = box.state.pending, pending.generation == generation else { return nil }
            serveLocked(&box.state)
            return bufferingChangeLocked(&box.state)
        }
        if let change { onBuffering(change) }
    }

    private func serveLocked(_ state: inout State) {
        guard let appsrc = state.appsrc, let request = state.pending else { return }
        let generation = request.generation
        // Pulled, a demuxer takes a short buffer for the end of the file: it gets all it asked,
        // except the type finder's first pull (see ``typeFindingMinimum``) and a demuxer that
        // parses whatever arrives (``takesShortReads``). Pushed, any amount goes on downstream:
        // it gets what has arrived.
        let minimum: Int
        if !(randomAccess && pulled) {
            minimum = 1
        } else if state.typeFinding && state.offset == 0 {
            minimum = min(request.length, Self.typeFindingMinimum)
        } else if takesShortReads && state.demuxing {
            minimum = 1
        } else {
            minimum = request.length
        }
        let outcome = source.read(at: state.offset, maxLength: request.length, minLength: minimum) { [weak self] in
            self?.retry(generation: generation)
        }
        switch outcome {
        case .data(let bytes):
            state.pending = nil
            if state.offset == 0, state.leadingTag == nil, bytes.count >= 10 {
                state.leadingTag = ID3v2.tagLength(bytes)
            }
            push(bytes, at: state.offset, to: appsrc)
            state.offset += Int64(bytes.count)
            state.typeFinding = false
        case .endOfStream:
            state.pending = nil
            gst_app_src_end_of_stream(appsrc)
        case .pending:
            break
        case .failed(let error):
            state.pending = nil
            log.warning("\(label): \(error)")
            postReadError(error, from: appsrc)
        }
    }

    private func push(_ bytes: Data, at offset: Int64, to appsrc: UnsafeMutablePointer<GstAppSrc>) {
        guard let buffer = gst_buffer_new_allocate(nil, gsize(bytes.count), nil) else { return }
        var map = GstMapInfo()
        if gst_buffer_map(buffer, &map, GST_MAP_WRITE) != 0 {
            bytes.withUnsafeBytes { _ = memcpy(map.data, $0.baseAddress!, bytes.count) }
            gst_buffer_unmap(buffer, &map)
        }
        buffer.pointee.offset = guint64(offset)
        buffer.pointee.offset_end = guint64(offset + Int64(bytes.count))
        gst_app_src_push_buffer(appsrc, buffer)  // takes the buffer
    }

    /// The source failed with no read asking (see ``ByteSource/whenFailed(_:)``): the error goes
    /// on the bus now, as a failed read's would, and nothing more is read.
    private func failedOnItsOwn(_ error: MediaSourceError) {
        let appsrc = lock.withLock { box -> UnsafeMutablePointer<GstAppSrc>? in
            guard let appsrc = box.state.appsrc else { return nil }
            box.state.pending = nil
            box.state.generation &+= 1
            gst_object_ref(UnsafeMutableRawPointer(appsrc))
            return appsrc
        }
        guard let appsrc else { return }
        log.info("\(label): \(error)")
        postReadError(error, from: appsrc)
        gst_object_unref(UnsafeMutableRawPointer(appsrc))
    }

    private func postReadError(_ failure: MediaSourceError, from appsrc: UnsafeMutablePointer<GstAppSrc>) {
        let object = UnsafeMutableRawPointer(appsrc).assumingMemoryBound(to: GstObject.self)
        let message = failure.description
        let code = gint(FailureKinds.resourceCode(for: failure).rawValue)
        let error = g_error_new_literal(gst_resource_error_quark(), code, message)
        gst_element_post_message(
            UnsafeMutableRawPointer(appsrc).assumingMemoryBound(to: GstElement.self),
            gst_message_new_error(object, error, message))
        g_error_free(error)
    }
}
