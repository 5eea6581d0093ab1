internal import CGStreamer
import FoundationEssentials
import Synchronization

/// The output's gain: a `volume` element whose gain moves to a new value along a
/// straight line, sample by sample, instead of jumping.
///
/// Why not a timer that nudges playbin's `volume`: the element applies a property
/// per buffer, and buffers are large (a FLAC frame is 105 ms) and processed in
/// bursts ahead of playback, so any wall-clock ramp lands as one step per buffer —
/// a click, measured on a recording. Instead a probe on the element's sink pad
/// sees each buffer just before the element processes it and gives GStreamer's
/// controller two points in that buffer's own stream time (the gain where it starts
/// and where this buffer takes it); the element interpolates per sample between them.
/// The ramp therefore follows the audio, not the clock.
final class SmoothVolume: @unchecked Sendable {
    // @unchecked: the element and control source pointers are set once in init and
    // only used through GStreamer's thread-safe object and controller API; every
    // mutable value lives in `state`.

    /// Seconds a change across the whole range (0 → 1) takes; smaller changes take
    /// proportionally less (1.0 → 0.2: 40 ms). Long enough to make no click, short
    /// enough to feel immediate.
    static let fullRangeSeconds = 0.05

    private struct State {
        /// The gain at the end of the last buffer processed.
        var current = 1.0
        /// The gain asked for.
        var target = 1.0
        /// Audio is flowing: a change ramps. Before the first buffer (and after a flush
        /// or the end of the stream) nothing is audible, so a change applies at once.
        var flowing = false
        /// Control points are set; removed once the ramp is over.
        var pointsSet = false
        var segment = Segment()
        var rate = 0
        var bytesPerFrame = 0
    }

    /// A GstSegment as a value: its fields are numbers; its pointers are unused padding.
    private struct Segment: @unchecked Sendable {
        var value = GstSegment()
    }

    private enum Step {
        case none
        /// No ramp: the plain property holds the gain.
        case settle(Double)
        /// From `from` at `start` to `to` at `end`, in stream time.
        case ramp(start: GstClockTime, from: Double, end: GstClockTime, to: Double)
    }

    /// The `volume` element; the output bin holds it, this object holds its own reference.
    let element: UnsafeMutablePointer<GstElement>
    private let controlSource: UnsafeMutablePointer<GstControlSource>
    private let state = Mutex(State())
    private var probe: gulong = 0

