import FoundationEssentials
import HLS
import Testing

/// The URL every test playlist is fetched from, unless a test says otherwise.
let playlistURL = url("https://media.example.com/live/radio/index.m3u8")

/// A URL from a literal in a test (never from input under test).
func url(_ text: String) -> URL {
    guard let url = URL(string: text) else { preconditionFailure("bad test URL literal \(text)") }
    return url
}

/// Parses `text` as a media playlist, failing the test when it is not one.
func parseMedia(
    _ text: String, url: URL = playlistURL, sourceLocation: SourceLocation = #_sourceLocation
) throws -> MediaPlaylist {
    let playlist = try HLSParser.parse(text, url: url).get()
    return try #require(playlist.media, "not a media playlist: \(playlist)", sourceLocation: sourceLocation)
}

/// Parses `text` as a master playlist, failing the test when it is not one.
func parseMaster(
    _ text: String, url: URL = playlistURL, sourceLocation: SourceLocation = #_sourceLocation
) throws -> MasterPlaylist {
    let playlist = try HLSParser.parse(text, url: url).get()
    return try #require(playlist.master, "not a master playlist: \(playlist)", sourceLocation: sourceLocation)
}

/// The error parsing `text` gives, or nil when it parses.
func parseError(_ text: String, url: URL = playlistURL) -> HLSParseError? {
    if case .failure(let error) = HLSParser.parse(text, url: url) { return error }
    return nil
}

/// A live media playlist of `count` segments of `segmentSeconds` each, numbered from `firstSequence`,
/// named `segment<number>.aac`.
func livePlaylistText(
    firstSequence: Int, count: Int, segmentSeconds: Int = 6, targetDuration: Int = 6, endList: Bool = false,
    extraHeader: String = ""
) -> String {
    var lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:\(targetDuration)"]
    lines.append("#EXT-X-MEDIA-SEQUENCE:\(firstSequence)")
    if !extraHeader.isEmpty { lines.append(extraHeader) }
    for number in firstSequence..<(firstSequence + count) {
        lines.append("#EXTINF:\(segmentSeconds).000,")
        lines.append("segment\(number).aac")
    }
    if endList { lines.append("#EXT-X-ENDLIST") }
    return lines.joined(separator: "\n") + "\n"
}

/// `livePlaylistText` parsed.
func livePlaylist(
    firstSequence: Int, count: Int, segmentSeconds: Int = 6, targetDuration: Int = 6, endList: Bool = false
) throws -> MediaPlaylist {
    try parseMedia(
        livePlaylistText(
            firstSequence: firstSequence, count: count, segmentSeconds: segmentSeconds,
            targetDuration: targetDuration, endList: endList))
}
