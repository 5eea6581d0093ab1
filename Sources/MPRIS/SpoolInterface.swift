import DBusKit
import EngineAPI
import FoundationEssentials
import PlayerCore

/// What the cache holds of one http(s) resource, as `org.spool.Spool1` reports it.
public struct CachedResource: Sendable, Equatable {
    /// The URL the bytes came from.
    public var url: String
    /// The cache namespace (account) the entry belongs to.
    public var namespace: String
    /// The byte ranges on disk, in order.
    public var ranges: [Range<Int64>]
    /// The resource's length, when known.
    public var length: Int64?
    /// When the entry was last read or written.
    public var lastAccess: Date
    /// Why a prefetch of it failed, if it did.
    public var error: String?

    /// Creates a description of one cached resource.
    public init(
        url: String, namespace: String, ranges: [Range<Int64>], length: Int64?, lastAccess: Date = Date(),
        error: String? = nil
    ) {
        self.url = url
        self.namespace = namespace
        self.ranges = ranges
        self.length = length
        self.lastAccess = lastAccess
        self.error = error
    }

    /// Bytes on disk.
    public var cachedBytes: Int64 { ranges.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } }
    /// Whether every byte of a resource of known length is on disk.
    public var isComplete: Bool { length.map { cachedBytes >= $0 } ?? false }
}

/// The cache and download state behind `org.spool.Spool1`, implemented by the
/// executable (which owns the range cache and the fetcher), so this module
/// never imports them.
public protocol SpoolStatusProvider: Sendable {
    /// Cache counters as name–value pairs (`entries`, `bytes`, `hits`, …), in display order.
    func cacheStats() -> [(name: String, value: Int64)]
    /// The entries of one namespace, or of all when `namespace` is nil.
    func cachedResources(namespace: String?) -> [CachedResource]
    /// What the cache holds of `url` in the daemon's namespace (nil for local files or no entry).
    func cacheState(of url: URL) -> CachedResource?
    /// Removes the entries of one namespace, or all when nil; the message of a failure is thrown.
    func clearCache(namespace: String?) throws
    /// Starts downloading `url` into the cache without playing it.
    func prefetch(_ url: URL) throws
    /// The prefetches started since the daemon started, with their progress.
    func prefetches() -> [CachedResource]
    /// What the download of `url` is doing right now, in words ("" when nothing is known).
    func downloadState(of url: URL) -> String
    /// The upcoming tracks of the preload window, in play order, and how far each is prepared.
    func preparedTracks() -> [PreparedTrack]
}

extension SpoolStatusProvider {
    /// No preloading known.
    public func preparedTracks() -> [PreparedTrack] { [] }
}

extension MPRISService {
    /// Spool's own interface name, on the MPRIS object.
    public static let spoolInterface = "org.spool.Spool1"

