import FoundationEssentials
import HLS

/// One piece of the byte stream an HLS presentation plays as: a media segment, or the
/// initialization section (`EXT-X-MAP`) that goes before the segments using it.
public struct StreamPart: Sendable, Equatable {
    /// Where its bytes are.
    public var url: URL
    /// The bytes of `url` it is (`EXT-X-BYTERANGE`), or nil for the whole resource.
    public var range: Range<Int64>?
    /// The time it plays for (zero for an initialization section).
    public var duration: Duration

    /// Creates a part.
    public init(url: URL, range: Range<Int64>? = nil, duration: Duration = .zero) {
        self.url = url
        self.range = range
        self.duration = duration
    }
}

/// Why a media playlist cannot be played as one stream here.
public enum SegmentStreamRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// No `EXT-X-ENDLIST`: segments keep coming, and the playlist must be reloaded (played by
    /// ``HLSByteSource`` as a live stream, not as parts laid out once).
    case live
    /// A segment is encrypted with a method this player does not decrypt.
    case encrypted(String)
    /// The playlist lists no segment.
    case empty

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .live: "a live HLS playlist (no EXT-X-ENDLIST)"
        case .encrypted(let method): "encrypted HLS segments (\(method)), which Spool does not decrypt yet"
        case .empty: "the HLS playlist lists no segment"
        }
    }
}

/// The parts a media playlist plays as, in order: each segment, preceded by its initialization
/// section wherever that changes (the first segment, a new `EXT-X-MAP`); gap segments are left
/// out. Pure: segments in, parts out.
public enum SegmentStream {
    /// The parts of an on-demand `playlist`, or why it cannot be played as one stream.
    public static func parts(of playlist: MediaPlaylist) -> Result<[StreamPart], SegmentStreamRefusal> {
        if playlist.isLive { return .failure(.live) }
        return parts(of: playlist.segments, after: nil).flatMap {
            $0.parts.isEmpty ? .failure(.empty) : .success($0.parts)
        }
    }

    /// The parts of `segments`, which follow parts whose last initialization section was
    /// `lastMap` (nil at the start: the first segment's section comes first), and the last
    /// initialization section after them.
    public static func parts(
        of segments: some Sequence<MediaSegment>, after lastMap: MediaInitializationSection?
    ) -> Result<(parts: [StreamPart], lastMap: MediaInitializationSection?), SegmentStreamRefusal> {
        var parts: [StreamPart] = []
        var lastMap = lastMap
        for segment in segments where !segment.isGap {
            if let key = segment.key {
                let method: String
                switch key.method {
                case .aes128: method = "AES-128"
                case .sampleAES: method = "SAMPLE-AES"
                case .other(let name): method = name
                }
                return .failure(.encrypted(method))
            }
            if let map = segment.map, map != lastMap {
                parts.append(StreamPart(url: map.uri, range: map.byteRange.map(range)))
                lastMap = map
            }
            parts.append(
                StreamPart(url: segment.uri, range: segment.byteRange.map(range), duration: segment.duration))
        }
        return .success((parts, lastMap))
    }

    private static func range(_ byteRange: ByteRange) -> Range<Int64> {
        byteRange.offset..<byteRange.end
    }
}
