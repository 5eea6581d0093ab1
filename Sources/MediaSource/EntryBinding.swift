import Basics
import Fetcher
import FoundationEssentials
import RangeCache

// How a cache entry follows the origin's answers. Every writer of an entry (a playing
// ``HTTPByteSource``, a preload job) uses these, so an entry is bound to a version, asked
// for with If-Range and emptied on a change by one set of rules.

extension CacheEntry {
    /// The condition for a request that adds bytes to this entry: If-Range on `held` (the
    /// version its bytes belong to) once it holds any, so a changed file answers with a whole
    /// new body instead of being spliced; none for an empty entry (nothing to splice with).
    public func continuationCondition(held: ResourceVersion?) -> RequestCondition? {
        cachedRanges.isEmpty ? nil : held.map { .ifRange($0) }
    }

    /// Binds the entry to the version `head` describes (fetched from `url` by `fetcher`), with
    /// the freshness the response gives it. Another version than the one held empties it
    /// first (the cache never mixes versions). Returns whether it was emptied; nil when the
    /// index refused the change. A response the cache may not keep on disk (``storesOnDisk``
    /// false) must not be bound.
    @discardableResult
    public func bind(to head: ResponseHead, from url: URL, fetcher: Fetcher) -> Bool? {
        var freshness = Freshness.unknown
        if case .store(let given) = head.cachingDecision { freshness = given }
        let metadata = EntryMetadata(
            url: url, validator: head.version, contentType: head.contentType, acceptsRanges: head.honoursRange,
            freshness: freshness,
            selectingHeaders: head.caching.vary.flatMap {
                VaryHeader.selectingHeaders($0, requestHeader: fetcher.requestHeader)
            })
        return try? setMetadata(metadata)
    }

    /// A 304 confirmed the held version: its headers renew how long it stays fresh (RFC 9111
    /// §4.3.4). Nil when the index refused the change.
    @discardableResult
    public func refreshFreshness(from head: ResponseHead) -> Bool? {
        var metadata = self.metadata
        let refreshed = HTTPFreshness.refreshed(
            metadata.freshness, by: head.caching, requestTime: head.requestedAt, responseTime: head.receivedAt)
        guard refreshed != metadata.freshness else { return false }
        metadata.freshness = refreshed
        return try? setMetadata(metadata)
    }

    /// Whether the stored response may answer a request of `fetcher`: a response that varied
    /// by request headers serves only requests that send the same values (RFC 9111 §4.1).
    public func servesRequests(of fetcher: Fetcher) -> Bool {
        guard let stored = metadata.selectingHeaders else { return true }
        let names = stored.split(separator: "\n").compactMap { $0.split(separator: ":", maxSplits: 1).first }
        return VaryHeader.selectingHeaders(names.joined(separator: ","), requestHeader: fetcher.requestHeader) == stored
    }

    /// The resource changed on the server: the entry forgets its version and its bytes.
    public func forgetVersion() {
        _ = try? setMetadata(EntryMetadata())
    }

    /// Whether `head`, an answer with a body, names the version this entry holds (an origin
    /// that ignored a revalidation's condition): validators and length compared.
    public func holdsVersion(of head: ResponseHead) -> Bool {
        head.version.isSameVersion(as: metadata.validator)
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

extension ResponseHead {
    /// Whether the cache may keep this response's bytes on disk (not `no-store`, not `Vary: *`,
    /// not a live stream: a radio station's bytes are heard once and never replayed).
    public var storesOnDisk: Bool {
        if isLive { return false }
        if case .memoryOnly = cachingDecision { return false }
        return true
    }
}
