import FoundationEssentials

/// One media segment of a media playlist, with every tag that applies to it already resolved:
/// the key and map in effect, an absolute byte range, its sequence numbers.
public struct MediaSegment: Sendable, Equatable {
    /// The segment's URL, resolved against the playlist's URL.
    public var uri: URL
    /// Its duration, from `EXTINF` (read exactly from the decimal text, without float rounding).
    public var duration: Duration
    /// The title after the comma of `EXTINF`, when not empty.
    public var title: String?
    /// The sub-range of ``uri`` the segment is (`EXT-X-BYTERANGE`), with its offset always
    /// resolved; nil when the segment is the whole resource.
    public var byteRange: ByteRange?
    /// Whether `EXT-X-DISCONTINUITY` precedes it: its encoding, timestamps or format may differ
    /// from the previous segment's.
    public var discontinuity: Bool
    /// The key to decrypt it with: the `EXT-X-KEY` of KEYFORMAT "identity" in effect, else the
    /// first key in effect of another format (which this client cannot use: check
    /// ``EncryptionKey/keyFormat``). Nil when the segment is not encrypted (no key, or
    /// `METHOD=NONE`).
    public var key: EncryptionKey?
    /// Every `EXT-X-KEY` in effect, one per KEYFORMAT, in the order they appeared. RFC 8216
    /// §6.3.6: keys of an unsupported KEYFORMAT are ignored, but a segment with only such keys
    /// cannot be played.
    public var keys: [EncryptionKey]
    /// The media initialization section (`EXT-X-MAP`) in effect, needed before the segment's
    /// bytes can be decoded (fragmented MP4).
    public var map: MediaInitializationSection?
    /// The date of its first sample, when `EXT-X-PROGRAM-DATE-TIME` precedes it directly; see
    /// ``MediaPlaylist/programDateTime(ofSegmentAt:)`` for the date of any segment.
    public var programDateTime: Date?
    /// Its media sequence number: the playlist's `EXT-X-MEDIA-SEQUENCE` plus its index.
    public var mediaSequenceNumber: Int
    /// Its discontinuity sequence number: the playlist's `EXT-X-DISCONTINUITY-SEQUENCE` plus the
    /// discontinuities up to and including it.
    public var discontinuitySequenceNumber: Int
    /// Whether `EXT-X-GAP` marks it as missing: it must not be loaded.
    public var isGap: Bool

    /// Creates a segment; every tag-derived value defaults to "absent", and `keys` to `key`
    /// alone.
    public init(
        uri: URL, duration: Duration, title: String? = nil, byteRange: ByteRange? = nil, discontinuity: Bool = false,
        key: EncryptionKey? = nil, keys: [EncryptionKey]? = nil, map: MediaInitializationSection? = nil,
        programDateTime: Date? = nil, mediaSequenceNumber: Int, discontinuitySequenceNumber: Int = 0,
        isGap: Bool = false
    ) {
        self.uri = uri
        self.duration = duration
        self.title = title
        self.byteRange = byteRange
        self.discontinuity = discontinuity
        self.key = key
        self.keys = keys ?? (key.map { [$0] } ?? [])
        self.map = map
        self.programDateTime = programDateTime
        self.mediaSequenceNumber = mediaSequenceNumber
        self.discontinuitySequenceNumber = discontinuitySequenceNumber
        self.isGap = isGap
    }

    /// The 16-byte initialization vector for AES-128 decryption of this segment (RFC 8216
    /// §5.2): the key's `IV` when it has one, else the media sequence number as a 128-bit
    /// big-endian integer.
    public var initializationVector: [UInt8] {
        if let iv = key?.iv { return iv }
        return Self.bigEndian128(mediaSequenceNumber)
    }

    /// `value` as a 128-bit big-endian unsigned integer (sequence numbers are never negative).
    static func bigEndian128(_ value: Int) -> [UInt8] {
        let bits = UInt64(clamping: value)
        return [UInt8](repeating: 0, count: 8) + (0..<8).reversed().map { UInt8(truncatingIfNeeded: bits >> ($0 * 8)) }
    }
}

