import FoundationEssentials

/// Parses RFC 8216 playlists.
///
/// What it accepts beyond the letter of the RFC, because real servers write it: LF or CRLF line
/// endings, a UTF-8 byte order mark, blank lines (also before `#EXTM3U`), spaces and tabs around
/// lines, text after `#EXTM3U` on its line, `EXTINF` without its comma, a fractional
/// `EXT-X-TARGETDURATION`, segments longer than the target duration (see
/// ``MediaPlaylist/segmentsExceedingTargetDuration``), and unreadable values of tags that do not
/// change what is played (`EXT-X-VERSION`, `EXT-X-PROGRAM-DATE-TIME`, `EXT-X-START`, an unknown
/// `EXT-X-PLAYLIST-TYPE` or rendition `TYPE`), which are ignored. Unknown tags and attributes
/// are ignored, as RFC 8216 §6.3.1 requires, and so are comments.
///
/// What it refuses, as an ``HLSParseError``: anything that would make a client fetch or decrypt
/// the wrong bytes, such as an unreadable `EXTINF`, byte range, sequence number or IV, a missing
/// required attribute, or master and media tags in one playlist.
public enum HLSParser {
    /// Parses `text`, a playlist fetched from `url` (its URIs are resolved against it).
    /// A playlist is a master playlist when it has a master-only tag (`EXT-X-STREAM-INF`,
    /// `EXT-X-MEDIA`, …), else a media playlist.
    public static func parse(_ text: String, url: URL) -> Result<HLSPlaylist, HLSParseError> {
        Result { () throws(HLSParseError) in try parseThrowing(text, url: url) }
    }

    /// Parses a playlist's bytes, which must be UTF-8 (RFC 8216 §4.1); see ``parse(_:url:)``.
    public static func parse(data: some Collection<UInt8>, url: URL) -> Result<HLSPlaylist, HLSParseError> {
        guard let text = String(validating: data, as: UTF8.self) else { return .failure(.notUTF8) }
        return parse(text, url: url)
    }

    private static func parseThrowing(_ text: String, url: URL) throws(HLSParseError) -> HLSPlaylist {
        let lines = try playlistLines(text)
        switch try kind(of: lines) {
        case .media:
            var builder = MediaPlaylistBuilder(url: url)
            for line in lines { try builder.consume(line) }
            return .media(try builder.finish())
        case .master:
            var builder = MasterPlaylistBuilder(url: url)
            for line in lines { try builder.consume(line) }
            return .master(try builder.finish())
        }
    }

    /// The lines after `#EXTM3U` that mean something: known tags and URIs, trimmed, with
    /// their line numbers.
    static func playlistLines(_ text: String) throws(HLSParseError) -> [PlaylistLine] {
        var text = text
        let scanned = text.withUTF8(scanPlaylist)
        guard scanned.startsWithHeader else { throw .missingHeader }
        return scanned.lines
    }

    /// Which kind of playlist the tags make; a tag of the other kind than the first
    /// kind-specific tag is an error. A playlist with no kind-specific tag is a media playlist
    /// (and will lack its target duration).
    private static func kind(of lines: [PlaylistLine]) throws(HLSParseError) -> PlaylistKind {
        var established: PlaylistKind?
        for line in lines {
            guard case .tag(let tag, _) = line.content, let tagKind = tag.playlistKind else { continue }
            if let established, established != tagKind {
                throw .mixedPlaylistKinds(line: line.number, tag: tag.rawValue)
            }
            established = tagKind
        }
        return established ?? .media
    }
}
