import Basics
import FoundationEssentials

/// The identity of a cached resource within a namespace. By default it is the
/// resource's URL, normalised so that spellings of one URL agree and stripped of
/// the volatile query parameters of signed URLs, so one file behind rotating
/// signed URLs is one entry. A caller that knows better may supply its own key.
public struct CacheKey: Sendable, Hashable, CustomStringConvertible {
    /// The key text stored in the index. Never holds an ignored parameter.
    public let value: String

    /// A caller-supplied stable key (for example a track id). Used as given.
    public init(stable value: String) {
        self.value = value
    }

    /// The key of `url`: scheme and host lower-cased, the default port, the
    /// fragment and any user name or password dropped, query parameters sorted
    /// (by name, then value), and every parameter matching `ignoring` removed.
    /// - Parameter ignoring: parameter names compared case-insensitively; a
    ///   trailing `*` matches any name with that prefix (`X-Amz-*`).
    public init(url: URL, ignoring: [String] = CacheKey.defaultIgnoredParameters) {
        value = CacheKey.normalise(url, ignoring: ignoring)
    }

    /// The key text.
    public var description: String { value }

    /// Query parameters that sign or expire a URL rather than name a resource:
    /// AWS S3 / CloudFront, Google Cloud Storage, Azure SAS, Akamai and common
    /// CDN tokens.
    public static let defaultIgnoredParameters: [String] = [
        "X-Amz-*", "X-Goog-*", "AWSAccessKeyId", "Signature", "Expires", "Key-Pair-Id", "Policy",
        "token", "sig", "se", "st", "sp", "sv", "sr", "skoid", "sktid", "hdnts", "hdnea",
        "__gda__", "auth", "access_token",
    ]

    /// The URL text a key is made of; also what the index records as the URL an
    /// entry was fetched from, so it never holds a token.
    static func normalise(_ url: URL, ignoring: [String]) -> String {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url.absoluteString
        }
        parts.scheme = parts.scheme?.lowercased()
        if let host = parts.host { parts.host = host.lowercased() }
        parts.user = nil
        parts.password = nil
        parts.fragment = nil
        switch (parts.scheme, parts.port) {
        case ("http", 80), ("https", 443): parts.port = nil
        default: break
        }
        if parts.percentEncodedPath.isEmpty, parts.host != nil { parts.percentEncodedPath = "/" }
        if let items = parts.percentEncodedQueryItems {
            let kept = items.filter { !CacheKey.matches($0.name, ignoring) }
                .sorted { ($0.name, $0.value ?? "") < ($1.name, $1.value ?? "") }
            parts.percentEncodedQueryItems = kept.isEmpty ? nil : kept
        }
        return parts.string ?? url.absoluteString
    }

    /// Whether `name` matches one of `patterns` (case-insensitive, `*` suffix = prefix).
    static func matches(_ name: String, _ patterns: [String]) -> Bool {
        let lowered = name.lowercased()
        return patterns.contains { pattern in
            let pattern = pattern.lowercased()
            if pattern.hasSuffix("*") { return lowered.hasPrefix(pattern.dropLast()) }
            return lowered == pattern
        }
    }
}

/// The version of a remote resource a cache entry's bytes belong to: its entity
/// tag, its modification date and its length. A cache entry is bound to the
/// validator of the bytes it holds; see ``isSameVersion(as:)``. (What an origin
/// sent, for requests, is the fetcher's `HTTPValidator`; this module does no
/// networking and does not depend on it.)
public struct CacheValidator: Sendable, Hashable {
    /// The entity tag without its `W/` prefix, quotes kept (`"abc"`).
    public var etag: String?
    /// Whether the entity tag is weak (`W/"abc"`): it never decides a comparison alone.
    public var etagIsWeak: Bool
    /// The `Last-Modified` header as sent.
    public var lastModified: String?
    /// The full length of the resource, when known.
    public var length: Int64?

    /// Creates a validator from response headers; `etag` may carry a `W/` prefix.
    public init(etag: String? = nil, lastModified: String? = nil, length: Int64? = nil) {
        if let etag, etag.hasPrefix("W/") {
            self.etag = String(etag.dropFirst(2))
            etagIsWeak = true
        } else {
            self.etag = etag
            etagIsWeak = false
        }
        self.lastModified = lastModified
        self.length = length
    }

    /// The entity tag as sent in a header (`W/"abc"` for a weak one).
    public var etagHeader: String? { etag.map { etagIsWeak ? "W/" + $0 : $0 } }

    /// Whether bytes under `other` belong to the same version as bytes under
    /// this validator: lengths both sides know must agree, then the tags and
    /// dates compare by ``Basics/sameHTTPVersion(etag:lastModified:otherETag:otherLastModified:)``
    /// (two strong tags decide alone; else tag, weakness included, and date
    /// must be equal on both sides). When neither side has
    /// a tag or a date, only equal (or unknown) lengths are taken as the same
    /// version.
    public func isSameVersion(as other: CacheValidator) -> Bool {
        if let length, let otherLength = other.length, length != otherLength { return false }
        return sameHTTPVersion(
            etag: etagHeader, lastModified: lastModified, otherETag: other.etagHeader,
            otherLastModified: other.lastModified)
    }
}
