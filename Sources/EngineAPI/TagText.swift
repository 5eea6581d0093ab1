/// Makes text that comes from files (tags, file names, playlist titles) fit to show and to send
/// over D-Bus. Files carry anything: control characters (terminal escapes among them), NULs,
/// which D-Bus strings cannot hold, megabyte strings and thousands of values. Swift strings are
/// already valid Unicode (invalid UTF-8 became U+FFFD where the string was made), which is what
/// libdbus requires; the rest is done here.
public enum TagText {
    /// The most Unicode scalars a cleaned string keeps, the ellipsis that marks a cut included:
    /// at most 4 KiB of UTF-8, ample for any title or comment a player shows.
    public static let maximumLength = 1024

    /// The most values a list (artists, genres) keeps.
    public static let maximumCount = 32

    /// The most UTF-8 bytes of lyrics kept from a tag (a song's lyrics are a few KiB).
    public static let maximumLyricsSize = 1 << 20

    /// `text` without control characters: each run of white space (line breaks and tabs
    /// included) becomes one space, other controls (C0 with NUL, DEL, C1) go, and so does white
    /// space at either end; cut on a character boundary with "…" to ``maximumLength`` scalars.
    /// Nil when nothing is left.
    public static func clean(_ text: String, maximumLength: Int = maximumLength) -> String? {
        var scalars = String.UnicodeScalarView()
        var count = 0
        var space = false
        var cut = false
        for scalar in text.unicodeScalars {
            // Line breaks, tabs and other spaces (C0's among them) separate words: one space.
            if scalar.properties.isWhitespace {
                space = count > 0
                continue
            }
            if scalar.properties.generalCategory == .control { continue }
            let needed = space ? 2 : 1
            guard count + needed <= maximumLength else {
                cut = true
                break
            }
            if space { scalars.append(" ") }
            scalars.append(scalar)
            count += needed
            space = false
        }
        guard !scalars.isEmpty else { return nil }
        guard cut else { return String(scalars) }
        return truncated(String(scalars), maximumLength: maximumLength)
    }

    /// `values` cleaned, without the empty ones and repeats, at most ``maximumCount``.
    public static func clean(_ values: [String]) -> [String] {
        var kept: [String] = []
        for value in values {
            guard let value = clean(value), !kept.contains(value) else { continue }
            kept.append(value)
            if kept.count == maximumCount { break }
        }
        return kept
    }

    /// `text` (exactly `maximumLength` scalars, more to come) ending with "…" in place of what
    /// does not fit. The last character may have lost scalars that follow it (a combining
    /// accent, the second half of a flag): it goes too, unless it is the only one (a cluster of
    /// thousands of combining marks), which is then cut between scalars.
    private static func truncated(_ text: String, maximumLength: Int) -> String {
        var kept = Substring(text)
        if kept.index(after: kept.startIndex) < kept.endIndex {
            kept.removeLast()
            while kept.last?.isWhitespace == true { kept.removeLast() }
        }
        var scalars = String.UnicodeScalarView(kept.unicodeScalars.prefix(maximumLength - 1))
        scalars.append("…")
        return String(scalars)
    }
}

extension TrackTags {
    /// Track and disc numbers a release can have; others (0, 2^32 − 1) are read as unknown.
    public static let numberRange = 1...9_999

    /// These tags fit to show and to send over D-Bus: every text cleaned by
    /// ``TagText/clean(_:maximumLength:)``, lists by ``TagText/clean(_:)``, numbers outside
    /// ``numberRange`` and a negative bitrate dropped. Lyrics keep their line breaks (whoever
    /// shows them parses and cleans them line by line) and are cut at ``TagText/maximumLyricsSize``.
    public func sanitized() -> TrackTags {
        var tags = self
        tags.title = title.flatMap { TagText.clean($0) }
        tags.artists = TagText.clean(artists)
        tags.album = album.flatMap { TagText.clean($0) }
        tags.albumArtists = TagText.clean(albumArtists)
        tags.genres = TagText.clean(genres)
        tags.comment = comment.flatMap { TagText.clean($0) }
        tags.date = date.flatMap { TagText.clean($0) }
        tags.trackNumber = trackNumber.flatMap { Self.numberRange.contains($0) ? $0 : nil }
        tags.discNumber = discNumber.flatMap { Self.numberRange.contains($0) ? $0 : nil }
        tags.bitrate = bitrate.flatMap { $0 > 0 ? $0 : nil }
        tags.lyrics = lyrics.flatMap { text in
            guard !text.allSatisfy(\.isWhitespace) else { return nil }
            guard text.utf8.count > TagText.maximumLyricsSize else { return text }
            return String(decoding: text.utf8.prefix(TagText.maximumLyricsSize), as: UTF8.self)
        }
        return tags
    }
}
