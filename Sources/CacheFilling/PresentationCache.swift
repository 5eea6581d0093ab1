import FoundationEssentials
import HLS
import RangeCache
import Synchronization

/// Which parts of an on-demand HLS presentation the cache holds, as ranges of its time: what a
/// buffer bar shows for a track whose bytes are many resources (the playlist's own entry says
/// only that the playlist is here). The segments of each playlist are learnt where it is read
/// (``SourceChooser``), so the answer needs no disk: it is asked for on the D-Bus thread.
public final class PresentationCache: Sendable {
    /// One segment: where its bytes are and how long it plays, in milliseconds.
    private struct Span {
        var url: URL
        var range: Range<Int64>?
        var milliseconds: Int64
    }

    /// The segments of the presentations read most recently, by playlist URL, newest last.
    private let layouts = Mutex<[(url: String, spans: [Span])]>([])

    /// How many presentations are remembered (a queue's worth).
    public static let kept = 32

    /// Remembers nothing yet.
    public init() {}

    /// Remembers the segments of the on-demand media playlist `playlist`, read at `url`; a live
    /// or master playlist is not remembered.
    public func learn(_ playlist: HLSPlaylist, at url: URL) {
        guard case .media(let media) = playlist, !media.isLive else { return }
        let spans = media.segments.filter { !$0.isGap }.map {
            Span(
                url: $0.uri, range: $0.byteRange.map { $0.offset..<$0.end },
                milliseconds: Int64($0.duration / .milliseconds(1)))
        }
        layouts.withLock { layouts in
            layouts.removeAll { $0.url == url.absoluteString }
            layouts.append((url.absoluteString, spans))
            if layouts.count > Self.kept { layouts.removeFirst(layouts.count - Self.kept) }
        }
    }

    /// The presentation at `url` as milliseconds: its length and the ranges whose segments
    /// `cache` holds whole. Nil for a presentation not learnt.
    public func timeRanges(of url: URL, in cache: RangeCache, namespace: String) -> (
        ranges: [Range<Int64>], length: Int64
    )? {
        guard let spans = layouts.withLock({ $0.last { $0.url == url.absoluteString }?.spans }) else { return nil }
        var elapsed: Int64 = 0
        var ranges: [Range<Int64>] = []
        for span in spans {
            let end = elapsed + span.milliseconds
            if Self.holds(span, in: cache, namespace: namespace) {
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

    /// Whether every byte of `span` is stored (the cache's index, in memory).
    private static func holds(_ span: Span, in cache: RangeCache, namespace: String) -> Bool {
        guard let info = cache.info(for: cache.key(for: span.url), namespace: namespace) else { return false }
        if let range = span.range { return info.durableRanges.contains(range) }
        return info.isComplete
    }
}
