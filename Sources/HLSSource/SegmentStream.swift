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
    /// How its bytes are encrypted (AES-128), or nil when they are clear.
    public var encryption: PartEncryption?
    /// Whether it is an initialization section, which a stream restarted at a later segment
    /// must begin with again.
    public var isInitialization: Bool
    /// A segment's media sequence number (nil for an initialization section).
    public var sequence: Int?
    /// When a live segment's first sample went on air (`EXT-X-PROGRAM-DATE-TIME`), if dated.
    public var programDate: Date?

    /// Creates a part.
    public init(
        url: URL, range: Range<Int64>? = nil, duration: Duration = .zero, encryption: PartEncryption? = nil,
        isInitialization: Bool = false, sequence: Int? = nil
    ) {
        self.url = url
        self.sequence = sequence
        self.range = range
        self.duration = duration
        self.encryption = encryption
        self.isInitialization = isInitialization
    }
}

/// An AES-128 part's key and initialization vector (RFC 8216 §5.2).
public struct PartEncryption: Sendable, Equatable {
    /// Where the 16-byte key is.
    public var keyURL: URL
    /// The 16-byte IV: the key tag's, else the segment's media sequence number.
    public var iv: [UInt8]

    /// Creates the facts.
    public init(keyURL: URL, iv: [UInt8]) {
        self.keyURL = keyURL
        self.iv = iv
    }
}

/// Why a media playlist cannot be played as one stream here.
public enum SegmentStreamRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// No `EXT-X-ENDLIST`: segments keep coming, and the playlist must be reloaded (played by
    /// ``HLSByteSource`` as a live stream, not as parts laid out once).
    case live
    /// A segment is encrypted with a method this player does not decrypt (SAMPLE-AES, DRM).
    case encrypted(String)
    /// The playlist lists no segment.
    case empty

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .live: "a live HLS playlist (no EXT-X-ENDLIST)"
        case .encrypted(let method): "HLS segments encrypted with \(method), which Spool cannot decrypt"
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
            var encryption: PartEncryption?
            if let key = segment.key {
                guard key.method == .aes128 else { return .failure(.encrypted(name(of: key.method))) }
                encryption = PartEncryption(keyURL: key.uri, iv: segment.initializationVector)
            }
            if let map = segment.map, map != lastMap {
                // An encrypted initialization section has no sequence number for an IV to
                // come from: only one whose key gives its IV can be read.
                var mapEncryption: PartEncryption?
                if let key = map.key {
                    guard key.method == .aes128, let iv = key.iv else {
                        return .failure(.encrypted(name(of: key.method) + " initialization section"))
                    }
                    mapEncryption = PartEncryption(keyURL: key.uri, iv: iv)
                }
                parts.append(
                    StreamPart(
                        url: map.uri, range: map.byteRange.map(range), encryption: mapEncryption,
                        isInitialization: true))
                lastMap = map
            }
            parts.append(
                StreamPart(
                    url: segment.uri, range: segment.byteRange.map(range), duration: segment.duration,
                    encryption: encryption, sequence: segment.mediaSequenceNumber))
        }
        return .success((parts, lastMap))
    }

    /// Where a stream of `parts` restarted at `target` begins: the index of the segment part
    /// playing at `target` (the last one past the end), the time it starts at, and the index of
    /// the initialization section it needs first, if any. Nil when `parts` has no segment.
    public static func restartPoint(in parts: [StreamPart], at target: Duration) -> (
        segment: Int, start: Duration, initialization: Int?
    )? {
        var elapsed = Duration.zero
        var found: (Int, Duration)?
        for (index, part) in parts.enumerated() where !part.isInitialization {
            found = (index, elapsed)
            if elapsed + part.duration > target { break }
            elapsed += part.duration
        }
        guard let (segment, start) = found else { return nil }
        let initialization = parts[..<segment].lastIndex { $0.isInitialization }
        return (segment, start, initialization)
    }

    private static func name(of method: EncryptionMethod) -> String {
        switch method {
        case .aes128: "AES-128"
        case .sampleAES: "SAMPLE-AES"
        case .other(let name): name
        }
    }

    private static func range(_ byteRange: ByteRange) -> Range<Int64> {
        byteRange.offset..<byteRange.end
    }
}
