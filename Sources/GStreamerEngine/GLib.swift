internal import CGStreamer
import Dispatch
import FoundationEssentials

/// `gst_init`, once per process, before any other GStreamer call.
public enum GStreamer {
    private static let initialized: Bool = {
        gst_init(nil, nil)
        preferDecoder("mpg123audiodec")
        // Above avdec_aac (primary): the two tie on rank otherwise, and decodebin then takes
        // the first by name.
        preferDecoder("faad", rank: UInt32(GST_RANK_PRIMARY.rawValue) + 1)
        demoteTypeFinder("application/mxf")
        return true
    }()

    /// Moves the type finder `name` behind every ranked one, unless the user ranks features
    /// with GST_PLUGIN_FEATURE_RANK. Type finding tries finders by rank until one is certain,
    /// and MXF's (a broadcast video container, ranked primary and first by name before
    /// `audio/mpeg`) scans the first 64 KiB in 4 KiB pulls. In random-access mode each pull
    /// waits for the network: id3demux's type finding of the audio after an ID3v2 tag (which
    /// gets no extension hint) took 64 KiB of download before an MP3 could start (1.4 s at
    /// 48 kB/s; players in push mode start after a few KiB).
    private static func demoteTypeFinder(_ name: String) {
        guard getenv("GST_PLUGIN_FEATURE_RANK") == nil,
            let cached = gst_registry_lookup_feature(gst_registry_get(), name)
        else { return }
        // Loading the plugin registers its type finders anew, replacing the registry's cached
        // features and their ranks: load first, then rank the loaded one.
        let loaded = gst_plugin_feature_load(cached)
        gst_object_unref(UnsafeMutableRawPointer(cached))
        guard let loaded else { return }
        gst_plugin_feature_set_rank(loaded, UInt32(GST_RANK_NONE.rawValue))
        gst_object_unref(UnsafeMutableRawPointer(loaded))
    }

    /// Gives the decoder `name` `rank` (primary by default), unless the user ranks features
    /// with GST_PLUGIN_FEATURE_RANK. A decoder from libav maps FFmpeg and everything it
    /// links (libavcodec, libavfilter, x265, flite, rsvg...): about 30 MiB more resident
    /// memory than a plain decoder. Debian 12 ranks mpg123audiodec and libav's avdec_mp3
    /// both "marginal", and decodebin then takes avdec_mp3 (first by name): 76 against
    /// 44 MiB measured for an MP3. For AAC it ranks avdec_aac primary and faad (in
    /// gst-plugins-bad) secondary: 69.5 against 36 MiB for an M4A (bench/memory.sh).
    private static func preferDecoder(_ name: String, rank: UInt32 = UInt32(GST_RANK_PRIMARY.rawValue)) {
        guard getenv("GST_PLUGIN_FEATURE_RANK") == nil, let factory = gst_element_factory_find(name) else { return }
        gst_plugin_feature_set_rank(factory, rank)
        gst_object_unref(UnsafeMutableRawPointer(factory))
    }

    /// Loads, on a background queue, the plugin of the decoder decodebin will choose for `caps`
    /// (the highest-ranked audio decoder that accepts them), so that opening a track overlaps
    /// the plugin's loading with the network instead of adding it after the container is
    /// parsed. Where faad is missing, libav's avdec_aac decodes AAC, and its plugin maps FFmpeg
    /// and everything it links: 110–125 ms measured on this machine, on the path to the first
    /// sample of every AAC track until loaded.
    static func preloadDecoder(for caps: String) {
        DispatchQueue.global(qos: .userInitiated).async {
            withDecoder(for: caps) { feature in
                if let loaded = gst_plugin_feature_load(feature) { gst_object_unref(UnsafeMutableRawPointer(loaded)) }
            }
        }
    }

