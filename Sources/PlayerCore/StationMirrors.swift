import FoundationEssentials

/// Recognises a PLS or M3U station file whose entries are one station's mirrors, so the station
/// is queued once and its other servers are tried when one fails, instead of being queued as
/// tracks that Next would step through.
///
/// Station files say nothing of this, so it is read from how directories write them:
/// - SomaFM: `Title1=SomaFM: Groove Salad (#1): …`, `Title2=… (#2): …` on `ice1`, `ice2`, …;
/// - SHOUTcast: `Title1=(#1 - 12/500) Station`, `Title2=(#2 - 40/500) Station`;
/// - untitled lists: the same stream path on several hosts or ports.
///
/// Entries are mirrors when there are at least two, every one is http(s), and either all carry
/// a title that reads the same once the mirror markers (`(#1)`, `(#2 - 12/500)`) are taken out,
/// or none carries a title and all share one path. A list of podcast episodes or songs has titles
/// of their own or paths of their own, so it stays a list of tracks.
enum StationMirrors {
    /// `items` as one item with the others as its mirrors when they are one station's mirrors;
    /// else `items` unchanged.
    static func merged(_ items: [TrackItem]) -> [TrackItem] {
        guard items.count >= 2, items.allSatisfy({ isStream($0.url) }), items.allSatisfy({ $0.mirrors.isEmpty })
        else { return items }
        let titles = items.map(\.title)
        let alike: Bool
        if titles.allSatisfy({ $0 == nil }) {
            alike = Set(items.map { streamPath($0.url) }).count == 1
        } else {
            let stems = titles.map { $0.map(withoutMirrorMarkers) }
            alike = stems.allSatisfy { $0 != nil && $0 == stems[0] } && stems[0]?.isEmpty == false
        }
        guard alike else { return items }
        let title = items[0].title.map(withoutMirrorMarkers)
        return [TrackItem(url: items[0].url, title: title, mirrors: items.dropFirst().map(\.url))]
    }

    private static func isStream(_ url: URL) -> Bool {
        ["http", "https"].contains(url.scheme?.lowercased() ?? "")
    }

    /// The path and query, which mirrors on other hosts or ports share.
    private static func streamPath(_ url: URL) -> String {
        let path = url.path.isEmpty ? "/" : url.path
        return url.query.map { path + "?" + $0 } ?? path
    }

    /// `title` without parenthesised mirror markers (`(#1)`, `(#2 - 12/500)`) and with its
    /// spaces evened out: "SomaFM: Groove Salad (#1): Ambient" reads "SomaFM: Groove Salad: Ambient".
    static func withoutMirrorMarkers(_ title: String) -> String {
        var result = ""
        var rest = Substring(title)
        while let open = rest.firstRange(of: "(#") {
            guard let close = rest[open.upperBound...].firstIndex(of: ")") else { break }
            let marker = rest[open.upperBound..<close]
            guard marker.first?.isNumber == true else {
                result += rest[..<open.upperBound]
                rest = rest[open.upperBound...]
                continue
            }
            result += rest[..<open.lowerBound]
            rest = rest[rest.index(after: close)...]
        }
        result += rest
        let words = result.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        // "Groove Salad : Ambient" where a marker stood before a colon.
        return words.replacing(" :", with: ":")
    }
}
