import ByteSourceAPI
internal import CGStreamer
import EngineAPI
import FoundationEssentials

/// How a track's bytes reach GStreamer and how its seeks are asked for: pure decisions, made
/// from the track's URL and type and from which bytes the source holds.
enum FeedingMode {
    /// Whether a seekable `track` is read in random-access (pull) mode rather than pushed.
    ///
    /// Pull mode gives Ogg exact seeks and stable durations (push mode seeks oggdemux about
    /// 2 s wrong), but in pull mode the parsers built on baseparse read far more than they
    /// play before the first sample: baseparse pulls 64 KiB blocks and takes a shorter answer
    /// as the end of the file (gstbaseparse.c, gst_base_parse_pull_range), so each pull waits
    /// for its whole 64 KiB, and id3demux pulls the last 128 bytes of an MP3 for an ID3v1 tag.
    /// Over a slow origin an MP3 started after 64 KiB (1.4 s at 48 kB/s; players pushing
    /// start after a few KiB, 0.24 s), a FLAC after 64 KiB too, and a short MP3 only after its
    /// whole download (the tail read waited for it). Pushed, appsrc asks for what comes next,
    /// the parser takes what has arrived, and a seek goes upstream as a byte seek (seek-data).
    /// flacparse stamps every frame from its header's sample number, so a pushed FLAC lands
    /// where its bytes are. Local files keep pull mode: their reads never wait.
    static func pulls(_ track: EngineTrack, contentType: String?) -> Bool {
        guard !track.url.isFileURL else { return true }
        let pushed: Set<String> = ["mp3", "mp2", "mpga", "flac"]
        return !pushed.contains(TypeHint.fileExtension(url: track.url, contentType: contentType) ?? "")
    }

    /// The bytes at the end of a pulled file of `format` (a ``TypeHint`` extension) that its
    /// demuxer reads before the first audio, if it does: oggdemux finds the duration from the
    /// last page, pulling the last 8500 bytes (gstoggdemux.c, CHUNKSIZE) once it has parsed
    /// the header. Asked for at the open, that request runs beside the start's instead of after
    /// it (0.2 s sooner at 40 kB/s).
    static func tailReadBeforeStart(format: String?, length: Int64) -> Range<Int64>? {
        guard let tail = tailBeforeStart(format: format), length > 0 else { return nil }
        return max(0, length - tail)..<length
    }

    /// How many bytes at the end a pulled file of `format` has read before its first audio
    /// (see ``tailReadBeforeStart(format:length:)``): a downloading source fetches them first.
    static func tailBeforeStart(format: String?) -> Int64? {
        format == "oga" || format == "spx" ? 8500 : nil
    }

    /// The last bytes of a pushed file of `format` that its demuxer seeks to before the first
    /// audio when it knows the file's length, if it does, for a source without random access
    /// (an origin that sends the file only from its start): oggdemux pushed a file of known
    /// length seeks to its last 64 KiB for the duration once it has the headers
    /// (gstoggdemux.c, gst_ogg_demux_get_duration_push), and such an origin sends those last.
    /// A 60-s Ogg Vorbis file over a link at 3x its bitrate started after 20 s, its whole
    /// download (an MP3 the same way: 0.18 s); an hour's podcast would start after minutes.
    /// Not told the length, oggdemux plays at once, as it does a chunked response of unknown
    /// length; it learns no duration and refuses seeks, until every byte is here and the
    /// engine reads the length and seeks by loading the track again. Nil when the demuxer is
    /// told the length.
    static func tailSoughtBeforeStart(format: String?, info: ResourceInfo) -> Range<Int64>? {
        guard !info.randomAccess, info.live == nil, let length = info.length, length > 0,
            tailBeforeStart(format: format) != nil
        else { return nil }
        return max(0, length - 64 * 1024)..<length
    }

    /// Whether the demuxer of a pulled file of `format` takes short answers. oggdemux pulls
    /// 8500 bytes at a time (CHUNKSIZE) and feeds whatever a pull returns to its page parser,
    /// which finds pages across any split (`gst_ogg_demux_get_data`; its searches for the last
    /// page and a seek's bisection read through the same call). Answered with what has arrived,
    /// it identifies the streams once their header pages are here (4.4 KB for an Opus file),
    /// starts from the first audio page instead of waiting for two whole chunks, and walks a
    /// seek's pages as they come instead of a chunk at a time.
    static func takesShortReads(format: String?) -> Bool {
        tailBeforeStart(format: format) != nil
    }

