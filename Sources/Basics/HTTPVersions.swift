/// Whether two versions of an HTTP resource, each named by its ETag and Last-Modified as the
/// origin sent them, are the same bytes (RFC 9110 §8.8.3): two strong tags decide alone;
/// otherwise the tags, weakness included, and the dates must be equal on both sides, so a
/// validator on one side only is a difference. The one statement of the rule that the
/// fetcher's `HTTPValidator` and the cache's `CacheValidator` both follow.
public func sameHTTPVersion(
    etag: String?, lastModified: String?, otherETag: String?, otherLastModified: String?
) -> Bool {
    func isStrong(_ tag: String?) -> Bool { tag.map { !$0.hasPrefix("W/") } ?? false }
    if isStrong(etag), isStrong(otherETag) { return etag == otherETag }
    return etag == otherETag && lastModified == otherLastModified
}
