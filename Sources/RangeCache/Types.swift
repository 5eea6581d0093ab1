import Basics
import FoundationEssentials

/// What the cache records about a resource besides its bytes.
public struct EntryMetadata: Sendable, Hashable {
    /// The URL the bytes were fetched from, without ignored (token) parameters.
    public var url: URL? {
        get { urlText.flatMap(URL.init(string:)) }
        set { urlText = newValue?.absoluteString }
    }
    /// The URL as the index stores it; parsed only when asked for (opening stays cheap).
    var urlText: String?
    /// The version the bytes belong to; its `length` is the resource's total length when known.
    public var validator: ResourceVersion
    /// The MIME type the origin declared.
    public var contentType: String?
    /// Whether the origin honours `Range` requests; nil when not yet known.
    public var acceptsRanges: Bool?
    /// How long the stored response may be used without asking the origin (RFC 9111).
    public var freshness: Freshness
    /// For a response with `Vary`: the request headers it was selected by, one `name: value`
    /// line each (``VaryHeader/selectingHeaders(_:requestHeader:)``); it serves only requests
    /// that send the same. Nil when the response does not vary.
    public var selectingHeaders: String?
    /// The origin answered that the resource's sidecar (the lyrics file beside it) is missing,
    /// for this version: a new version starts without it, so the sidecar is asked for again.
    public var sidecarMissing: Bool

    /// Creates metadata; every field is optional.
    public init(
        url: URL? = nil, validator: ResourceVersion = ResourceVersion(), contentType: String? = nil,
        acceptsRanges: Bool? = nil, freshness: Freshness = .unknown, selectingHeaders: String? = nil,
        sidecarMissing: Bool = false
    ) {
        urlText = url?.absoluteString
        self.validator = validator
        self.contentType = contentType
        self.acceptsRanges = acceptsRanges
        self.freshness = freshness
        self.selectingHeaders = selectingHeaders
        self.sidecarMissing = sidecarMissing
    }
}

/// A snapshot of one entry, for listings and the CLI.
public struct EntryInfo: Sendable, Hashable {
    /// The entry's key.
    public var key: CacheKey
    /// The namespace (account) it belongs to.
    public var namespace: String
    /// Its metadata.
    public var metadata: EntryMetadata
    /// The byte ranges durably cached (what the index claims).
    public var durableRanges: RangeSet
    /// Disk space its data file occupies (allocated blocks).
    public var allocatedBytes: Int64
    /// When the entry was created.
    public var created: Date
    /// When it was last read or written.
    public var lastAccess: Date
    /// Whether it is pinned or has an open handle, so eviction skips it.
    public var inUse: Bool

    /// Whether every byte of a resource of known length is cached.
    public var isComplete: Bool {
        guard let length = metadata.validator.length else { return false }
        return durableRanges.contains(0..<length)
    }
}

/// Totals for one namespace.
public struct NamespaceStats: Sendable, Hashable {
    /// Entries in the namespace.
    public var entries: Int
    /// Disk space they occupy.
    public var bytes: Int64
}

/// The cache's counters. Entry and byte totals describe the cache now; the
/// traffic counters count since this process opened it.
public struct CacheStats: Sendable, Hashable {
    /// Entries in the cache.
    public var entries: Int = 0
    /// Disk space the data files occupy (allocated blocks).
    public var bytes: Int64 = 0
    /// Per-namespace totals.
    public var namespaces: [String: NamespaceStats] = [:]
    /// Reads that found bytes at the offset asked.
    public var hits: Int = 0
    /// Reads that found nothing at the offset asked, and downloads started for missing bytes
    /// (``CacheEntry/countMiss()``).
    public var misses: Int = 0
    /// Bytes returned by reads.
    public var bytesServedFromCache: Int64 = 0
    /// Bytes written into the cache (fetched from the network).
    public var bytesFromNetwork: Int64 = 0
    /// Writes, syncs and index updates that failed (disk full, read-only, permissions…).
    public var writeFailures: Int = 0
    /// Entries removed by eviction.
    public var evictions: Int = 0
    /// Entries found damaged and dropped or emptied since open.
    public var damagedEntries: Int = 0
    /// Times a damaged index was replaced by one rebuilt from memory since open.
    public var indexRebuilds: Int = 0
}
