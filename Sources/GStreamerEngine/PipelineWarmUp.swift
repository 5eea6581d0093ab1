internal import CGStreamer
import Dispatch
import FoundationEssentials

/// The pipeline's first preroll, done once when the engine starts, on a few built-in frames of
/// silence and into a sink that drops them, so that the listener's first track does not pay
/// for it. playbin builds its lists of decoders and sinks on its first stream (and again
/// whenever a plugin load changes the registry), and decodebin, the type finders and the
/// parsers set themselves up: open → first audio of an MP3 took 29 ms in a daemon just
/// started and 18 ms in one that had played a track before (bench/startup).
extension GStreamerEngine {
    /// The warm-up's source: an appsrc the engine fills itself, named `.mp3` as a track's is.
    static let warmUpURI = "appsrc://spool/warm-up.mp3"

    /// Prerolls ``SilentMP3/bytes`` through playbin into `capsfilter ! fakesink` and lets it go.
    /// On the control queue, before any load: a load queued behind it starts on a warm
    /// pipeline. Nothing reaches the audio device, and no event is emitted: with no current
    /// track the bus ignores the warm-up's messages, and the control queue waits until the bus
    /// has passed them all before a load can make a track current.
    func warmPipeline() {
        guard shared.withLock({ $0.lifecycle.current == nil }) else { return }
        warmUpBegan.signal()
        guard let sink = try? AudioOutput.parse("capsfilter caps=audio/x-raw ! fakesink") else { return }
        defer { gst_object_unref(UnsafeMutableRawPointer(sink)) }
        let started = ContinuousClock.now
        setProperty(playbin, "audio-sink", object: sink)
        setProperty(playbin, "uri", Self.warmUpURI)
        if gst_element_set_state(playbin, GST_STATE_PAUSED) != GST_STATE_CHANGE_FAILURE {
            gst_element_get_state(playbin, nil, nil, 2_000_000_000)  // 2 s
        }
        // Marked in READY: in NULL the pipeline's bus drops what is posted.
        gst_element_set_state(playbin, GST_STATE_READY)
        postMarker(Self.warmUpMarkerName)
        if warmUpPassed.wait(timeout: .now() + .seconds(1)) == .timedOut {
            log.warning("the bus did not pass the pipeline warm-up's messages within 1 s")
            shared.withLock { $0.warmUpMissedItsMarker = true }
        }
        gst_element_set_state(playbin, GST_STATE_NULL)
        setProperty(playbin, "audio-sink", object: output)
        log.debug("pipeline warmed up in \((ContinuousClock.now - started).forPeople)")
    }

    /// The bus message after the warm-up's own: once the bus thread sees it, it has passed them.
    static let warmUpMarkerName = "spool-warm-up-done"

    /// Fills the warm-up's appsrc with the whole stream and its end.
    func feedWarmUp(_ source: UnsafeMutablePointer<GstElement>) {
        let appsrc = UnsafeMutableRawPointer(source).assumingMemoryBound(to: GstAppSrc.self)
        let bytes = SilentMP3.bytes
        gst_app_src_set_size(appsrc, gint64(bytes.count))
        gst_app_src_set_stream_type(appsrc, GST_APP_STREAM_TYPE_STREAM)
        guard let buffer = gst_buffer_new_allocate(nil, gsize(bytes.count), nil) else { return }
        _ = bytes.withUnsafeBytes { gst_buffer_fill(buffer, 0, $0.baseAddress, gsize($0.count)) }
        gst_app_src_push_buffer(appsrc, buffer)  // takes the buffer
        gst_app_src_end_of_stream(appsrc)
    }
}

/// A few frames of silence as an MP3 file: an empty ID3v2.4 tag, then MPEG-1 Layer III frames
/// (44.1 kHz, 128 kbit/s, stereo, 417 bytes each) whose side information is all zero, which
/// decode to digital silence. Enough frames for the parser to lock on.
enum SilentMP3 {
    static let bytes: [UInt8] = {
        let tag: [UInt8] = Array("ID3".utf8) + [4, 0, 0, 0, 0, 0, 0]
        let frame: [UInt8] = [0xFF, 0xFB, 0x90, 0x00] + Array(repeating: 0, count: 413)
        return tag + Array([[UInt8]](repeating: frame, count: 6).joined())
    }()
}
