// RFC 8216 (HTTP Live Streaming) playlists as plain values. Nothing in this module touches the
// network, a clock or the disk: text goes in, values come out, so the segment fetcher built on
// top of it can be tested without a server.

/// A parsed HLS playlist: either a media playlist (the segments of one stream) or a master
/// playlist (the variants and renditions to choose from). RFC 8216 §4.3.3, §4.3.4.
public enum HLSPlaylist: Sendable, Equatable {
    /// A media playlist: a list of media segments.
    case media(MediaPlaylist)
    /// A master (multivariant) playlist: the variant streams and renditions of one presentation.
    case master(MasterPlaylist)

    /// The media playlist, when this is one.
    public var media: MediaPlaylist? {
        if case .media(let playlist) = self { return playlist }
        return nil
    }

    /// The master playlist, when this is one.
    public var master: MasterPlaylist? {
        if case .master(let playlist) = self { return playlist }
        return nil
    }
}

/// Why a text is not a playlist this parser can use. Line numbers count from 1, as an editor
/// shows them; the BOM and the line ending do not count as lines.
public enum HLSParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes are not UTF-8 (RFC 8216 §4.1 requires it).
    case notUTF8
    /// The first line is not `#EXTM3U` (RFC 8216 §4.3.1.1).
    case missingHeader
    /// A tag that belongs only to the other kind of playlist: a media-segment tag in a master
    /// playlist or a variant tag in a media playlist (RFC 8216 §4.3 forbids mixing them).
    case mixedPlaylistKinds(line: Int, tag: String)
    /// A media playlist without `EXT-X-TARGETDURATION` (it is required, RFC 8216 §4.3.3.1).
    case missingTargetDuration
    /// An `EXT-X-TARGETDURATION` whose value is not a positive number of seconds.
    case invalidTargetDuration(line: Int)
    /// A tag whose value cannot be read, where reading it is needed to play correctly (an
    /// `EXTINF` duration, an `EXT-X-BYTERANGE`, a sequence number, a key's IV).
    case invalidTagValue(line: Int, tag: String)
    /// A tag without an attribute the RFC requires of it (a key's `METHOD` or `URI`, a
    /// rendition's `TYPE`, `GROUP-ID` or `NAME`, a map's `URI`).
    case missingAttribute(line: Int, tag: String, attribute: String)
    /// An `EXTINF` not followed by its segment's URI line (another `EXTINF`, or the end of the
    /// text, came first).
    case segmentWithoutURI(line: Int)
    /// A URI line in a media playlist with no `EXTINF` before it (RFC 8216 §4.3.2.1 requires one).
    case segmentWithoutDuration(line: Int)
    /// An `EXT-X-BYTERANGE` without `@offset` whose URI has no earlier sub-range to continue
    /// (RFC 8216 §4.3.2.2: the client MUST fail to parse the playlist).
    case byteRangeWithoutPrevious(line: Int)
    /// A URI (a line, or a `URI` attribute) that is not a valid URL even relative to the playlist's.
    case invalidURI(line: Int)
    /// A master playlist without a single `EXT-X-STREAM-INF` variant.
    case noVariants
    /// An `EXT-X-STREAM-INF` without a readable `BANDWIDTH` (required, RFC 8216 §4.3.4.2).
    case variantWithoutBandwidth(line: Int)
    /// An `EXT-X-STREAM-INF` not followed by its variant's URI line.
    case variantWithoutURI(line: Int)
    /// A URI the playlist may not name (see `ListTrust`: a playlist from the network names only
    /// http(s) addresses), as resolved, and why.
    case refusedURI(line: Int, uri: String, reason: String)

    /// The line the error is on, when it is about one line.
    public var line: Int? {
        switch self {
        case .mixedPlaylistKinds(let line, _), .invalidTargetDuration(let line), .invalidTagValue(let line, _),
            .missingAttribute(let line, _, _), .segmentWithoutURI(let line), .segmentWithoutDuration(let line),
            .byteRangeWithoutPrevious(let line), .invalidURI(let line), .variantWithoutBandwidth(let line),
            .variantWithoutURI(let line), .refusedURI(let line, _, _):
            line
        case .notUTF8, .missingHeader, .missingTargetDuration, .noVariants: nil
        }
    }

    /// The error in words, for a log line.
    public var description: String {
        switch self {
        case .notUTF8: "the playlist is not UTF-8 text"
        case .missingHeader: "the playlist does not start with #EXTM3U"
        case .mixedPlaylistKinds(let line, let tag):
            "line \(line): #\(tag) mixes master-playlist and media-playlist tags"
        case .missingTargetDuration: "the media playlist has no #EXT-X-TARGETDURATION"
        case .invalidTargetDuration(let line): "line \(line): #EXT-X-TARGETDURATION is not a positive number"
        case .invalidTagValue(let line, let tag): "line \(line): the value of #\(tag) cannot be read"
        case .missingAttribute(let line, let tag, let attribute):
            "line \(line): #\(tag) lacks its required \(attribute) attribute"
        case .segmentWithoutURI(let line): "line \(line): #EXTINF is not followed by a segment URI"
        case .segmentWithoutDuration(let line): "line \(line): a segment URI without #EXTINF before it"
        case .byteRangeWithoutPrevious(let line):
            "line \(line): #EXT-X-BYTERANGE has no offset and no earlier sub-range of the same URI to follow"
        case .invalidURI(let line): "line \(line): the URI is not a valid URL"
        case .noVariants: "the master playlist lists no variant stream (#EXT-X-STREAM-INF)"
        case .variantWithoutBandwidth(let line): "line \(line): #EXT-X-STREAM-INF lacks a valid BANDWIDTH"
        case .variantWithoutURI(let line): "line \(line): #EXT-X-STREAM-INF is not followed by a variant URI"
        case .refusedURI(let line, let uri, let reason): "line \(line): \(uri) is refused (\(reason))"
        }
    }
}
