import Basics
import ByteSourceAPI
import FoundationEssentials
import HLS
import Synchronization

/// An on-demand HLS presentation as one stream of bytes for the engine: its segments (and their
/// initialization sections) one after another, each read through a byte source of its own from
/// `makeSource`, so every segment goes through Spool's download engine and range cache. The
/// engine's decoder sees one continuous stream (no gap at a segment's end) and the length comes
/// from the playlist (``ResourceInfo/duration``).
///
/// Reads go forward, as a pushed stream's do. Parts download one at a time (``partsAhead``);
/// parts behind the reader are closed. A read behind the current part starts again from the
/// part holding it.
public final class HLSByteSource: ByteSource {
    /// Fetches a playlist (or a key) whole, as `use` says it may be.
    public typealias PlaylistFetch = @Sendable (URL, FetchUse) async throws(MediaSourceError) -> Data

    /// How a whole fetch may be answered.
    public enum FetchUse: Sendable, Equatable {
        /// A playlist that may be on demand: under HTTP's caching rules (a fresh stored copy
        /// answers with no request, a stale one is revalidated), and stored.
        case playlist
        /// A live playlist's reload: from the origin, never stored.
        case origin
        /// An AES-128 key: from the origin, never stored (a key on disk would undo its
        /// encryption), and at most ``HLSByteSource/keyLimit`` bytes.
        case key
    }

    /// The most bytes a key response may hold: an AES-128 key is 16 bytes, and nothing larger
    /// is read into memory.
    public static let keyLimit = 1024

    /// Makes the unopened byte source of one segment's URL; `live`: a live presentation's
    /// segment, kept in memory only.
    public typealias SourceMaker = @Sendable (URL, _ live: Bool) throws(MediaSourceError) -> any ByteSource
    /// The highest variant bit rate allowed now (a metered network's), or nil for any.
    public typealias Ceiling = @Sendable () -> BitsPerSecond?

    /// How many parts past the reader's are opened ahead of it: none. Parts downloading side by
    /// side share the link, and the one playing then arrives slower than it plays (three ahead
    /// on a link at 1.85x the stream's rate stalled a live window for 2.7 s in 20, and an
    /// on-demand one at 2.9 s). One at a time, the next opens when the reader reaches it, and
    /// what the reader holds ahead (appsrc takes up to 200 KB) covers the new request.
    public static let partsAhead = 0

    let url: URL
    private let fetchPlaylist: PlaylistFetch
    private let makeSource: SourceMaker
    private let ceiling: Ceiling
    let state = Mutex(State())
    static let log = Logger(label: "hls")

    struct State {
        /// The parts the stream is read from now: an on-demand presentation's from its start,
        /// or from where it last restarted (``restart(at:)``).
        var parts: [StreamPart] = []
        /// Every part of an on-demand presentation, which restarts choose from.
        var layout: [StreamPart] = []
        /// The stream offset where each part starts, known up to the reader's part.
        var starts: [Int64] = [0]
        /// The part the reader is in (an index into `parts`).
        var current = 0
        /// The ID3v2 tag the current part begins with, skipped (nil: not looked for yet).
        var currentTag: Int64?
        /// Opened (or opening) sources, by part index.
        var sources: [Int: PartSource] = [:]
        /// A read waiting for a part's source to open.
        var wake: (@Sendable () -> Void)?
        var background = false
        var closed = false
        /// The reloading of a live playlist; nil on demand.
        var live: LiveFeed?
        /// Keys of encrypted parts, fetched once per key URL.
        var keys: [URL: Task<Data, any Error>] = [:]
        /// Where `parts` begins in the presentation's time (a restart's segment).
        var partsStart: Duration = .zero
        /// The choice among a master playlist's variants; nil for a media playlist.
        var adaptation: Adaptation?
        /// The timed ID3 scan of the reader's part (a live MPEG-TS segment's), or nil.
        var timedMetadata: TimedID3Scanner?
        /// The audio bytes (PES payloads) of the MPEG-TS parts scanned before the reader's.
        var audioBytesBefore: Int64 = 0
        /// Who learns when a live presentation's segments went on air (``whenProgramDate(_:)``).
        var dateHandler: (@Sendable (Date, Int64) -> Void)?
        /// Who learns of a live presentation's titles (``whenStreamTitle(_:)``).
        var titleHandler: (@Sendable (StreamTitle, Int64) -> Void)?
        /// Who learns of the variant playing (``whenVariantChosen(_:)``).
        var variantHandler: (@Sendable (StreamVariant) -> Void)?
        /// Where the first part is entered part-way after a restart, or nil: read whole.
        var entry: SegmentEntry?
        /// Restarts so far: an entry found for an earlier one is dropped.
        var restarts = 0
        /// Who learns where an entered stream starts (``whenRestartMoved(_:)``).
        var restartMovedHandler: (@Sendable (Duration) -> Void)?
    }

