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
/// Reads go forward, as a pushed stream's do. Segments a few ahead of the reader are opened
/// (their downloads start) so a segment's end never waits for the next one's first byte; parts
/// behind it are closed. A read behind the current part starts again from the part holding it.
public final class HLSByteSource: ByteSource {
    /// Fetches a playlist whole.
    public typealias PlaylistFetch = @Sendable (URL) async throws(MediaSourceError) -> Data
    /// Makes the unopened byte source of one segment's URL.
    public typealias SourceMaker = @Sendable (URL) throws(MediaSourceError) -> any ByteSource

    /// How many parts past the reader's are opened ahead of it.
    public static let partsAhead = 3

    private let url: URL
    private let fetchPlaylist: PlaylistFetch
    private let makeSource: SourceMaker
    private let state = Mutex(State())
    private static let log = Logger(label: "hls")

    private struct State {
        var parts: [StreamPart] = []
        /// The stream offset where each part starts, known up to the reader's part.
        var starts: [Int64] = [0]
        /// The part the reader is in (an index into `parts`).
        var current = 0
        /// Opened (or opening) sources, by part index.
        var sources: [Int: PartSource] = [:]
        /// A read waiting for a part's source to open.
        var wake: (@Sendable () -> Void)?
        var background = false
        var closed = false
    }

    /// A part's source and whether its open has finished (with its failure, if it failed).
    private struct PartSource {
        var source: any ByteSource
        var opened = false
        var failure: MediaSourceError?
    }

    /// A source for the presentation at `url` (a media or a master playlist).
    public init(url: URL, fetchPlaylist: @escaping PlaylistFetch, makeSource: @escaping SourceMaker) {
        self.url = url
        self.fetchPlaylist = fetchPlaylist
        self.makeSource = makeSource
    }