    /// Whether a listener's seek in `track` asks GStreamer for sample accuracy.
    ///
    /// The audio parsers built on baseparse (MP3, FLAC, ADTS AAC) answer an accurate seek in
    /// pull mode by parsing every frame from the last one they indexed, which is as far as
    /// playback got, up to the target (gstbaseparse.c, gst_base_parse_handle_seek): over the
    /// network a seek to 80 % of a track read the file sequentially and landed only when the
    /// download got there. Without the flag baseparse is still exact within 20 s after what it
    /// indexed and otherwise converts the time with the stream's seek table (Xing TOC) or
    /// bitrate, so the reader goes to the target at once. Ogg, MP4 and WAV seek the same either
    /// way. A local file keeps the flag: the scan is a fast local read there.
    static func exactSeeks(_ track: EngineTrack) -> Bool { track.url.isFileURL }
}

/// How a seek in a pushed track is sent: as the time, which the parser handles, or as the
/// byte where the parser says that time is, which goes straight to the source.
///
/// baseparse answers a time seek up to 20 s past the last frame it indexed (everything it
/// parsed from the start or from an exact seek) by parsing every frame from that one to the
/// target, "accurate for free" (gstbaseparse.c, TARGET_DIFFERENCE). From a local file that is
/// a fast read; over the network it reads at the download's pace: a seek from 1 s to 15 s of
/// a 30-s MP3 at 3× its bitrate asked the origin for nothing and landed only when the
/// sequential download reached 15 s. A byte seek sent from the top of the pipeline passes
/// every element up to appsrc (each gives upstream the first chance, id3demux shifts it past
/// the tag), and the parser times the new segment with the same conversion (Xing TOC, or the
/// bitrate it measured) that gave the byte: measured within 0.1 s of the target for CBR and
/// VBR MP3 tones.
enum SeekRoute: Equatable, Sendable {
    /// A time seek, sample-accurate when asked.
    case time(accurate: Bool)
    /// A byte seek at this offset of the parser's stream.
    case bytes(Int64)

    /// How far before the target baseparse may start parsing for a time seek.
    static let parseThrough: Duration = .seconds(20)

    /// The route for a seek that is sample-accurate when `accurate`. For a `pushed` track,
    /// `byte(at:)` is the parser's conversion of a time to its stream offset (nil when it cannot
    /// tell yet), and `holds` says whether the source holds a range of that stream.
    static func choose(
        target: Duration, accurate: Bool, pushed: Bool, byte: (Duration) -> Int64?, holds: (Range<Int64>) -> Bool
    ) -> SeekRoute {
        guard pushed, !accurate, let to = byte(target) else { return .time(accurate: accurate) }
        // Every byte up to the target is here: the parser scans from wherever its index reaches
        // (a fast read) and lands on the sample. Estimated from a seek table instead, it misses:
        // an 8-bit Xing TOC places a byte to 1/256 of the file, half a second of a 3-min MP3.
        if holds(0..<to) { return .time(accurate: true) }
        let from = target > parseThrough ? byte(target - parseThrough) : 0
        guard let from, from <= to else { return .bytes(to) }
        // Bytes that are here make the parse-through a fast read, and exact.
        return holds(from..<to) ? .time(accurate: false) : .bytes(to)
    }
}

/// A referenced GStreamer element (the pipeline's parser), released once.
struct ElementRef: @unchecked Sendable {
    // @unchecked: GStreamer's element queries are thread-safe, and the reference is taken
    // and released by whoever holds this value, under the engine's lock.
    let pointer: UnsafeMutablePointer<GstElement>

    /// Takes a reference to `element`.
    init(_ element: UnsafeMutablePointer<GstElement>) {
        gst_object_ref(UnsafeMutableRawPointer(element))
        pointer = element
    }

    /// Drops the reference.
    func release() { gst_object_unref(UnsafeMutableRawPointer(pointer)) }

    /// The offset in the parsed stream where the parser places `time` (its seek table or the
    /// bitrate it measured); nil before it can tell.
    func byte(at time: Duration) -> Int64? {
        var bytes: gint64 = 0
        guard
            gst_element_query_convert(pointer, GST_FORMAT_TIME, gint64(nanoseconds(time)), GST_FORMAT_BYTES, &bytes)
                != 0,
            bytes >= 0
        else { return nil }
        return Int64(bytes)
    }
}
