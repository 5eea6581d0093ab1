import Fetcher
import FoundationEssentials
import MediaSource
import RangeCache

/// Decides which byte source plays a URL, and makes it: a local file is read in place; an
/// http(s) resource goes through its range-cache entry when the cache is open, and streams
/// from memory when it is not (or its entry cannot be had); any other scheme is refused.
public final class SourceChooser: Sendable {
    /// Which kind of source a URL gets.
    public enum Route: Equatable, Sendable {
        /// `file:`: read from the file system.
        case file
        /// http(s) with the cache open: a ``CachedByteSource`` over the URL's entry.
        case cachedHTTP
        /// http(s) without a cache: an ``HTTPByteSource``, bytes in memory only.
        case uncachedHTTP
        /// Any other scheme (the scheme as written, empty when there is none).
        case unsupported(scheme: String)
    }

    private let cache: RangeCache?
    private let namespace: String
    private let fetcher: Fetcher
    private let revalidator: Revalidator
    private let readAhead: CachedByteSource.ReadAheadPolicy?
    private let playback: PlaybackSources

    /// Makes sources with `fetcher`, over `cache` (entries in `namespace`) when there is one.
    /// Cached sources check complete entries through `revalidator`, read ahead by `readAhead`,
    /// and are registered with `playback` (which applies the metered rules to them).
    public init(
        cache: RangeCache?, namespace: String, fetcher: Fetcher, revalidator: Revalidator,
        readAhead: CachedByteSource.ReadAheadPolicy?, playback: PlaybackSources
    ) {
        self.cache = cache
        self.namespace = namespace
        self.fetcher = fetcher
        self.revalidator = revalidator
        self.readAhead = readAhead
        self.playback = playback
    }

    /// The route `url` takes with or without an open cache (`cacheOpen`).
    public static func route(for url: URL, cacheOpen: Bool) -> Route {
        switch url.scheme?.lowercased() {
        case "file": .file
        case "http", "https": cacheOpen ? .cachedHTTP : .uncachedHTTP
        default: .unsupported(scheme: url.scheme ?? "")
        }
    }

    /// A new, unopened source for `url`; throws ``MediaSourceError/gone(_:)`` for a scheme
    /// nothing can read.
    public func source(for url: URL) throws(MediaSourceError) -> any ByteSource {
        switch Self.route(for: url, cacheOpen: cache != nil) {
        case .file:
            return FileByteSource(path: url.path)
        case .uncachedHTTP:
            return uncached(url)
        case .cachedHTTP:
            guard let cache, let entry = try? cache.entry(for: url, namespace: namespace) else {
                return uncached(url)  // no entry: stream from memory
            }
            // A download that continues an incomplete entry (with If-Range) or fetches it fresh
            // validates it: replaying it soon after needs no conditional request.
            let length = entry.metadata.validator.length
            if length.map({ entry.contiguousLength(from: 0) < $0 }) ?? true { revalidator.markChecked(entry) }
            let source = CachedByteSource(
                url: url, entry: entry, fetcher: fetcher, revalidator: revalidator, readAhead: readAhead)
            playback.register(source, for: url)
            return source
        case .unsupported(let scheme):
            throw .gone("unsupported URL scheme '\(scheme)'")
        }
    }

    /// A memory-only source for `url`, under the metered rules like a cached one.
    private func uncached(_ url: URL) -> HTTPByteSource {
        let source = HTTPByteSource(url: url, fetcher: fetcher, readAhead: readAhead)
        playback.register(uncached: source)
        return source
    }
}