    /// `org.spool.Spool1`: what MPRIS lacks (queues of several URIs, the cache, prefetch, the
    /// songs heard on internet radio).
    func spoolInterface(_ status: SpoolStatusProvider) -> DBusInterface {
        let player = self.player
        let snapshot: @Sendable () -> PlayerSnapshot = { [weak self] in
            self?.published.withLock { $0.snapshot } ?? PlayerSnapshot()
        }
        let lastError: @Sendable () -> String? = { [weak self] in
            self?.published.withLock { $0.inputError ?? $0.snapshot.lastError }
        }
        let queueInputs:
            @Sendable ([DBusValue], Bool, @escaping @Sendable ([TrackItem]) async -> Void) async throws -> Void = {
                [weak self] arguments, replacing, apply in
                guard let texts = arguments.first?.stringArrayValue, !texts.isEmpty else {
                    throw DBusError.invalidArgs("expected one or more URIs or paths")
                }
                try await self?.queueInputs(texts, replacing: replacing, apply)
            }
        let current: @Sendable () -> CachedResource? = {
            snapshot().nowPlaying.flatMap { status.cacheState(of: $0.entry.url) }
        }
        return DBusInterface(
            Self.spoolInterface,
            methods: [
                DBusMethod("Play", in: "as", argumentNames: ["Uris"]) { arguments in
                    try await queueInputs(arguments, true) { await player.open($0) }
                    return []
                },
                DBusMethod("Add", in: "as", argumentNames: ["Uris"]) { arguments in
                    try await queueInputs(arguments, false) { await player.add($0) }
                    return []
                },
                DBusMethod("Queue", out: "aa{sv}", resultNames: ["Entries"]) { _ in
                    let state = snapshot()
                    let entries = state.queue.map { entry -> DBusValue in
                        let playing = state.nowPlaying.flatMap { $0.entry.id == entry.id ? $0 : nil }
                        var fields = (playing.map { Self.metadata($0) } ?? Self.metadata(entry))
                            .stringVariantDictEntries
                        fields.append(("spool:current", .boolean(playing != nil)))
                        if let cached = status.cacheState(of: entry.url) { fields += Self.cacheFields(cached) }
                        return .stringVariantDict(fields)
                    }
                    return [.array(elementSignature: "a{sv}", entries)]
                },
                DBusMethod("CacheStats", out: "a{sv}", resultNames: ["Stats"]) { _ in
                    [.stringVariantDict(status.cacheStats().map { ($0.name, .int64($0.value)) })]
                },
                DBusMethod(
                    "CacheEntries", in: "s", out: "aa{sv}", argumentNames: ["Namespace"], resultNames: ["Entries"]
                ) { arguments in
                    let namespace = arguments.first?.stringValue ?? ""
                    let entries = status.cachedResources(namespace: namespace.isEmpty ? nil : namespace)
                    return [.array(elementSignature: "a{sv}", entries.map { .stringVariantDict(Self.cacheFields($0)) })]
                },
                DBusMethod("ClearCache", in: "s", argumentNames: ["Namespace"]) { arguments in
                    let namespace = arguments.first?.stringValue ?? ""
                    do {
                        try status.clearCache(namespace: namespace.isEmpty ? nil : namespace)
                    } catch {
                        throw DBusError.failed("\(error)")
                    }
                    return []
                },
                DBusMethod("Prefetch", in: "as", argumentNames: ["Urls"]) { arguments in
                    guard let texts = arguments.first?.stringArrayValue, !texts.isEmpty else {
                        throw DBusError.invalidArgs("expected one or more http(s) URLs")
                    }
                    let urls = try texts.map { text throws(DBusError) -> URL in
                        switch TrackInput.parse(text) {
                        case .success(.remote(let url)): return url
                        case .failure(let problem): throw DBusError.invalidArgs(problem.description)
                        case .success(.local):
                            throw DBusError.invalidArgs(
                                "only http(s) URLs can be prefetched, not '\(text.prefix(200))'")
                        }
                    }
                    for url in urls {
                        do { try status.prefetch(url) } catch { throw DBusError.failed("\(error)") }
                    }
                    return []
                },
                DBusMethod("History", in: "u", out: "a(dsss)", argumentNames: ["Limit"], resultNames: ["Songs"]) {
                    arguments in
                    guard let limit = arguments.first?.uint32Value, limit > 0 else {
                        throw DBusError.invalidArgs("expected how many songs to list, at least 1")
                    }
                    let songs = await player.heardSongs(limit: min(Int(limit), HeardSong.historyLimit))
                    return [.array(elementSignature: "(dsss)", songs.map(Self.historyEntry))]
                },
            ] + (playlists.map(playlistMethods) ?? []),
            properties: [
                DBusProperty("LastError", signature: "s") { .string(lastError() ?? "") },
                DBusProperty("Buffering", signature: "b") { .boolean(snapshot().buffering) },
                DBusProperty("Metered", signature: "b") { .boolean(snapshot().metered) },
                DBusProperty("Interrupted", signature: "b") { .boolean(snapshot().interrupted) },
                DBusProperty("CachedRanges", signature: "a(xx)") {
                    .array(
                        elementSignature: "(xx)",
                        (current()?.ranges ?? []).map { .structure([.int64($0.lowerBound), .int64($0.upperBound)]) })
                },
                DBusProperty("ContentLength", signature: "x") { .int64(current()?.length ?? -1) },
                DBusProperty("DownloadState", signature: "s") {
                    .string(snapshot().nowPlaying.map { status.downloadState(of: $0.entry.url) } ?? "")
                },
                DBusProperty("Prefetches", signature: "aa{sv}") {
                    .array(
                        elementSignature: "a{sv}", status.prefetches().map { .stringVariantDict(Self.cacheFields($0)) })
                },
                DBusProperty("Preloads", signature: "aa{sv}") {
                    .array(
                        elementSignature: "a{sv}",
                        status.preparedTracks().map { .stringVariantDict(Self.preloadFields($0)) })
                },
                DBusProperty("Live", signature: "a{sv}") { Self.liveValue(snapshot().nowPlaying) },
                DBusProperty("Variant", signature: "a{sv}") { Self.variantValue(snapshot().nowPlaying) },
                DBusProperty("Lyrics", signature: "a(xs)") { Self.lyricsValue(snapshot().nowPlaying?.lyrics) },
                DBusProperty("LyricsLine", signature: "i") { [weak self] in .int32(self?.currentLyricsLine() ?? -1) },
            ])
    }