/// A sub-range of a resource's bytes (`EXT-X-BYTERANGE`, or a map's `BYTERANGE`).
public struct ByteRange: Sendable, Equatable, Hashable {
    /// The first byte, counted from the resource's start.
    public var offset: Int64
    /// How many bytes.
    public var length: Int64

    /// Creates a range of `length` bytes from `offset`.
    public init(offset: Int64, length: Int64) {
        self.offset = offset
        self.length = length
    }

    /// The byte after the last one (`offset + length`).
    public var end: Int64 { offset + length }

    /// The value of an HTTP `Range` header for these bytes, e.g. `bytes=100-199`; nil for an
    /// empty range, which HTTP cannot express.
    public var httpRange: String? {
        guard length > 0 else { return nil }
        return "bytes=\(offset)-\(end - 1)"
    }
}

/// How a segment is encrypted (`EXT-X-KEY` `METHOD`). `METHOD=NONE` is not a case: it ends
/// encryption, and the segments after it have no key.
public enum EncryptionMethod: Sendable, Equatable, Hashable {
    /// The whole segment is AES-128-CBC encrypted with PKCS7 padding (RFC 8216 §5.2).
    case aes128
    /// Media samples inside the segment are encrypted (SAMPLE-AES); the container is not.
    case sampleAES
    /// A method RFC 8216 does not define (`SAMPLE-AES-CTR` of some DRM systems): the segment
    /// cannot be decrypted by this client. RFC 8216 §6.3.1 would have the whole tag ignored, but
    /// then the segments would pass for clear (or for the previous key's): the key is kept so the
    /// fetcher can refuse them.
    case other(String)

    init(attributeValue value: String) {
        switch value {
        case "AES-128": self = .aes128
        case "SAMPLE-AES": self = .sampleAES
        default: self = .other(value)
        }
    }
}

/// An `EXT-X-KEY`: how to decrypt the segments it applies to.
public struct EncryptionKey: Sendable, Equatable, Hashable {
    /// The encryption method.
    public var method: EncryptionMethod
    /// Where the key is, resolved against the playlist's URL.
    public var uri: URL
    /// The initialization vector, exactly 16 bytes, when the tag gives one (a shorter hex value
    /// is padded with leading zeros, as the 128-bit number it is).
    public var iv: [UInt8]?
    /// How the key is represented (`KEYFORMAT`); "identity" (the default) is the only format this
    /// client can use: the URI serves the 16 key bytes themselves.
    public var keyFormat: String
    /// The `KEYFORMATVERSIONS` the key is compatible with; `[1]` when the tag lists none.
    public var keyFormatVersions: [Int]

    /// The default KEYFORMAT: the key file holds the raw 16-byte key.
    public static let identityFormat = "identity"

    /// Creates a key; the format defaults to identity version 1.
    public init(
        method: EncryptionMethod, uri: URL, iv: [UInt8]? = nil, keyFormat: String = identityFormat,
        keyFormatVersions: [Int] = [1]
    ) {
        self.method = method
        self.uri = uri
        self.iv = iv
        self.keyFormat = keyFormat
        self.keyFormatVersions = keyFormatVersions
    }

    /// Whether this client can obtain the key: KEYFORMAT identity.
    public var isIdentityFormat: Bool { keyFormat == Self.identityFormat }
}

/// An `EXT-X-MAP`: the media initialization section (fMP4 `moov`, for instance) the segments
/// after it need before their own bytes.
public struct MediaInitializationSection: Sendable, Equatable, Hashable {
    /// Its URL, resolved against the playlist's URL.
    public var uri: URL
    /// Its sub-range of ``uri``; nil for the whole resource. A `BYTERANGE` without `@offset`
    /// starts at byte 0.
    public var byteRange: ByteRange?
    /// The identity-format (else first) key in effect where the tag appeared: RFC 8216 §4.3.2.4
    /// applies a key to the maps declared after it as well as to segments.
    public var key: EncryptionKey?

    /// Creates a map.
    public init(uri: URL, byteRange: ByteRange? = nil, key: EncryptionKey? = nil) {
        self.uri = uri
        self.byteRange = byteRange
        self.key = key
    }
}
