/// Whether two versions of an HTTP resource, each named by its ETag and Last-Modified as the
/// origin sent them, are the same bytes (RFC 9110 §8.8.3): two strong tags decide alone;
/// otherwise the tags, weakness included, and the dates must be equal on both sides, so a
/// validator on one side only is a difference. The one statement of the rule, which
/// ``ResourceVersion`` follows.
public func sameHTTPVersion(
    etag: String?, lastModified: String?, otherETag: String?, otherLastModified: String?
) -> Bool {
    func isStrong(_ tag: String?) -> Bool { tag.map { !$0.hasPrefix("W/") } ?? false }
    if isStrong(etag), isStrong(otherETag) { return etag == otherETag }
    return etag == otherETag && lastModified == otherLastModified
}

/// The version of an HTTP resource: what its origin sent to name it (`ETag`, `Last-Modified`,
/// verbatim) and its length when known. The one type for it: a cache entry is bound to the
/// version of the bytes it holds, a request carries it back as a condition (`If-Range`,
/// `If-None-Match`), and a response is judged by it.
///
/// The rules for weak ETags:
/// - A weak tag (`W/"x"`) never guards a byte range: it is never sent as `If-Range`
///   (RFC 9110 §13.1.5); the date is sent instead, or nothing.
/// - Two strong tags decide alone: equal means the same bytes, whatever the dates say.
/// - Otherwise the tags are compared as sent, weakness included, and the dates too: a weak tag
///   matches only the same weak tag, never the strong tag it was made from (nginx's gzip turns
///   `"x"` into `W/"x"` for other bytes). A validator on one side only is a difference:
///   nothing shows the version is the same.
public struct ResourceVersion: Sendable, Hashable, CustomStringConvertible {
    /// The ETag, quotes and any `W/` prefix included.
    public var etag: String?
    /// The Last-Modified date, as sent.
    public var lastModified: String?
    /// The resource's full length, when known.
    public var length: Int64?

    /// Creates a version; every part is optional.
    public init(etag: String? = nil, lastModified: String? = nil, length: Int64? = nil) {
        self.etag = etag
        self.lastModified = lastModified
        self.length = length
    }

    /// The version the origin named with `etag` and `lastModified`; nil when it sent neither
    /// (nothing can tell one version of such a resource from another).
    public static func named(etag: String?, lastModified: String?, length: Int64? = nil) -> ResourceVersion? {
        ResourceVersion(etag: etag, lastModified: lastModified, length: length).named
    }

    /// Self when the origin named it (an ETag or a date), else nil.
    public var named: ResourceVersion? { etag != nil || lastModified != nil ? self : nil }

    /// Whether the ETag is strong (a weak `W/` tag cannot guard a byte range).
    public var hasStrongETag: Bool { etag.map { !$0.hasPrefix("W/") } ?? false }

    /// Whether the ETag is weak (`W/"x"`).
    public var hasWeakETag: Bool { etag?.hasPrefix("W/") ?? false }

    /// The `If-Range` value: the strong ETag, else the date; nil when there is neither
    /// (a weak ETag alone cannot be used, RFC 9110 §13.1.5).
    ///
    /// The date is sent even though RFC 9110 §8.8.2.2 counts it strong only when it is 60 s older
    /// than the response's `Date`: the origin compares it exactly, just as the response policy
    /// compares the answer's Last-Modified with the held one, so leaving it out would guard
    /// nothing better and would cost the 200 that names a change in one round trip.
    public var ifRangeValue: String? { hasStrongETag ? etag : lastModified }

    /// Whether bytes of `other` may be joined with bytes of this version: lengths both sides
    /// know must agree, then the tags and dates compare by the rules above. When neither side
    /// names a version, only equal (or unknown) lengths are taken as the same.
    public func isSameVersion(as other: ResourceVersion) -> Bool {
        if let length, let otherLength = other.length, length != otherLength { return false }
        return sameHTTPVersion(
            etag: etag, lastModified: lastModified, otherETag: other.etag, otherLastModified: other.lastModified)
    }

    /// `etag`, else `lastModified`, for logs.
    public var description: String { etag ?? lastModified ?? "-" }
}
