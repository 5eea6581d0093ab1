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

    private static func unsigned(_ list: UnsafeMutablePointer<GstTagList>, _ tag: String) -> Int? {
        var value: guint = 0
        guard gst_tag_list_get_uint(list, tag, &value) != 0 else { return nil }
        return Int(value)
    }
}