    /// `Live`: the station and the song heard when the track is a live stream (internet radio),
    /// an empty dictionary otherwise. Keys: `station`, `genre`, `homepage`, `description`,
    /// `bitrate` (kbit/s), and for the song `song` (as the station sent it), `artist`, `title`;
    /// for a stream that dates its audio, `aired` (x: microseconds since 1970 when the audio
    /// heard at track position `airedPosition` (x, microseconds) went on air).
    static func liveValue(_ track: NowPlaying?) -> DBusValue {
        guard let track, let live = track.live else { return .stringVariantDict([]) }
        var fields: [(String, DBusValue)] = []
        func text(_ key: String, _ value: String?) {
            if let value = value.flatMap({ TagText.clean($0) }) { fields.append((key, .string(value))) }
        }
        text("station", track.stationName)
        text("genre", live.station.genre)
        text("homepage", live.station.homepage)
        text("description", live.station.description)
        if let bitrate = live.station.bitrate { fields.append(("bitrate", .int32(Int32(clamping: bitrate)))) }
        text("song", live.song?.text)
        text("artist", live.song?.artist)
        text("title", live.song?.title)
        if let aired = live.aired {
            fields.append(("aired", .int64(Int64((aired.date.timeIntervalSince1970 * 1_000_000).rounded()))))
            let position = aired.position.components
            fields.append(
                ("airedPosition", .int64(position.seconds * 1_000_000 + position.attoseconds / 1_000_000_000_000)))
        }
        return .stringVariantDict(fields)
    }

    /// `Variant`: which of its presentation's variants the track plays (an HLS master
    /// playlist's), an empty dictionary otherwise. Keys: `bitrate` (kbit/s, the variant's
    /// `BANDWIDTH`), `number` (its place from the lowest, from 1), `count` (variants allowed).
    static func variantValue(_ track: NowPlaying?) -> DBusValue {
        guard let variant = track?.variant else { return .stringVariantDict([]) }
        return .stringVariantDict([
            ("bitrate", .int32(Int32(clamping: (variant.bitrate + 500) / 1000))),
            ("number", .int32(Int32(clamping: variant.number))), ("count", .int32(Int32(clamping: variant.count))),
        ])
    }

    /// One song of `History`: `(when in Unix seconds, station, artist or "", title)`.
    static func historyEntry(_ song: HeardSong) -> DBusValue {
        .structure([
            .double(song.when.timeIntervalSince1970), .string(song.station), .string(song.artist ?? ""),
            .string(song.title),
        ])
    }

    /// The `a{sv}` fields describing one track of the preload window.
    static func preloadFields(_ track: PreparedTrack) -> [(String, DBusValue)] {
        var fields: [(String, DBusValue)] = [
            ("spool:url", .string(track.url)),
            ("spool:stage", .string(track.stage)),
            ("spool:headBytes", .int64(track.headBytes)),
            ("spool:headReady", .boolean(track.headReady)),
            ("spool:cachedBytes", .int64(track.cachedBytes)),
            ("spool:contentLength", .int64(track.length ?? -1)),
            ("spool:complete", .boolean(track.complete)),
        ]
        if let error = track.error { fields.append(("spool:error", .string(error))) }
        return fields
    }

    /// The `a{sv}` fields describing a cached resource (shared by Queue, CacheEntries and Prefetches).
    static func cacheFields(_ resource: CachedResource) -> [(String, DBusValue)] {
        var fields: [(String, DBusValue)] = [
            ("spool:url", .string(resource.url)),
            ("spool:namespace", .string(resource.namespace)),
            ("spool:cachedBytes", .int64(resource.cachedBytes)),
            ("spool:contentLength", .int64(resource.length ?? -1)),
            ("spool:complete", .boolean(resource.isComplete)),
            ("spool:lastAccess", .int64(Int64(resource.lastAccess.timeIntervalSince1970))),
        ]
        if let error = resource.error { fields.append(("spool:error", .string(error))) }
        return fields
    }
}

extension DBusValue {
    /// The entries of an `a{sv}` dictionary, in order, with the variants unwrapped.
    fileprivate var stringVariantDictEntries: [(String, DBusValue)] {
        dictionaryEntries?.compactMap { entry in
            guard let key = entry.key.stringValue else { return nil }
            return (key, entry.value.variantValue ?? entry.value)
        } ?? []
    }
}
