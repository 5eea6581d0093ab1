internal import CGStreamer
import Synchronization

/// Watches the output's input for the first audio of each new stream.
///
/// A gapless hand-over is reported once the new track is heard, and a stream can start without
/// ever bringing audio: playbin posts the new stream's start as soon as its stream-start event
/// reaches the output, and a truncated file's demuxer may find no index only after that. The
/// stream-start event passes this pad before the sink posts its message, so once the bus has
/// said that a stream started, ``isFlowing`` is about that stream.
final class FirstAudioWatch: @unchecked Sendable {
    // @unchecked: the pad pointer and the probe id are set once in init; the rest is atomic or
    // behind its mutex.

    private let pad: UnsafeMutablePointer<GstPad>
    private var probe: gulong = 0
    private let flowing = Atomic<Bool>(false)
    private let handler = Mutex<(@Sendable () -> Void)?>(nil)

    /// Watches `element`'s static pad `padName` (the output bin's ghost pad); nil without one.
    init?(element: UnsafeMutablePointer<GstElement>, padName: String = "sink") {
        guard let pad = gst_element_get_static_pad(element, padName) else { return nil }
        self.pad = pad
        let mask = GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue)
        // The pad holds this unretained pointer until the probe is removed in deinit.
        probe = gst_pad_add_probe(pad, mask, Self.onProbe, Unmanaged.passUnretained(self).toOpaque(), nil)
    }

    deinit {
        gst_pad_remove_probe(pad, probe)
        gst_object_unref(UnsafeMutableRawPointer(pad))
    }

    /// Whether audio of the newest stream has reached the output.
    var isFlowing: Bool { flowing.load(ordering: .acquiring) }

    /// Calls `body` on a streaming thread each time a new stream's first audio arrives; it must
    /// not wait.
    func whenFirstAudio(_ body: @escaping @Sendable () -> Void) {
        handler.withLock { $0 = body }
    }

    private static let onProbe:
        @convention(c) (UnsafeMutablePointer<GstPad>?, UnsafeMutablePointer<GstPadProbeInfo>?, gpointer?) ->
            GstPadProbeReturn = {
                _, info, context in
                guard let info, let context, let data = info.pointee.data else { return GST_PAD_PROBE_OK }
                let watch = Unmanaged<FirstAudioWatch>.fromOpaque(context).takeUnretainedValue()
                if info.pointee.type.rawValue & GST_PAD_PROBE_TYPE_BUFFER.rawValue != 0 {
                    watch.sawAudio()
                } else if data.assumingMemoryBound(to: GstEvent.self).pointee.type == GST_EVENT_STREAM_START {
                    watch.flowing.store(false, ordering: .releasing)
                }
                return GST_PAD_PROBE_OK
            }

    private func sawAudio() {
        guard !flowing.load(ordering: .acquiring),
            flowing.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        handler.withLock { $0 }?()
    }
}
