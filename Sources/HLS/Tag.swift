/// The tags the parser knows: those it reads, and those it skips but that tell a media playlist
/// from a master playlist. Any other tag is ignored (RFC 8216 §6.3.1).
enum Tag: String {
    // Listed with the most frequent first: the synthesized `init(rawValue:)` compares in order.
    case segmentDuration = "EXTINF"
    case byteRange = "EXT-X-BYTERANGE"
    case programDateTime = "EXT-X-PROGRAM-DATE-TIME"
    case discontinuity = "EXT-X-DISCONTINUITY"
    case key = "EXT-X-KEY"
    case map = "EXT-X-MAP"
    case gap = "EXT-X-GAP"
    case targetDuration = "EXT-X-TARGETDURATION"
    case mediaSequence = "EXT-X-MEDIA-SEQUENCE"
    case discontinuitySequence = "EXT-X-DISCONTINUITY-SEQUENCE"
    case endList = "EXT-X-ENDLIST"
    case playlistType = "EXT-X-PLAYLIST-TYPE"
    case iFramesOnly = "EXT-X-I-FRAMES-ONLY"
    case streamInf = "EXT-X-STREAM-INF"
    case media = "EXT-X-MEDIA"
    case version = "EXT-X-VERSION"
    case independentSegments = "EXT-X-INDEPENDENT-SEGMENTS"
    case start = "EXT-X-START"
    // Skipped, but of one kind of playlist only.
    case dateRange = "EXT-X-DATERANGE"
    case bitrate = "EXT-X-BITRATE"
    case part = "EXT-X-PART"
    case partInf = "EXT-X-PART-INF"
    case serverControl = "EXT-X-SERVER-CONTROL"
    case skip = "EXT-X-SKIP"
    case preloadHint = "EXT-X-PRELOAD-HINT"
    case renditionReport = "EXT-X-RENDITION-REPORT"
    case iFrameStreamInf = "EXT-X-I-FRAME-STREAM-INF"
    case sessionData = "EXT-X-SESSION-DATA"
    case sessionKey = "EXT-X-SESSION-KEY"
    case contentSteering = "EXT-X-CONTENT-STEERING"

    /// The only kind of playlist the tag may appear in; nil for tags of both
    /// (`EXT-X-VERSION`, `EXT-X-INDEPENDENT-SEGMENTS`, `EXT-X-START`).
    var playlistKind: PlaylistKind? {
        switch self {
        case .version, .independentSegments, .start: nil
        case .streamInf, .media, .iFrameStreamInf, .sessionData, .sessionKey, .contentSteering: .master
        default: .media
        }
    }
}

/// The two kinds of playlist.
enum PlaylistKind {
    case media
    case master
}

/// A line of a playlist that means something: a known tag or a URI.
struct PlaylistLine {
    /// Its number in the text, from 1 (a byte order mark does not count).
    var number: Int
    var content: Content

    enum Content {
        /// A known tag, and the text after its first colon (blanks trimmed) when it has one.
        case tag(Tag, value: String?)
        /// Any other line that is not a comment: a segment's or a variant's URI.
        case uri(String)
    }
}
