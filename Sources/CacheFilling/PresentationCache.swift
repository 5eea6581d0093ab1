import FoundationEssentials
import HLS
import RangeCache

/// Which parts of an on-demand HLS presentation the cache holds, as ranges of its time: what a
/// buffer bar shows for a track whose bytes are many resources (the playlist's own entry says
/// only that the playlist is here).
public enum PresentationCache {
    /// The presentation at `url` as milliseconds: its length and the ranges whose segments are
    /// stored whole. Nil when its playlist is not stored whole, is live or is a master playlist.
    public static func timeRanges(of url: URL, in cache: RangeCache, namespace: String) -> (
        ranges: [Range<Int64>], length: Int64
    )? {
        guard let info = cache.info(for: cache.key(for: url), namespace: namespace), info.isComplete,
            let size = info.metadata.validator.length, size > 0, size <= 4 << 20,
            let entry = try? cache.entry(for: url, namespace: namespace)
        else { return nil }
        defer { entry.closeInBackground() }
        guard let data = entry.read(at: 0, maxLength: Int(size)),
            case .success(.media(let playlist)) = HLSParser.parse(data: data, url: url), !playlist.isLive
        else { return nil }
        var elapsed: Int64 = 0
        var ranges: [Range<Int64>] = []
        for segment in playlist.segments where !segment.isGap {
            let end = elapsed + Int64(segment.duration / .milliseconds(1))
            if holds(segment, in: cache, namespace: namespace) {
                if let last = ranges.last, last.upperBound == elapsed {
                    ranges[ranges.count - 1] = last.lowerBound..<end
                } else {
                    ranges.append(elapsed..<end)
                }
            }
            elapsed = end
        }
        return (ranges, elapsed)
    }

    /// Whether every byte of `segment` is stored.
    private static func holds(_ segment: MediaSegment, in cache: RangeCache, namespace: String) -> Bool {
        guard let info = cache.info(for: cache.key(for: segment.uri), namespace: namespace) else { return false }
        if let range = segment.byteRange { return info.durableRanges.contains(range.offset..<range.end) }
        return info.isComplete
    }
}
