import EngineAPI
import FoundationEssentials
import SpoolLog
internal import CGStreamer

/// Chooses and builds the audio sink: the user's own description, else the
/// desktop's sound server, else ALSA, else a null sink that keeps real time.
enum AudioOutput {
    /// The sink used when no audio device answers: it consumes audio at the
    /// speed it would play, so positions and track changes stay true.
    static let nullSinkDescription = "fakesink sync=true"

    /// Builds the sink element; the caller owns the returned reference.
    static func makeSink(description: String?, log: Logger) throws(EngineError) -> UnsafeMutablePointer<GstElement> {
        if let description {
            return try parse(description)
        }
        if let pulse = probe("pulsesink") {
            setProperty(pulse, "client-name", "Spool")
            // How mixers and desktops name, iconify and route the stream.
            setProperty(
                pulse, "stream-properties",
                structure: "props,media.role=music,media.name=Spool,application.name=Spool,application.icon_name=spool")
            log.info("audio output: PulseAudio/PipeWire")
            return pulse
        }
        if let alsa = probe("alsasink") {
            log.info("audio output: ALSA")
            return alsa
        }
        log.warning("no audio device answered; playing into a null sink that keeps real time")
        return try parse(nullSinkDescription)
    }

    /// Parses a gst-launch description (`"filesink location=out.raw"`) into one element or bin.
    static func parse(_ description: String) throws(EngineError) -> UnsafeMutablePointer<GstElement> {
        var error: UnsafeMutablePointer<GError>?
        let element = gst_parse_bin_from_description(description, 1, &error)
        if let error {
            let message = String(cString: error.pointee.message)
            g_error_free(error)
            if let element { gst_object_unref(UnsafeMutableRawPointer(element)) }
            throw EngineError("bad audio sink '\(description)': \(message)")
        }
        guard let element else { throw EngineError("bad audio sink '\(description)'") }
        gst_object_ref_sink(UnsafeMutableRawPointer(element))
        return element
    }

    /// Creates a sink and checks that it can open its device; nil when it cannot.
    private static func probe(_ factory: String) -> UnsafeMutablePointer<GstElement>? {
        guard let sink = gst_element_factory_make(factory, nil) else { return nil }
        gst_object_ref_sink(UnsafeMutableRawPointer(sink))
        let result = gst_element_set_state(sink, GST_STATE_READY)
        gst_element_set_state(sink, GST_STATE_NULL)
        if result == GST_STATE_CHANGE_FAILURE {
            gst_object_unref(UnsafeMutableRawPointer(sink))
            return nil
        }
        return sink
    }
}