    /// Fetches the playlist (and, for a master playlist, the chosen variant's), starts the first
    /// segments' downloads and answers with the presentation's length in time.
    public func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        Task {
            do throws(MediaSourceError) {
                let media = try await loadMediaPlaylist()
                let parts: [StreamPart]
                switch SegmentStream.parts(of: media) {
                case .success(let found): parts = found
                case .failure(let refusal): throw MediaSourceError.unavailable(refusal.description)
                }
                let duration = parts.reduce(Duration.zero) { $0 + $1.duration }
                let closed = state.withLock { state -> Bool in
                    state.parts = parts
                    return state.closed
                }
                if closed { throw MediaSourceError.closed }
                Self.log.info("\(url.lastPathComponent): \(parts.count) parts, \(duration.components.seconds) s")
                openAhead()
                completion(.success(ResourceInfo(length: nil, randomAccess: false, duration: duration)))
            } catch {
                completion(.failure(error))
            }
        }
    }

    /// The media playlist to play: the one at `url`, or the variant a master playlist there
    /// chooses (audio only where it offers that; the lowest bitrate, as nothing is measured yet).
    private func loadMediaPlaylist() async throws(MediaSourceError) -> MediaPlaylist {
        switch try await playlist(at: url) {
        case .media(let media):
            return media
        case .master(let master):
            guard let variant = master.chooseVariant(throughput: nil, ceiling: nil) else {
                throw .unavailable("the HLS master playlist offers no variant to play")
            }
            let chosen = master.audioRendition(for: variant)?.uri ?? variant.uri
            Self.log.info("\(url.lastPathComponent): variant of \(variant.bandwidth) bit/s")
            guard case .media(let media) = try await playlist(at: chosen) else {
                throw .unavailable("the HLS variant \(chosen.lastPathComponent) is not a media playlist")
            }
            return media
        }
    }

    private func playlist(at address: URL) async throws(MediaSourceError) -> HLSPlaylist {
        let data = try await fetchPlaylist(address)
        switch HLSParser.parse(data: data, url: address) {
        case .success(let playlist): return playlist
        case .failure(let error): throw .unavailable("not a valid HLS playlist: \(error)")
        }
    }

    /// Opens the reader's part and the few after it; closes those behind it.
    private func openAhead() {
        let toOpen = state.withLock { state -> [(Int, any ByteSource)] in
            guard !state.closed else { return [] }
            for index in state.sources.keys where index < state.current {
                state.sources.removeValue(forKey: index)?.source.close()
            }
            var made: [(Int, any ByteSource)] = []
            for index in state.current..<min(state.parts.count, state.current + 1 + Self.partsAhead)
            where state.sources[index] == nil {
                do throws(MediaSourceError) {
                    let source = try makeSource(state.parts[index].url)
                    source.setBackground(state.background || index > state.current)
                    state.sources[index] = PartSource(source: source)
                    made.append((index, source))
                } catch {
                    state.sources[index] = PartSource(source: FailedSource(), opened: true, failure: error)
                }
            }
            return made
        }
        for (index, source) in toOpen {
            source.open { [weak self] result in self?.opened(index, result) }
        }
    }

    private func opened(_ index: Int, _ result: Result<ResourceInfo, MediaSourceError>) {
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.sources[index] != nil else { return nil }
            state.sources[index]?.opened = true
            if case .failure(let error) = result { state.sources[index]?.failure = error }
            guard index == state.current else { return nil }
            defer { state.wake = nil }
            return state.wake
        }
        wake?()
    }

    /// Reads the stream forward across part boundaries.
    public func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        read(at: offset, maxLength: maxLength, minLength: maxLength, wake: wake)
    }

    /// Reads the stream forward across part boundaries, answering once `minLength` bytes of the
    /// current part are here (a part's end answers with what is left of it).
    public func read(at offset: Int64, maxLength: Int, minLength: Int, wake: @escaping @Sendable () -> Void)
        -> ReadOutcome
    {
        while true {
            let step = state.withLock { state -> Step in nextStep(&state, offset: offset, wake: wake) }
            switch step {
            case .answer(let outcome): return outcome
            case .read(let index, let source, let local, let limit):
                let wanted = limit.map { Int(min(Int64(maxLength), $0 - local)) } ?? maxLength
                let outcome = source.read(at: local, maxLength: wanted, minLength: min(minLength, wanted), wake: wake)
                guard case .endOfStream = outcome else { return outcome }
                partEnded(index, at: local)
            case .rangeEnded(let index, let local):
                partEnded(index, at: local)
            case .openParts:
                openAhead()
            }
        }
    }

    private enum Step {
        case answer(ReadOutcome)
        /// Read part `index`'s source at `local` (an offset in its resource), up to `limit` (the
        /// end of its range).
        case read(index: Int, source: any ByteSource, local: Int64, limit: Int64?)
        /// Part `index` ended at `local`, an offset in its resource (its byte range is read through).
        case rangeEnded(index: Int, local: Int64)
        /// The reader's part has no source: open it (and those ahead), then read again.
        case openParts
    }

    private func nextStep(_ state: inout State, offset: Int64, wake: @escaping @Sendable () -> Void) -> Step {
        if state.closed { return .answer(.failed(.closed)) }
        if offset < state.starts[state.current] {
            // Back into a part already read: start again from the part holding the offset.
            let index = state.starts.lastIndex { $0 <= offset } ?? 0
            for source in state.sources.values { source.source.close() }
            state.sources = [:]
            state.current = index
            state.starts.removeSubrange((index + 1)...)
            return .openParts
        }
        guard state.current < state.parts.count else { return .answer(.endOfStream) }
        guard let part = state.sources[state.current] else { return .openParts }
        guard part.opened else {
            state.wake = wake
            return .answer(.pending)
        }
        if let failure = part.failure { return .answer(.failed(failure)) }
        let local = offset - state.starts[state.current]
        let range = state.parts[state.current].range
        let start = (range?.lowerBound ?? 0) + local
        if let range, start >= range.upperBound { return .rangeEnded(index: state.current, local: start) }
        return .read(index: state.current, source: part.source, local: start, limit: range?.upperBound)
    }

    /// Part `index` ended: the next one starts at the stream offset where it stopped.
    private func partEnded(_ index: Int, at local: Int64) {
        state.withLock { state in
            guard state.current == index else { return }
            let length = local - (state.parts[index].range?.lowerBound ?? 0)
            state.starts.append(state.starts[index] + length)
            state.current += 1
        }
        openAhead()
    }

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
