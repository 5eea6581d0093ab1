internal import CGStreamer
import Synchronization

/// Puts a restarted stream on its presentation's timeline, for a source that seeks by
/// restarting at a piece (``ByteSourceAPI/ResourceInfo/seeksByRestart``, HLS).
///
/// A demuxer given a stream that begins at a later segment counts time from that segment's
/// first timestamp (tsdemux from 0.125 s, whatever the segment's place), and nothing in the
/// bytes says where the listener asked to go. At the decoder's input every buffer is moved by
/// one shift, so that the stream's first timestamp is the piece's start in the presentation,
/// and every segment event says the stream starts at the target: the decoder and the sink
/// clip what comes before it (so the seek lands where asked, not at the piece's start), the
/// running time begins at the target (no wait), and the position is the presentation's.
/// The segment also carries the playback rate, which no seek applies here.
final class PresentationTimeline: Sendable {
    /// Where the stream was restarted, in nanoseconds of the presentation.
    struct Anchor: Equatable, Sendable {
        /// Where the listener asked to go: the segment starts here.
        var target: GstClockTime = 0
        /// Where the piece the stream begins with starts.
        var pieceStart: GstClockTime = 0
        /// The first timestamp the demuxer gave the restarted stream, once a buffer passed.
        var firstTimestamp: GstClockTime?
        /// The playback rate.
        var rate: Double = 1

        /// The presentation time of `timestamp` (the demuxer's), anchoring the stream at its
        /// first one; nil for no timestamp.
        mutating func presentationTime(of timestamp: GstClockTime) -> GstClockTime? {
            guard timestamp != GstClockTime.max else { return nil }
            let first = firstTimestamp ?? timestamp
            firstTimestamp = first
            let moved = Int(bitPattern: timestamp &- first) &+ Int(pieceStart)
            return GstClockTime(max(0, moved))
        }
    }

    private let anchor = Mutex(Anchor())

    /// The stream begins again at a piece starting at `pieceStart`, for a listener who asked
    /// for `target`, played at `rate`.
    func restart(target: Duration, pieceStart: Duration, rate: Double) {
        anchor.withLock {
            $0 = Anchor(
                target: GstClockTime(nanoseconds(target)), pieceStart: GstClockTime(nanoseconds(pieceStart)), rate: rate
            )
        }
    }

    /// The restarted stream begins later in its piece than `restart` was told, at
    /// `pieceStart` (``ByteSourceAPI/ByteSource/whenRestartMoved(_:)``); ignored once its
    /// first buffer has passed.
    func move(pieceStart: Duration) {
        anchor.withLock {
            guard $0.firstTimestamp == nil else { return }
            $0.pieceStart = GstClockTime(nanoseconds(pieceStart))
        }
    }

    /// The anchor now (for tests and logs).
    var current: Anchor { anchor.withLock { $0 } }

    /// Watches what reaches `decoder`'s sink pad.
    func watch(decoder: UnsafeMutablePointer<GstElement>) {
        guard let pad = gst_element_get_static_pad(decoder, "sink") else { return }
        gst_pad_add_probe(
            pad, GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue),
            Self.onData, Unmanaged.passRetained(self).toOpaque(), Self.release)
        gst_object_unref(UnsafeMutableRawPointer(pad))
    }

    /// On a streaming thread: restamps a buffer, or replaces a TIME segment event.
    private static let onData:
        @convention(c) (UnsafeMutablePointer<GstPad>?, UnsafeMutablePointer<GstPadProbeInfo>?, gpointer?) ->
            GstPadProbeReturn = { _, info, context in
                guard let info, let context, let data = info.pointee.data else { return GST_PAD_PROBE_OK }
                let timeline = Unmanaged<PresentationTimeline>.fromOpaque(context).takeUnretainedValue()
                if info.pointee.type.rawValue & GST_PAD_PROBE_TYPE_BUFFER.rawValue != 0 {
                    timeline.restamp(info, data.assumingMemoryBound(to: GstBuffer.self))
                } else {
                    timeline.replaceSegment(info, data.assumingMemoryBound(to: GstEvent.self))
                }
                return GST_PAD_PROBE_OK
            }

    private func restamp(_ info: UnsafeMutablePointer<GstPadProbeInfo>, _ buffer: UnsafeMutablePointer<GstBuffer>) {
        let (pts, dts) = anchor.withLock { anchor -> (GstClockTime?, GstClockTime?) in
            let pts = anchor.presentationTime(of: buffer.pointee.pts)
            let dts = buffer.pointee.dts == GstClockTime.max ? nil : anchor.presentationTime(of: buffer.pointee.dts)
            return (pts, dts)
        }
        guard pts != nil || dts != nil,
            let writable = gst_mini_object_make_writable(
                UnsafeMutableRawPointer(buffer).assumingMemoryBound(to: GstMiniObject.self))
        else { return }
        let moved = UnsafeMutableRawPointer(writable).assumingMemoryBound(to: GstBuffer.self)
        if let pts { moved.pointee.pts = pts }
        if let dts { moved.pointee.dts = dts }
        info.pointee.data = UnsafeMutableRawPointer(moved)
    }

    private func replaceSegment(_ info: UnsafeMutablePointer<GstPadProbeInfo>, _ event: UnsafeMutablePointer<GstEvent>)
    {
        guard event.pointee.type == GST_EVENT_SEGMENT else { return }
        var parsed: UnsafePointer<GstSegment>?
        gst_event_parse_segment(event, &parsed)
        guard let parsed, parsed.pointee.format == GST_FORMAT_TIME, let copy = gst_segment_copy(parsed) else { return }
        let anchor = anchor.withLock { $0 }
        copy.pointee.start = anchor.target
        copy.pointee.time = anchor.target
        copy.pointee.position = anchor.target
        copy.pointee.stop = GstClockTime.max
        copy.pointee.duration = GstClockTime.max
        copy.pointee.rate = anchor.rate
        let replacement = gst_event_new_segment(copy)
        gst_segment_free(copy)
        guard let replacement else { return }
        gst_event_set_seqnum(replacement, gst_event_get_seqnum(event))
        gst_event_unref(event)
        info.pointee.data = UnsafeMutableRawPointer(replacement)
    }

    private static let release: @convention(c) (gpointer?) -> Void = { context in
        guard let context else { return }
        Unmanaged<PresentationTimeline>.fromOpaque(context).release()
    }
}
