import Basics
internal import CGStreamer
import EngineAPI
import FoundationEssentials

/// Chooses and builds the audio sink: the user's own description, else the
/// desktop's sound server, else ALSA, else a null sink that keeps real time;
/// in front of it, the volume that changes without clicks.
enum AudioOutput {
    /// What playbin gets as its audio sink, and the volume inside it.
    struct Output {
        /// The bin `volume ! sink`; the caller owns this reference.
        let bin: UnsafeMutablePointer<GstElement>
        /// The output's gain.
        let volume: SmoothVolume
    }

    /// Builds the sink (see ``makeSink(description:log:)``) behind a ``SmoothVolume``, in one bin.
    /// playbin's own volume (its `soft-volume` element) stays at 1.0, where it passes buffers through.
    static func make(description: String?, log: Logger) throws(EngineError) -> Output {
        let sink = try makeSink(description: description, log: log)
        defer { gst_object_unref(UnsafeMutableRawPointer(sink)) }
        guard let volume = SmoothVolume() else {
            throw EngineError("GStreamer's volume element is missing (install gstreamer1.0-plugins-base)")
        }
        guard let bin = gst_bin_new("spool-output") else { throw EngineError("could not create the output bin") }
        gst_object_ref_sink(UnsafeMutableRawPointer(bin))
        let asBin = UnsafeMutableRawPointer(bin).assumingMemoryBound(to: GstBin.self)
        // The bin takes its own references to both elements.
        gst_bin_add(asBin, volume.element)
        gst_bin_add(asBin, sink)
        let volumeInput = gst_element_get_static_pad(volume.element, "sink")
        defer { gst_object_unref(UnsafeMutableRawPointer(volumeInput)) }
        guard gst_element_link(volume.element, sink) != 0,
            let ghost = gst_ghost_pad_new("sink", volumeInput), gst_element_add_pad(bin, ghost) != 0
        else {
            gst_object_unref(UnsafeMutableRawPointer(bin))
            throw EngineError("the volume element does not link to the audio sink")
        }
        return Output(bin: bin, volume: volume)
    }

    /// The sink used when no audio device answers: it consumes audio at the
    /// speed it would play, so positions and track changes stay true.
    static let nullSinkDescription = "fakesink sync=true"

    /// Builds the sink element; the caller owns the returned reference.
    static func makeSink(description: String?, log: Logger) throws(EngineError) -> UnsafeMutablePointer<GstElement> {
        if let description {
            return try parse(description)
        }
        let pulse = probe("pulsesink") { pulse in
            // Set before the device opens: the connection is made with them, and kept.
            setProperty(pulse, "client-name", "Spool")
            // How mixers and desktops name, iconify and route the stream.
            setProperty(
                pulse, "stream-properties",
                structure: "props,media.role=music,media.name=Spool,application.name=Spool,application.icon_name=spool")
        }
        if let pulse {
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

    /// Creates a sink, gives it its settings (`configure`) and checks that it can open its
    /// device; nil when it cannot. The device stays open (READY), so the first track does not
    /// wait for it.
    private static func probe(
        _ factory: String, configure: (UnsafeMutablePointer<GstElement>) -> Void = { _ in }
    ) -> UnsafeMutablePointer<GstElement>? {
        guard let sink = gst_element_factory_make(factory, nil) else { return nil }
        gst_object_ref_sink(UnsafeMutableRawPointer(sink))
        configure(sink)
        if gst_element_set_state(sink, GST_STATE_READY) == GST_STATE_CHANGE_FAILURE {
            gst_element_set_state(sink, GST_STATE_NULL)
            gst_object_unref(UnsafeMutableRawPointer(sink))
            return nil
        }
        return sink
    }
}