    /// What a live presentation's reloads know.
    struct LiveFeed {
        /// The media playlist to reload.
        var url: URL
        /// The last segment listed so far (new segments come after it).
        var lastSegment: MediaSegment?
        var lastMap: MediaInitializationSection?
        /// The sequence number of the first segment the latest load listed: those before it
        /// left the window, and are not asked for (RFC 8216 §6.3.3).
        var firstListed: Int?
        /// No more segments will come (`EXT-X-ENDLIST` appeared).
        var ended = false
        /// Reloads failed for too long: reads past the last part fail with it.
        var failure: MediaSourceError?
    }

    /// How long a live playlist may fail to reload before reads past its last segment fail.
    public static let liveRetryDuration: Duration = .seconds(60)

    /// A part's source and whether its open has finished (with its failure, if it failed).
    struct PartSource {
        var source: any ByteSource
        var opened = false
        /// The resource's length, once opened and known.
        var length: Int64?
        var failure: MediaSourceError?
        /// Opens of this part that failed before this one (a live segment is asked for again).
        var failedOpens = 0
    }

    /// A source for the presentation at `url` (a media or a master playlist); a master's
    /// variants above `ceiling` are not played (unless all are, and then the lowest).
    public init(
        url: URL, fetchPlaylist: @escaping PlaylistFetch, makeSource: @escaping SourceMaker,
        ceiling: @escaping Ceiling = { nil }
    ) {
        self.url = url
        self.fetchPlaylist = fetchPlaylist
        self.makeSource = makeSource
        self.ceiling = ceiling
    }