    /// Loads the plugins every track's pipeline is built from, and MP3's decoder, and sets up
    /// their element classes (an instance made and dropped): ~30 ms measured here for
    /// uridecodebin, decodebin, typefind, appsrc, the converters and the parsers MP3, FLAC and
    /// AAC share. Loading a plugin changes the registry, which makes playbin and decodebin
    /// rebuild their lists of elements at their next stream, so these load before the
    /// pipeline's warm-up (see `GStreamerEngine.warmPipeline()`), which calls this. Other
    /// formats' decoders are left to ``preloadDecoder(for:)``: loading them all would cost
    /// memory for formats never played.
    static func warmUp() {
        initialize()
        for name in [
            "uridecodebin", "decodebin", "typefind", "appsrc", "audioconvert", "audioresample", "id3demux",
            "mpegaudioparse", "mpg123audiodec", "capsfilter",
        ] {
            guard let element = gst_element_factory_make(name, nil) else { continue }
            gst_object_unref(UnsafeMutableRawPointer(gst_object_ref_sink(UnsafeMutableRawPointer(element))))
        }
    }

    /// The name of the decoder decodebin chooses for `caps` (e.g. `avdec_aac`), if any.
    static func decoderName(for caps: String) -> String? {
        withDecoder(for: caps) { takeGString(gst_object_get_name(UnsafeMutablePointer<GstObject>($0))) } ?? nil
    }

    /// Calls `body` with the highest-ranked audio decoder factory whose sink accepts `caps`.
    private static func withDecoder<T>(for caps: String, _ body: (OpaquePointer) -> T) -> T? {
        initialize()
        guard let wanted = gst_caps_from_string(caps) else { return nil }
        defer { gst_caps_unref(wanted) }
        let decoders = gst_element_factory_list_get_elements(
            decoderOfAudio, GstRank(rawValue: GST_RANK_MARGINAL.rawValue))
        defer { gst_plugin_feature_list_free(decoders) }
        // Both lists are by decreasing rank, as decodebin tries them.
        let matching = gst_element_factory_list_filter(decoders, wanted, GST_PAD_SINK, 0)
        defer { gst_plugin_feature_list_free(matching) }
        guard let first = matching?.pointee.data else { return nil }
        return body(OpaquePointer(first))
    }

    /// GST_ELEMENT_FACTORY_TYPE_DECODER | GST_ELEMENT_FACTORY_TYPE_MEDIA_AUDIO (macros in C: bits 0 and 50).
    private static let decoderOfAudio = GstElementFactoryListType(1 << 0 | 1 << 50)

    /// Initialises GStreamer if it is not yet; safe from any thread.
    public static func initialize() { _ = initialized }

    /// Whether an element factory of this name is installed (e.g. `"scaletempo"`).
    public static func hasElement(_ name: String) -> Bool {
        initialize()
        guard let factory = gst_element_factory_find(name) else { return false }
        gst_object_unref(UnsafeMutableRawPointer(factory))
        return true
    }
}

/// GLib's fundamental type ids, which are macros in C.
enum GType_ {
    static let string = GType(16 << 2)
    static let double = GType(15 << 2)
}

/// Views a GStreamer object pointer as the GObject it starts with.
func asGObject<T>(_ pointer: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<GObject> {
    UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: GObject.self)
}

/// Sets a string, number, boolean, enum or flags property from its string form (gst_util_set_object_arg).
func setProperty<T>(_ object: UnsafeMutablePointer<T>, _ name: String, _ value: String) {
    gst_util_set_object_arg(asGObject(object), name, value)
}

/// Sets an object-valued property (g_object_set_property with a GValue holding `value`; nil unsets it).
func setProperty<T, U>(_ object: UnsafeMutablePointer<T>, _ name: String, object value: UnsafeMutablePointer<U>?) {
    var gvalue = GValue()
    g_value_init(&gvalue, gst_element_get_type())
    g_value_set_object(&gvalue, value.map(UnsafeMutableRawPointer.init))
    g_object_set_property(asGObject(object), name, &gvalue)
    g_value_unset(&gvalue)
}

/// Sets a double property.
func setProperty<T>(_ object: UnsafeMutablePointer<T>, _ name: String, double value: Double) {
    var gvalue = GValue()
    g_value_init(&gvalue, GType_.double)
    g_value_set_double(&gvalue, value)
    g_object_set_property(asGObject(object), name, &gvalue)
    g_value_unset(&gvalue)
}

