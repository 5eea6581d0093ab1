internal import CGStreamer

/// Puts faad's segment where the container says when an M4A has an edit list.
///
/// faad (faad2) drops the output of the first AAC frame it decodes after a start or a flush,
/// which removes an encoder's priming when nothing else does, and the audio decoder base class
/// stamps what follows from the first input's time: its output runs one frame (1024 samples of
/// the stream's rate) early. Most encoders also write an edit list for their priming, and
/// qtdemux's segment then starts after it: the two together cut a frame of real audio at the
/// start (23 ms at 44.1 kHz; at every gapless junction a skip) and keep a frame of padding at the
/// end. Where the segment starts later than its stream time (the edit list's offset), faad gets
/// it moved one frame earlier, so its early output is clipped where the container says.
/// Measured on a tone with a 1024-sample edit list: the first sound at sample 22051 of the
/// source's 22050 (avdec_aac: 22052; without the move: 21028). After a seek the frame that
/// holds the target is still dropped: a seek may land up to one frame late.
enum FaadTiming {
    /// The start and stop faad should get for a TIME segment of `start`…`stop` (nil: open) at
    /// stream time `time`, for a stream of `rate` Hz; nil to leave the segment as it is.
    static func shifted(start: UInt, stop: UInt?, time: UInt, rate: Int) -> (start: UInt, stop: UInt?)? {
        guard rate > 0, start > time else { return nil }
        let frame = 1024 * 1_000_000_000 / UInt(rate)
        let shift = min(start - time, frame)
        return (start - shift, stop.map { $0 >= shift ? $0 - shift : 0 })
    }

    /// Watches the segments reaching `decoder`'s sink pad, if `decoder` is a faad element.
    static func attach(to decoder: UnsafeMutablePointer<GstElement>) {
        guard let factory = gst_element_get_factory(decoder),
            takeGString(gst_object_get_name(UnsafeMutableRawPointer(factory).assumingMemoryBound(to: GstObject.self)))
                == "faad",
            let pad = gst_element_get_static_pad(decoder, "sink")
        else { return }
        gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, onEvent, nil, nil)
        gst_object_unref(UnsafeMutableRawPointer(pad))
    }

    /// On a streaming thread: replaces a segment event that ``shifted(start:stop:time:rate:)`` moves.
    private static let onEvent:
        @convention(c) (
            UnsafeMutablePointer<GstPad>?, UnsafeMutablePointer<GstPadProbeInfo>?, gpointer?
        ) -> GstPadProbeReturn = { pad, info, _ in
            guard let pad, let info, let data = info.pointee.data else { return GST_PAD_PROBE_OK }
            let event = data.assumingMemoryBound(to: GstEvent.self)
            guard event.pointee.type == GST_EVENT_SEGMENT else { return GST_PAD_PROBE_OK }
            var parsed: UnsafePointer<GstSegment>?
            gst_event_parse_segment(event, &parsed)
            guard let parsed, parsed.pointee.format == GST_FORMAT_TIME, let caps = gst_pad_get_current_caps(pad)
            else { return GST_PAD_PROBE_OK }
            var rate: gint = 0
            let known = gst_structure_get_int(gst_caps_get_structure(caps, 0), "rate", &rate) != 0
            gst_caps_unref(caps)
            let open = GstClockTime.max
            guard known,
                let moved = shifted(
                    start: parsed.pointee.start, stop: parsed.pointee.stop == open ? nil : parsed.pointee.stop,
                    time: parsed.pointee.time, rate: Int(rate)),
                let copy = gst_segment_copy(parsed)
            else { return GST_PAD_PROBE_OK }
            let shift = parsed.pointee.start - moved.start
            copy.pointee.start = moved.start
            copy.pointee.stop = moved.stop ?? open
            if copy.pointee.position >= shift { copy.pointee.position -= shift }
            let replacement = gst_event_new_segment(copy)
            gst_segment_free(copy)
            guard let replacement else { return GST_PAD_PROBE_OK }
            gst_event_set_seqnum(replacement, gst_event_get_seqnum(event))
            gst_event_unref(event)
            info.pointee.data = UnsafeMutableRawPointer(replacement)
            return GST_PAD_PROBE_OK
        }
}
