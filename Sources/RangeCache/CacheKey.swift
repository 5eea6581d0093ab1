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
