import ByteSourceAPI
internal import CGStreamer
import EngineAPI

/// How a failure's kind crosses GStreamer's bus: the feeder posts a source's error as a
/// resource error whose code says whether trying again may help, and the engine reads the kind
/// back from the error's domain and code, with GStreamer's own errors (no type found, no
/// decoder) among them.
enum FailureKinds {
    /// The kind of a source's error.
    static func kind(of error: MediaSourceError) -> FailureKind {
        switch error {
        case .gone: .notFound
        case .unreachable: .unreachable
        case .unavailable, .readFailed, .closed: .transient
        case .versionChanged: .newVersion
        }
    }

    /// The resource error code the feeder posts for a source's error.
    static func resourceCode(for error: MediaSourceError) -> GstResourceError {
        switch kind(of: error) {
        case .notFound: GST_RESOURCE_ERROR_NOT_FOUND
        case .unreachable: GST_RESOURCE_ERROR_OPEN_READ
        case .transient: GST_RESOURCE_ERROR_READ
        // No element of the pipeline syncs a resource (it writes nothing): the code is free.
        case .newVersion: GST_RESOURCE_ERROR_SYNC
        // Never a source's kinds: the bus tells an output's failure by where it came from, and
        // the others come from GStreamer's own elements.
        case .outputLost, .unsupported, .corrupt: GST_RESOURCE_ERROR_WRITE
        }
    }

    /// Whether an error says only that a stream failed (GStreamer's generic stream error, which
    /// decodebin posts when no stream brought a buffer), not what failed.
    static func isGeneric(domain: GQuark, code: gint) -> Bool {
        domain == gst_stream_error_quark() && code == gint(GST_STREAM_ERROR_FAILED.rawValue)
    }

    /// Whether a generic stream error's details say that no stream brought a single buffer
    /// (decodebin's "all streams without buffers"): the track holds nothing that decodes, and
    /// trying it again finds the same. The parser's own "no valid frames" may never be posted.
    static func noStreamHadData(_ details: String) -> Bool {
        details.contains("all streams without buffers")
    }

    /// The kind of an error posted on the bus, from its domain and code.
    static func kind(domain: GQuark, code: gint) -> FailureKind {
        if domain == gst_resource_error_quark() {
            switch code {
            case gint(GST_RESOURCE_ERROR_NOT_FOUND.rawValue): return .notFound
            case gint(GST_RESOURCE_ERROR_OPEN_READ.rawValue): return .unreachable
            case gint(GST_RESOURCE_ERROR_SYNC.rawValue): return .newVersion
            default: return .transient
            }
        }
        if domain == gst_stream_error_quark() {
            let unsupported: [GstStreamError] = [
                GST_STREAM_ERROR_TYPE_NOT_FOUND, GST_STREAM_ERROR_WRONG_TYPE, GST_STREAM_ERROR_CODEC_NOT_FOUND,
                GST_STREAM_ERROR_NOT_IMPLEMENTED, GST_STREAM_ERROR_DECRYPT, GST_STREAM_ERROR_DECRYPT_NOKEY,
            ]
            let corrupt: [GstStreamError] = [GST_STREAM_ERROR_FORMAT, GST_STREAM_ERROR_DEMUX, GST_STREAM_ERROR_DECODE]
            if unsupported.contains(where: { gint($0.rawValue) == code }) { return .unsupported }
            if corrupt.contains(where: { gint($0.rawValue) == code }) { return .corrupt }
            return .transient
        }
        if domain == gst_core_error_quark(), code == gint(GST_CORE_ERROR_MISSING_PLUGIN.rawValue) {
            return .unsupported
        }
        return .transient
    }
}