    /// Fetches the playlist (and, for a master playlist, the chosen variant's), starts the first
    /// segments' downloads and answers with the presentation's length in time; a live playlist
    /// answers as a live stream, starts three target durations from its end (or at
    /// `EXT-X-START`) and is reloaded as RFC 8216 §6.3.4 says until the source closes.
    public func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        Task {
            do throws(MediaSourceError) {
                let (media, mediaURL) = try await loadMediaPlaylist()
                let info = media.isLive ? try startLive(media, at: mediaURL) : try startOnDemand(media)
                openAhead()
                completion(.success(info))
                if media.isLive { await reloadLive(after: media, began: .now) }
            } catch {
                completion(.failure(error))
            }
        }
    }

    private func startOnDemand(_ media: MediaPlaylist) throws(MediaSourceError) -> ResourceInfo {
        let parts: [StreamPart]
        switch SegmentStream.parts(of: media) {
        case .success(let found): parts = found
        case .failure(let refusal): throw .unavailable(refusal.description)
        }
        let duration = parts.reduce(Duration.zero) { $0 + $1.duration }
        try install(parts, live: nil)
        Self.log.info("\(url.lastPathComponent): \(parts.count) parts, \(duration.components.seconds) s")
        // Seeks restart the stream at a segment: there is no byte offset for a time before the
        // segments are fetched, and a demuxer started mid-presentation counts its own time.
        return ResourceInfo(length: nil, randomAccess: false, duration: duration, seeksByRestart: true)
    }

    private func startLive(_ media: MediaPlaylist, at mediaURL: URL) throws(MediaSourceError) -> ResourceInfo {
        let first = media.startPosition()?.segmentIndex ?? 0
        let segments = media.segments[first...]
        let laidOut: (parts: [StreamPart], lastMap: MediaInitializationSection?)
        switch SegmentStream.parts(of: segments, after: nil) {
        case .success(let found): laidOut = found
        case .failure(let refusal): throw .unavailable(refusal.description)
        }
        guard !laidOut.parts.isEmpty else { throw .unavailable(SegmentStreamRefusal.empty.description) }
        try install(
            Self.dated(laidOut.parts, by: media),
            live: LiveFeed(
                url: mediaURL, lastSegment: media.segments.last, lastMap: laidOut.lastMap,
                firstListed: media.segments.first?.mediaSequenceNumber))
        Self.log.info("\(url.lastPathComponent): live, starting \(segments.count) segments from the end")
        return ResourceInfo(length: nil, randomAccess: false, live: LiveStation(name: nil))
    }

    private func install(_ parts: [StreamPart], live: LiveFeed?) throws(MediaSourceError) {
        let closed = state.withLock { state -> Bool in
            state.parts = parts
            state.layout = live == nil ? parts : []
            state.live = live
            return state.closed
        }
        if closed { throw .closed }
    }

    /// The media playlist to play: the one at `url`, or the variant a master playlist there
    /// starts on (audio only where it offers that; the lowest bitrate within the ceiling, as
    /// nothing is measured yet: the first segments' downloads move it up).
    private func loadMediaPlaylist() async throws(MediaSourceError) -> (MediaPlaylist, URL) {
        switch try await playlist(at: url) {
        case .media(let media):
            return (media, url)
        case .master(let master):
            for refusal in master.refused { Self.log.warning("\(url.lastPathComponent): \(refusal)") }
            let limit = ceiling()
            guard
                let variant = master.chooseVariant(throughput: nil, ceiling: limit)
                    ?? master.chooseVariant(throughput: nil, ceiling: nil)
            else {
                throw .unavailable("the HLS master playlist offers no variant to play")
            }
            let (media, chosen) = try await mediaPlaylist(of: variant, in: master)
            let audio = master.audioOnlyVariants
            state.withLock {
                $0.adaptation = Adaptation(
                    master: master,
                    policy: VariantPolicy(
                        candidates: audio.isEmpty ? master.variants : audio, ceiling: limit, current: variant,
                        // A live reader starts three target durations from the edge: never further ahead.
                        reach: media.isLive ? media.targetDuration * 3 : nil))
            }
            Self.log.info("\(url.lastPathComponent): variant of \(variant.bandwidth) bit/s")
            return (media, chosen)
        }
    }

    func playlist(at address: URL, use: FetchUse = .playlist) async throws(MediaSourceError) -> HLSPlaylist {
        let data = try await fetchPlaylist(address, use)
        switch HLSParser.parse(data: data, url: address) {
        case .success(let playlist): return playlist
        case .failure(let error): throw .unavailable("not a valid HLS playlist: \(error)")
        }
    }

    /// The key at `keyURL`, fetched once however many parts it opens.
    private func key(at keyURL: URL) async throws(MediaSourceError) -> Data {
        let fetch = fetchPlaylist
        let task = state.withLock { state -> Task<Data, any Error> in
            if let running = state.keys[keyURL] { return running }
            let task = Task<Data, any Error> { try await fetch(keyURL, .key) }
            state.keys[keyURL] = task
            return task
        }
        let key: Data
        do {
            key = try await task.value
        } catch let error as MediaSourceError {
            throw .unavailable("the HLS key \(keyURL.lastPathComponent) cannot be fetched: \(error)")
        } catch {
            throw .unavailable("the HLS key \(keyURL.lastPathComponent) cannot be fetched")
        }
        guard key.count == 16 else {
            throw .unavailable("the HLS key \(keyURL.lastPathComponent) is \(key.count) bytes, not 16 (AES-128)")
        }
        return key
    }

    /// Opens the reader's part and the few after it; closes those behind it.
    func openAhead() {
        let toOpen = state.withLock { state -> [any ByteSource] in
            guard !state.closed else { return [] }
            for index in state.sources.keys where index < state.current {
                state.sources.removeValue(forKey: index)?.source.close()
            }
            var made: [any ByteSource] = []
            for index in state.current..<min(state.parts.count, state.current + 1 + Self.partsAhead)
            where state.sources[index] == nil && !Self.leftTheWindow(state, part: index) {
                if let source = makePartSource(&state, index: index, failedOpens: 0) { made.append(source) }
            }
            return made
        }
        for source in toOpen {
            source.open { [weak self] result in self?.opened(source, result) }
        }
    }

    /// Makes part `index`'s source and lists it, unopened; nil when none can be made (the part
    /// is listed as failed).
    private func makePartSource(_ state: inout State, index: Int, failedOpens: Int) -> (any ByteSource)? {
        do throws(MediaSourceError) {
            let part = state.parts[index]
            var source = try makeSource(part.url, state.live != nil)
            if let encryption = part.encryption {
                source = DecryptingSource(inner: source, range: part.range, iv: encryption.iv) {
                    [weak self] () throws(MediaSourceError) -> Data in
                    guard let self else { throw .closed }
                    return try await self.key(at: encryption.keyURL)
                }
            }
            if !part.isInitialization, state.adaptation != nil {
                source.whenTransferred { [weak self] sample in self?.transferred(sample) }
            }
            source.setBackground(state.background || index > state.current)
            state.sources[index] = PartSource(source: source, failedOpens: failedOpens)
            return source
        } catch {
            state.sources[index] = PartSource(source: FailedSource(), opened: true, failure: error)
            return nil
        }
    }

    /// Whether part `index` is a live segment the latest reload no longer lists.
    static func leftTheWindow(_ state: State, part index: Int) -> Bool {
        guard let sequence = state.parts[index].sequence, let firstListed = state.live?.firstListed else {
            return false
        }
        return sequence < firstListed
    }

    /// How often a live segment is asked for before it is skipped: a packager's CDN may list a
    /// segment a moment before every edge serves it, and the window's audio covers the wait.
    public static let liveSegmentAttempts = 3
    /// The wait before a live segment is asked for again, times the attempts so far.
    static let liveSegmentRetryDelay: Duration = .milliseconds(400)

    /// Asks for the live segment whose source `failed` opened again, after a wait, if it is
    /// still listed then.
    private func retryLivePart(_ failed: any ByteSource, after delay: Duration) {
        Task { [weak self] in
            try? await Task.sleep(for: delay)
            guard let self else { return }
            let made = state.withLock { state -> (any ByteSource)? in
                guard !state.closed,
                    let (index, listed) = state.sources.first(where: { $0.value.source === failed })
                else { return nil }
                return makePartSource(&state, index: index, failedOpens: listed.failedOpens + 1)
            }
            guard let made else { return }
            made.open { [weak self] result in self?.opened(made, result) }
        }
    }

    /// `source` opened. It is found by identity: a live source renumbers its parts as it
    /// forgets those read.
    private func opened(_ source: any ByteSource, _ result: Result<ResourceInfo, MediaSourceError>) {
        let (wake, retryAfter) = state.withLock { state -> ((@Sendable () -> Void)?, Duration?) in
            guard let index = state.sources.first(where: { $0.value.source === source })?.key,
                let listed = state.sources[index]
            else { return (nil, nil) }
            if case .failure(let error) = result {
                if state.live != nil, !error.isClosed, listed.failedOpens + 1 < Self.liveSegmentAttempts,
                    !Self.leftTheWindow(state, part: index)
                {
                    // Not opened yet: the reader waits for the next attempt.
                    return (nil, Self.liveSegmentRetryDelay * (listed.failedOpens + 1))
                }
                state.sources[index]?.failure = error
            }
            state.sources[index]?.opened = true
            if case .success(let info) = result { state.sources[index]?.length = info.length }
            guard index == state.current else { return (nil, nil) }
            defer { state.wake = nil }
            return (state.wake, nil)
        }
        if let retryAfter {
            if case .failure(let error) = result { Self.log.warning("live segment failed: \(error)") }
            source.close()
            retryLivePart(source, after: retryAfter)
        }
        wake?()
    }

    /// Starts the stream again at the segment playing at `target`, after the initialization
    /// section it needs; the parts open again from there (those already cached are read from
    /// the cache). Nil for a live presentation or before the playlist is read.
    public func restart(at target: Duration) -> Duration? {
        let restarted = state.withLock { state -> (start: Duration, closing: [any ByteSource])? in
            guard !state.closed, state.live == nil,
                let point = SegmentStream.restartPoint(in: state.layout, at: target)
            else { return nil }
            state.parts = (point.initialization.map { [state.layout[$0]] } ?? []) + state.layout[point.segment...]
            state.starts = [0]
            state.current = 0
            state.currentTag = nil
            state.timedMetadata = nil
            state.partsStart = point.start
            state.adaptation?.readSince = nil
            state.adaptation?.timeRead = .zero
            state.wake = nil
            state.restarts += 1
            state.entry =
                point.initialization == nil
                ? SegmentEntry(
                    target: target, segmentStart: point.start, part: state.layout[point.segment],
                    restart: state.restarts) : nil
            defer { state.sources = [:] }
            return (point.start, state.sources.values.map(\.source))
        }
        guard let restarted else { return nil }
        for source in restarted.closing { source.close() }
        Self.log.debug("\(url.lastPathComponent): restarted at \(restarted.start) for \(target)")
        openAhead()
        return restarted.start
    }

    /// How many parts the source keeps listed (read or to read): a live one's stay bounded.
    public var partsListed: Int { state.withLock { $0.parts.count } }

    /// How many keys the source holds: a live one's only those of the parts still listed.
    public var keysHeld: Int { state.withLock { $0.keys.count } }

    /// Drops a pending wake-up here and in the current part's source.
    public func cancelPendingReads() {
        let source = state.withLock { state -> (any ByteSource)? in
            state.wake = nil
            return state.sources[state.current]?.source
        }
        source?.cancelPendingReads()
    }

    /// Closes every part's source.
    public func close() {
        let sources = state.withLock { state -> [any ByteSource] in
            state.closed = true
            state.wake = nil
            defer { state.sources = [:] }
            return state.sources.values.map(\.source)
        }
        for source in sources { source.close() }
    }

    /// Passes the hint to the reader's part; the parts ahead stay in the background.
    public func setBackground(_ background: Bool) {
        let source = state.withLock { state -> (any ByteSource)? in
            state.background = background
            return state.sources[state.current]?.source
        }
        source?.setBackground(background)
    }

    /// A pushed stream of parts holds nothing the engine may read through without waiting.
    public func holds(_ range: Range<Int64>) -> Bool { false }
}

/// The source of a part whose URL no source could be made for: its failure is the answer.
private final class FailedSource: ByteSource {
    func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {}
    func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        .failed(.closed)
    }
    func cancelPendingReads() {}
    func close() {}
}

extension MediaSourceError {
    /// Whether the error is the source's own close, not a failure of the resource.
    var isClosed: Bool {
        if case .closed = self { return true }
        return false
    }
}
