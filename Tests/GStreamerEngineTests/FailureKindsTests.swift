import ByteSourceAPI
import CGStreamer
import EngineAPI
import Testing

@testable import GStreamerEngine

/// One mapping from GStreamer's error domains and codes to the kinds the player acts on.
@Suite("Failure kinds from GStreamer's errors")
struct FailureKindsTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let domain: @Sendable () -> GQuark
        let code: UInt32
        let kind: FailureKind
        let testDescription: String
    }

    static let rows: [Row] = [
        Row(
            domain: gst_resource_error_quark, code: GST_RESOURCE_ERROR_NOT_FOUND.rawValue, kind: .notFound,
            testDescription: "resource not found"),
        Row(
            domain: gst_resource_error_quark, code: GST_RESOURCE_ERROR_OPEN_READ.rawValue, kind: .unreachable,
            testDescription: "resource open-read"),
        Row(
            domain: gst_resource_error_quark, code: GST_RESOURCE_ERROR_READ.rawValue, kind: .transient,
            testDescription: "resource read"),
        Row(
            domain: gst_resource_error_quark, code: GST_RESOURCE_ERROR_SYNC.rawValue, kind: .newVersion,
            testDescription: "resource sync (a new version)"),
        Row(
            domain: gst_stream_error_quark, code: GST_STREAM_ERROR_TYPE_NOT_FOUND.rawValue, kind: .unsupported,
            testDescription: "no type found"),
        Row(
            domain: gst_stream_error_quark, code: GST_STREAM_ERROR_CODEC_NOT_FOUND.rawValue, kind: .unsupported,
            testDescription: "no decoder"),
        Row(
            domain: gst_stream_error_quark, code: GST_STREAM_ERROR_WRONG_TYPE.rawValue, kind: .unsupported,
            testDescription: "wrong type"),
        Row(
            domain: gst_stream_error_quark, code: GST_STREAM_ERROR_DEMUX.rawValue, kind: .corrupt,
            testDescription: "demuxer gave up"),
        Row(
            domain: gst_stream_error_quark, code: GST_STREAM_ERROR_DECODE.rawValue, kind: .corrupt,
            testDescription: "decoder gave up"),
        Row(
            domain: gst_stream_error_quark, code: GST_STREAM_ERROR_FORMAT.rawValue, kind: .corrupt,
            testDescription: "bad format"),
        Row(
            domain: gst_stream_error_quark, code: GST_STREAM_ERROR_FAILED.rawValue, kind: .transient,
            testDescription: "stream failed"),
        Row(
            domain: gst_core_error_quark, code: GST_CORE_ERROR_MISSING_PLUGIN.rawValue, kind: .unsupported,
            testDescription: "missing plugin"),
        Row(
            domain: gst_core_error_quark, code: GST_CORE_ERROR_FAILED.rawValue, kind: .transient,
            testDescription: "core failed"),
    ]

    @Test(arguments: rows)
    func aBusErrorHasTheKindItsDomainAndCodeSay(row: Row) {
        GStreamer.initialize()
        #expect(FailureKinds.kind(domain: row.domain(), code: gint(row.code)) == row.kind)
    }

    @Test(arguments: rows)
    func onlyTheGenericStreamErrorWaitsForAnExactOne(row: Row) {
        GStreamer.initialize()
        let generic = row.testDescription == "stream failed"
        #expect(FailureKinds.isGeneric(domain: row.domain(), code: gint(row.code)) == generic)
    }

    @Test func aStreamErrorSayingNoStreamHadDataIsNotWorthAnotherTry() {
        let decodebin =
            "../gst/playback/gstdecodebin2.c(4720): gst_decode_bin_expose (): /GstPlayBin:spool-player/"
            + "GstURIDecodeBin:uridecodebin363/GstDecodeBin:decodebin539: all streams without buffers"
        #expect(FailureKinds.noStreamHadData(decodebin))
        #expect(
            !FailureKinds.noStreamHadData("gstbasesrc.c(3132): gst_base_src_loop (): streaming stopped, reason error"))
    }

    @Test(arguments: [
        MediaSourceError.gone("404"), .unreachable("refused"), .unavailable("503"), .readFailed("EIO"),
        .versionChanged("new ETag"),
    ])
    func aSourcesErrorCrossesTheBusWithItsKind(error: MediaSourceError) {
        GStreamer.initialize()
        // The feeder posts it as a resource error with this code; the bus reads the kind back.
        let code = FailureKinds.resourceCode(for: error)
        #expect(
            FailureKinds.kind(domain: gst_resource_error_quark(), code: gint(code.rawValue))
                == FailureKinds.kind(of: error))
    }
}
