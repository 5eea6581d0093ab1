import FoundationEssentials

/// The file name extension put on a track's `appsrc://` URI, so GStreamer's type finding
/// tries the finders for that format first.
///
/// In random-access mode the type finder pulls from Spool's reader, and it runs every
/// finder in rank order until one is certain. Several come before the audio ones and read
/// far: the MXF finder scans the first 64 KiB in 4 KiB pulls, the MP3 finder probes the
/// middle of the file, the APE and ID3v1 finders the end. Over a slow origin each of those
/// pulls waits for the network (FLAC, Ogg and M4A started only after 64 KiB, or after
/// the whole download when the far probes waited for it). With the extension, typefind
/// moves the matching finders to the head (`prioritize_extension` in gsttypefindhelper.c),
/// and the first certain answer ends the search. A wrong hint costs nothing: a finder that
/// is not certain leaves the search to the others in their usual order.
///
/// Ogg is hinted as `oga`: the ID3 finders also list `ogg` and rank above the Ogg finder, so
/// `ogg` ran the ID3v1 finder first, which peeks at the last 128 bytes (a request to the end of
/// the file and a wait for it before an Opus or Vorbis stream could start); `oga` names only
/// the Ogg finder.
enum TypeHint {
    /// Known audio extensions, mapped to the one GStreamer's type finders list.
    private static let extensions: [String: String] = [
        "mp3": "mp3", "mp2": "mp2", "mpga": "mpga",
        "flac": "flac",
        "ogg": "oga", "oga": "oga", "opus": "oga", "spx": "spx",
        "m4a": "mp4", "m4b": "mp4", "mp4": "mp4",
        "aac": "aac", "wav": "wav",
    ]

    /// MIME types, mapped the same way.
    private static let mimeTypes: [String: String] = [
        "audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/mpeg3": "mp3", "audio/x-mpeg": "mp3",
        "audio/flac": "flac", "audio/x-flac": "flac",
        "audio/ogg": "oga", "audio/opus": "oga", "audio/vorbis": "oga", "application/ogg": "oga",
        "audio/mp4": "mp4", "audio/x-m4a": "mp4", "audio/m4a": "mp4", "audio/x-m4b": "mp4",
        "audio/aac": "aac", "audio/aacp": "aac", "audio/x-aac": "aac",
        "audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/vnd.wave": "wav",
    ]

    /// The extension for a track at `url` whose origin declared `contentType`: the URL's own
    /// when it is a known audio one, else the content type's, else none.
    static func fileExtension(url: URL, contentType: String? = nil) -> String? {
        let name = url.lastPathComponent.lowercased()
        if let dot = name.lastIndex(of: "."), let known = extensions[String(name[name.index(after: dot)...])] {
            return known
        }
        guard let contentType else { return nil }
        let essence = contentType.split(separator: ";").first.map {
            String($0.filter { !$0.isWhitespace }).lowercased()
        }
        return essence.flatMap { mimeTypes[$0] }
    }

    /// `base` with the extension for the track appended (`appsrc://spool/1-2.flac`).
    static func uri(_ base: String, url: URL, contentType: String? = nil) -> String {
        fileExtension(url: url, contentType: contentType).map { "\(base).\($0)" } ?? base
    }

    /// The caps of the encoded audio in a track with extension `ext`, for formats whose decoder
    /// may be slow to load (see ``GStreamer/preloadDecoder(for:)``): AAC, decoded by libav where faad
    /// is missing.
    static func slowDecoderCaps(forExtension ext: String?) -> String? {
        switch ext {
        case "mp4", "aac": "audio/mpeg, mpegversion=(int)4"
        default: nil
        }
    }
}
