internal import CGStreamer
import EngineAPI

/// Reads the tags Spool shows from a GStreamer tag list.
enum TagReader {
    static func read(_ list: UnsafeMutablePointer<GstTagList>) -> TrackTags {
        var tags = TrackTags()
        tags.title = strings(list, "title").first
        tags.artists = strings(list, "artist")
        tags.album = strings(list, "album").first
        tags.albumArtists = strings(list, "album-artist")
        tags.genres = strings(list, "genre")
        tags.comment = strings(list, "comment").first
        tags.lyrics = strings(list, "lyrics").first ?? extendedLyrics(list) ?? id3Lyrics(list)
        tags.trackNumber = unsigned(list, "track-number")
        tags.discNumber = unsigned(list, "album-disc-number")
        tags.bitrate = unsigned(list, "bitrate") ?? unsigned(list, "nominal-bitrate")
        var date: OpaquePointer?
        if gst_tag_list_get_date_time(list, "datetime", &date) != 0, let date {
            tags.date = takeGString(gst_date_time_to_iso8601_string(date))
            gst_date_time_unref(date)
        }
        return tags
    }

    private static func strings(_ list: UnsafeMutablePointer<GstTagList>, _ tag: String) -> [String] {
        (0..<gst_tag_list_get_tag_size(list, tag)).compactMap { index in
            var value: UnsafeMutablePointer<gchar>?
            guard gst_tag_list_get_string_index(list, tag, index, &value) != 0 else { return nil }
            return takeGString(value)
        }
    }

    /// Lyrics in a Vorbis comment (FLAC, Ogg): GStreamer 1.22 maps `LYRICS` and
    /// `UNSYNCEDLYRICS` to no tag of its own, only to an extended comment `KEY=value` (the key
    /// may carry a language, `LYRICS[eng]=`).
    private static func extendedLyrics(_ list: UnsafeMutablePointer<GstTagList>) -> String? {
        for comment in strings(list, "extended-comment") {
            guard let equals = comment.firstIndex(of: "=") else { continue }
            let key = comment[..<equals].prefix { $0 != "[" }.uppercased()
            if key == "LYRICS" || key == "UNSYNCEDLYRICS" { return String(comment[comment.index(after: equals)...]) }
        }
        return nil
    }

    /// The first ID3v2 `USLT` frame's text (see ``ID3Lyrics``), at most 1 MiB of frame read.
    private static func id3Lyrics(_ list: UnsafeMutablePointer<GstTagList>) -> String? {
        let tag = "private-id3v2-frame"
        for index in 0..<gst_tag_list_get_tag_size(list, tag) {
            var sample: OpaquePointer?
            guard gst_tag_list_get_sample_index(list, tag, index, &sample) != 0, let sample else { continue }
            defer { gst_sample_unref(sample) }
            guard let buffer = gst_sample_get_buffer(sample), gst_buffer_get_size(buffer) <= TagText.maximumLyricsSize
            else {
                continue
            }
            var version: gint = 4
            if let caps = gst_sample_get_caps(sample), let structure = gst_caps_get_structure(caps, 0) {
                _ = gst_structure_get_int(structure, "version", &version)
            }
            var map = GstMapInfo()
            guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { continue }
            defer { gst_buffer_unmap(buffer, &map) }
            guard let data = map.data, map.size >= 4, data[0] == UInt8(ascii: "U"), data[1] == UInt8(ascii: "S") else {
                continue
            }
            let frame = Array(UnsafeBufferPointer(start: data, count: Int(map.size)))
            if let text = ID3Lyrics.text(ofFrame: frame, version: Int(version)) { return text }
        }
        return nil
    }

    private static func unsigned(_ list: UnsafeMutablePointer<GstTagList>, _ tag: String) -> Int? {
        var value: guint = 0
        guard gst_tag_list_get_uint(list, tag, &value) != 0 else { return nil }
        return Int(value)
    }
}
