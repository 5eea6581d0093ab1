import EngineAPI
internal import CGStreamer

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
        tags.lyrics = strings(list, "lyrics").first ?? extendedLyrics(list)
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

    private static func unsigned(_ list: UnsafeMutablePointer<GstTagList>, _ tag: String) -> Int? {
        var value: guint = 0
        guard gst_tag_list_get_uint(list, tag, &value) != 0 else { return nil }
        return Int(value)
    }
}