/// Sets a GstStructure-valued property from its string form
/// (e.g. pulsesink's `stream-properties`).
func setProperty<T>(_ object: UnsafeMutablePointer<T>, _ name: String, structure text: String) {
    guard let structure = gst_structure_from_string(text, nil) else { return }
    var gvalue = GValue()
    g_value_init(&gvalue, gst_structure_get_type())
    g_value_take_boxed(&gvalue, structure)
    g_object_set_property(asGObject(object), name, &gvalue)
    g_value_unset(&gvalue)
}

/// Reads a string property; nil when unset.
func stringProperty<T>(_ object: UnsafeMutablePointer<T>, _ name: String) -> String? {
    var gvalue = GValue()
    g_value_init(&gvalue, GType_.string)
    defer { g_value_unset(&gvalue) }
    g_object_get_property(asGObject(object), name, &gvalue)
    return g_value_get_string(&gvalue).map { String(cString: $0) }
}

/// Takes a GLib-allocated string, returning it as a Swift string and freeing it.
func takeGString(_ pointer: UnsafeMutablePointer<gchar>?) -> String? {
    guard let pointer else { return nil }
    defer { g_free(pointer) }
    return String(cString: pointer)
}

/// Converts a GStreamer clock time (nanoseconds) to a Duration.
func duration(nanoseconds: Int64) -> Duration { .nanoseconds(nanoseconds) }

/// Converts a Duration to GStreamer nanoseconds, clamped to 0...Int64.max (a seek over MPRIS
/// can ask for any microsecond an Int64 holds, a thousand times more than nanoseconds can).
func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    let (total, carry) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
    guard !overflow, !carry else { return seconds < 0 ? 0 : .max }
    return max(0, total)
}

extension GStreamer {
    /// Audio MIME types this machine can decode, judged by the decoders and
    /// demuxers installed (what MPRIS's SupportedMimeTypes reports).
    public static func supportedMimeTypes() -> [String] {
        let needs: [(mimeTypes: [String], anyOf: [String])] = [
            (["audio/mpeg", "audio/mp3"], ["mpg123audiodec", "avdec_mp3"]),
            (["audio/flac", "audio/x-flac"], ["flacdec"]),
            (["audio/ogg", "audio/vorbis", "application/ogg"], ["vorbisdec"]),
            (["audio/opus"], ["opusdec"]),
            (["audio/mp4", "audio/aac", "audio/x-m4a"], ["avdec_aac", "faad"]),
            (["audio/wav", "audio/x-wav"], ["wavparse"]),
        ]
        return needs.filter { $0.anyOf.contains(where: hasElement) }.flatMap(\.mimeTypes)
    }
}

/// Where an element of playbin works, as its bus messages are read (later than posted).
enum StreamOrigin: Equatable, Sendable {
    /// In the stream of this URI: that of the nearest enclosing element with a `uri` property
    /// (the uridecodebin of its group).
    case stream(String)
    /// In playbin but in no stream: playsink, the output, playbin itself.
    case pipeline
    /// No longer in playbin, or in a uridecodebin that has no URI: a stream torn down (a load
    /// tears the groups down and reuses their bins), whose late messages are no track's.
    case detached

    /// The URI of a stream's element; nil for the others.
    var uri: String? {
        if case .stream(let uri) = self { return uri }
        return nil
    }
}

/// Where `element` works within playbin `top` (`top` itself names the next stream rather than
/// its own, so the walk stops there).
func streamOrigin(of element: UnsafeMutablePointer<GstObject>?, below top: UnsafeMutableRawPointer) -> StreamOrigin {
    guard let element else { return .pipeline }
    var object: UnsafeMutablePointer<GstObject>? = gst_object_ref(element).assumingMemoryBound(to: GstObject.self)
    while let current = object {
        defer { gst_object_unref(current) }
        if UnsafeMutableRawPointer(current) == top { return .pipeline }
        let type = current.withMemoryRebound(to: GTypeInstance.self, capacity: 1) { $0.pointee.g_class }
        if let type,
            g_object_class_find_property(
                UnsafeMutableRawPointer(type).assumingMemoryBound(to: GObjectClass.self), "uri") != nil
        {
            return stringProperty(current, "uri").map(StreamOrigin.stream) ?? .detached
        }
        object = gst_object_get_parent(current)
    }
    return .detached
}
