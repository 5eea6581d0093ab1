import ByteSourceAPI
import Fetcher
import FoundationEssentials
import HLS
import HLSSource
import MediaSource
import RangeCache

/// Decides which byte source plays a URL, and makes it: a local file is read in place; an
/// http(s) resource gets an ``HTTPByteSource`` over its range-cache entry when the cache is
/// open (the source keeps the bytes in memory when it is not, or its entry cannot be had); any
/// other scheme is refused.
public final class SourceChooser: Sendable {
    /// Which kind of source a URL gets.
    public enum Route: Equatable, Sendable {
        /// `file:`: read from the file system.
        case file
        /// http(s): an ``HTTPByteSource``, over the URL's cache entry when the cache is open
        /// (else its bytes are kept in memory only).
        case http
        /// An http(s) HLS playlist (`.m3u8`): an ``HLSByteSource`` whose segments each take
        /// the http route.
        case hls
        /// Any other scheme (the scheme as written, empty when there is none).
        case unsupported(scheme: String)
    }

    private let cache: RangeCache?
    private let namespace: String
    private let fetcher: Fetcher
    private let revalidator: Revalidator
    private let readAhead: HTTPByteSource.ReadAheadPolicy?
    private let playback: PlaybackSources
    private let meteredQuality: Int?
    /// The on-demand HLS presentations read, for the buffer bar (``PresentationCache``).
    public let presentations = PresentationCache()

    /// Makes sources with `fetcher`, over `cache` (entries in `namespace`) when there is one.
    /// Cached sources check complete entries through `revalidator`, read ahead by `readAhead`,
    /// and are registered with `playback` (which applies the metered rules to them). While
    /// metered rules are in force, an HLS presentation plays no variant above `meteredQuality`
    /// bits per second (nil: no limit).
    public init(
        cache: RangeCache?, namespace: String, fetcher: Fetcher, revalidator: Revalidator,
        readAhead: HTTPByteSource.ReadAheadPolicy?, playback: PlaybackSources, meteredQuality: Int? = nil
    ) {
        self.meteredQuality = meteredQuality
        self.cache = cache
        self.namespace = namespace
        self.fetcher = fetcher
        self.revalidator = revalidator
        self.readAhead = readAhead
        self.playback = playback
    }

    /// The route `url` takes.
    public static func route(for url: URL) -> Route {
        switch url.scheme?.lowercased() {
        case "file": .file
        case "http", "https": url.pathExtension.lowercased() == "m3u8" ? .hls : .http
        default: .unsupported(scheme: url.scheme ?? "")
        }
    }

    /// A new, unopened source for `url`; throws ``MediaSourceError/gone(_:)`` for a scheme
    /// nothing can read.
    public func source(for url: URL) throws(MediaSourceError) -> any ByteSource {
        switch Self.route(for: url) {
        case .file:
            return FileByteSource(path: url.path)
        case .http:
            return httpSource(for: url)
        case .hls:
            return HLSByteSource(
                url: url,
                fetchPlaylist: { [weak self] playlist, use throws(MediaSourceError) in
                    guard let self else { throw MediaSourceError.closed }
                    return try await self.whole(playlist, use: use)
                },
                makeSource: { [weak self] segment, live throws(MediaSourceError) in
                    guard let self else { throw MediaSourceError.closed }
                    return self.httpSource(for: segment, stored: !live)
                },
                ceiling: { [playback, meteredQuality] in playback.metered ? meteredQuality : nil })
        case .unsupported(let scheme):
            throw .gone("unsupported URL scheme '\(scheme)'")
        }
    }

    /// An `.m3u8` playlist, whole, as an HLS presentation reads it (see ``whole(_:use:)``): a
    /// fresh stored copy answers with no request.
    public func playlist(_ url: URL) async throws(MediaSourceError) -> Data {
        try await whole(url, use: .playlist)
    }

    /// An HLS playlist or key, whole. A playlist stored whole is read through its cache entry,
    /// under HTTP's caching rules (a fresh copy costs no request, a stale one a revalidation);
    /// one not stored comes from the origin without touching the disk, and only once it reads
    /// as on demand is it stored, by a read of its own off the start path: a live playlist, which
    /// changes every few seconds, never reaches the disk. A live playlist's reload and a key
    /// always come from the origin, never stored (a key on disk would undo its encryption); a
    /// key response larger than ``HLSByteSource/keyLimit`` fails, a playlist larger than 4 MiB.
    private func whole(_ url: URL, use: HLSByteSource.FetchUse) async throws(MediaSourceError) -> Data {
        if use == .key { return try await fetchWhole(url, limit: HLSByteSource.keyLimit) }
        guard use == .playlist, let cache else { return try await fetchWhole(url) }
        if cache.info(for: cache.key(for: url), namespace: namespace)?.isComplete == true {
            let source = httpSource(for: url)
            defer { source.close() }
            let data = try await source.readWhole()
            let playlist = try? HLSParser.parse(data: data, url: url).get()
            if case .media(let media) = playlist, media.isLive { source.discardOnClose() }
            if let playlist { presentations.learn(playlist, at: url) }
            return data
        }
        let data = try await fetchWhole(url)
        guard let playlist = try? HLSParser.parse(data: data, url: url).get() else { return data }
        presentations.learn(playlist, at: url)
        if case .media(let media) = playlist, media.isLive { return data }
        let store = httpSource(for: url)
        Task(priority: .utility) {
            _ = try? await store.readWhole()
            store.close()
        }
        return data
    }

    private func fetchWhole(_ url: URL, limit: Int = 4 << 20) async throws(MediaSourceError) -> Data {
        do throws(FetchError) {
            return try await fetcher.fetchWhole(url, limit: limit)
        } catch {
            throw MediaSourceError(downloadFailure: error)
        }
    }

    /// An ``HTTPByteSource`` for `url`, over its cache entry when there is one and `stored`
    /// (else its bytes are kept in memory), registered for the metered rules.
    private func httpSource(for url: URL, stored: Bool = true) -> HTTPByteSource {
        let entry = stored ? try? cache?.entry(for: url, namespace: namespace) : nil
        let source = HTTPByteSource(
            url: url, entry: entry, fetcher: fetcher, revalidator: revalidator, readAhead: readAhead)
        playback.register(source, for: url)
        return source
    }
}