    /// Creates the element (nil when GStreamer's `volume` plugin is missing).
    init?() {
        guard let element = gst_element_factory_make("volume", "spool-volume") else { return nil }
        gst_object_ref_sink(UnsafeMutableRawPointer(element))
        guard let source = gst_interpolation_control_source_new() else {
            gst_object_unref(UnsafeMutableRawPointer(element))
            return nil
        }
        self.element = element
        controlSource = source
        setProperty(source, "mode", "linear")
        state.withLock { gst_segment_init(&$0.segment.value, GST_FORMAT_TIME) }
        let object = UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self)
        // Absolute: control values are gains, not fractions of the property's 0–10 range.
        let binding = gst_direct_control_binding_new_absolute(object, "volume", source)
        gst_object_add_control_binding(object, binding)
        let pad = gst_element_get_static_pad(element, "sink")
        let mask = GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue)
        // The pad holds this unretained pointer until the probe is removed in deinit.
        probe = gst_pad_add_probe(pad, mask, Self.onProbe, Unmanaged.passUnretained(self).toOpaque(), nil)
        gst_object_unref(UnsafeMutableRawPointer(pad))
    }

    deinit {
        if let pad = gst_element_get_static_pad(element, "sink") {
            gst_pad_remove_probe(pad, probe)
            gst_object_unref(UnsafeMutableRawPointer(pad))
        }
        gst_object_unref(UnsafeMutableRawPointer(controlSource))
        gst_object_unref(UnsafeMutableRawPointer(element))
    }

    /// Moves the gain to `gain` (0.0–1.0): along a ramp while audio flows, at once otherwise.
    func set(_ gain: Double) {
        let immediate = state.withLock { state -> Bool in
            state.target = gain
            guard !state.flowing else { return false }
            state.current = gain
            return true
        }
        if immediate { setProperty(element, "volume", double: gain) }
    }

    private static let onProbe:
        @convention(c) (UnsafeMutablePointer<GstPad>?, UnsafeMutablePointer<GstPadProbeInfo>?, gpointer?) ->
            GstPadProbeReturn = {
                _, info, context in
                guard let info, let context, let data = info.pointee.data else { return GST_PAD_PROBE_OK }
                let volume = Unmanaged<SmoothVolume>.fromOpaque(context).takeUnretainedValue()
                if info.pointee.type.rawValue & GST_PAD_PROBE_TYPE_BUFFER.rawValue != 0 {
                    volume.willProcess(data.assumingMemoryBound(to: GstBuffer.self))
                } else if info.pointee.type.rawValue & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue != 0 {
                    volume.saw(data.assumingMemoryBound(to: GstEvent.self))
                }
                return GST_PAD_PROBE_OK
            }

    /// Keeps what turns a buffer into stream time and samples: the segment and the format.
    private func saw(_ event: UnsafeMutablePointer<GstEvent>) {
        switch event.pointee.type {
        case GST_EVENT_SEGMENT:
            var segment = Segment()
            gst_event_copy_segment(event, &segment.value)
            state.withLock { [segment] in $0.segment = segment }
        case GST_EVENT_CAPS:
            var caps: UnsafeMutablePointer<GstCaps>?
            gst_event_parse_caps(event, &caps)
            var info = GstAudioInfo()
            guard let caps, gst_audio_info_from_caps(&info, caps) != 0 else { return }
            state.withLock {
                $0.rate = Int(info.rate)
                $0.bytesPerFrame = Int(info.bpf)
            }
        case GST_EVENT_FLUSH_STOP, GST_EVENT_EOS:
            // What was buffered is gone or over: the next sound starts afresh.
            let settle = state.withLock { state -> Double? in
                state.flowing = false
                guard state.current != state.target || state.pointsSet else { return nil }
                state.current = state.target
                state.pointsSet = false
                return state.target
            }
            if let settle { apply(.settle(settle)) }
        default:
            break
        }
    }

    /// Sets the control points for this buffer, on the streaming thread, just before
    /// the element processes it.
    private func willProcess(_ buffer: UnsafeMutablePointer<GstBuffer>) {
        let size = Int(gst_buffer_get_size(buffer))
        let pts = buffer.pointee.pts
        let step = state.withLock { state -> Step in
            state.flowing = true
            guard state.current != state.target else {
                guard state.pointsSet else { return .none }
                state.pointsSet = false
                return .settle(state.target)
            }
            let start = gst_segment_to_stream_time(&state.segment.value, GST_FORMAT_TIME, pts)
            guard start != GstClockTime.max, state.rate > 0, state.bytesPerFrame > 0 else {
                state.current = state.target  // no time to ramp along: jump rather than stall
                state.pointsSet = false
                return .settle(state.target)
            }
            let duration = Double(size / state.bytesPerFrame) / Double(state.rate)
            let from = state.current
            let distance = state.target - from
            let needed = abs(distance) * Self.fullRangeSeconds
            let seconds = min(needed, duration)
            state.current = needed <= duration ? state.target : from + distance * duration / needed
            state.pointsSet = true
            return .ramp(start: start, from: from, end: start + GstClockTime(seconds * 1e9), to: state.current)
        }
        apply(step)
    }

    private func apply(_ step: Step) {
        let timed = UnsafeMutableRawPointer(controlSource).assumingMemoryBound(to: GstTimedValueControlSource.self)
        switch step {
        case .none:
            break
        case .settle(let gain):
            gst_timed_value_control_source_unset_all(timed)
            setProperty(element, "volume", double: gain)
        case .ramp(let start, let from, let end, let to):
            gst_timed_value_control_source_unset_all(timed)
            gst_timed_value_control_source_set(timed, start, from)
            gst_timed_value_control_source_set(timed, end, to)
        }
    }
}
