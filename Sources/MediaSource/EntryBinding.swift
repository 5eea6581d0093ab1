import Fetcher
import FoundationEssentials
import RangeCache

// How a cache entry follows the origin's answers. Every writer of an entry (a playing
// ``CachedByteSource``, a preload job) uses these, so an entry is bound to a version, asked
// for with If-Range and emptied on a change by one set of rules.

extension CacheValidator {
    /// The version this entry holds as the origin named it, for a request's condition; nil
    /// when the origin sent neither an ETag nor a date.
    public var httpValidator: HTTPValidator? { HTTPValidator(etag: etagHeader, lastModified: lastModified) }

    /// The version `head` names, with its length.
    public init(_ head: ResponseHead) {
        self.init(etag: head.etag, lastModified: head.lastModified, length: head.totalLength)
    }
}

extension CacheEntry {
    /// The condition for a request that adds bytes to this entry: If-Range on `held` (the
    /// version its bytes belong to) once it holds any, so a changed file answers with a whole
    /// new body instead of being spliced; none for an empty entry (nothing to splice with).
    public func continuationCondition(held: HTTPValidator?) -> RequestCondition? {
        cachedRanges.isEmpty ? nil : held.map { .ifRange($0) }
    }

    /// Binds the entry to the version `head` describes (fetched from `url`). Another version
    /// than the one held empties it first (the cache never mixes versions). Returns whether
    /// it was emptied; nil when the index refused the change.
    @discardableResult
    public func bind(to head: ResponseHead, from url: URL) -> Bool? {
        let metadata = EntryMetadata(
            url: url, validator: CacheValidator(head), contentType: head.contentType, acceptsRanges: head.honoursRange)
        return try? setMetadata(metadata)
    }

    /// The resource changed on the server: the entry forgets its version and its bytes.
    public func forgetVersion() {
        _ = try? setMetadata(EntryMetadata())
    }

    /// Whether `head`, an answer with a body, names the version this entry holds (an origin
    /// that ignored a revalidation's condition): validators and length compared.
    public func holdsVersion(of head: ResponseHead) -> Bool {
        CacheValidator(head).isSameVersion(as: metadata.validator)
    }
}

extension FetchError {
    /// Whether the failure says the resource is no longer the version whose bytes are held:
    /// those bytes are stale.
    public var meansResourceChanged: Bool {
        if case .resourceChanged = self { return true }
        return false
    }
}
