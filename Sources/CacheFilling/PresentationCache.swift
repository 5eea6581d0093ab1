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

    /// What a playlist read lays out: a media playlist's segments, or a master playlist's
    /// media playlists (its variants' and renditions').
    private enum Layout {
        case media([Span])
        case master([String])
    }

    /// The layouts of the playlists read most recently, by playlist URL, newest last.
    private let layouts = Mutex<[(url: String, layout: Layout)]>([])

    /// How many presentations are remembered (a queue's worth).
    public static let kept = 32

    /// Remembers nothing yet.
    public init() {}

    /// Remembers the segments of the on-demand media playlist `playlist`, read at `url`, or the
    /// media playlists of a master playlist; a live playlist is not remembered.
    public func learn(_ playlist: HLSPlaylist, at url: URL) {
        let layout: Layout
        switch playlist {
        case .media(let media):
            guard !media.isLive else { return }
            layout = .media(
                media.segments.filter { !$0.isGap }.map {
                    Span(
                        url: $0.uri, range: $0.byteRange.map { $0.offset..<$0.end },
                        milliseconds: Int64($0.duration / .milliseconds(1)))
                })
        case .master(let master):
            layout = .master(
                (master.variants.map(\.uri) + master.renditions.compactMap(\.uri)).map(\.absoluteString))
        }
        layouts.withLock { layouts in
            layouts.removeAll { $0.url == url.absoluteString }
            layouts.append((url.absoluteString, layout))
            if layouts.count > Self.kept { layouts.removeFirst(layouts.count - Self.kept) }
        }
    }

    /// The presentation at `url` as milliseconds: its length and the ranges whose segments
    /// `cache` holds whole (of a master playlist: those of any of its media playlists read,
    /// which all play the same time). Nil for a presentation not learnt.
    public func timeRanges(of url: URL, in cache: RangeCache, namespace: String) -> (
        ranges: [Range<Int64>], length: Int64
    )? {
        let layout = layouts.withLock { layouts -> [[Span]]? in
            switch layouts.last(where: { $0.url == url.absoluteString })?.layout {
            case .media(let spans): return [spans]
            case .master(let media):
                let read = media.compactMap { address -> [Span]? in
                    guard case .media(let spans) = layouts.last(where: { $0.url == address })?.layout else {
                        return nil
                    }
                    return spans
                }
                return read.isEmpty ? nil : read
            case nil: return nil
            }
        }
        guard let layout else { return nil }
        let each = layout.map { Self.timeRanges(of: $0, in: cache, namespace: namespace) }
        var merged: [Range<Int64>] = []
        for range in each.flatMap(\.ranges).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, range.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return (merged, each.map(\.length).max() ?? 0)
    }

    /// One media playlist's segments as milliseconds: the ranges `cache` holds whole, and the length.
    private static func timeRanges(of spans: [Span], in cache: RangeCache, namespace: String) -> (
        ranges: [Range<Int64>], length: Int64
    ) {
        var elapsed: Int64 = 0
        var ranges: [Range<Int64>] = []
        for span in spans {
            let end = elapsed + span.milliseconds
            if holds(span, in: cache, namespace: namespace) {
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
