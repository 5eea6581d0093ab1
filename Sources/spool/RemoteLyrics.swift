import Basics
import Dispatch
import Fetcher
import FoundationEssentials
import PlayerCore
import RangeCache
import Synchronization

/// The `.lrc` file beside an http(s) track (`…/song.mp3` → `…/song.lrc`). It costs one request
/// per track, ever: it is fetched in the background with the track's preload (so a change to
/// a preloaded track sends nothing), or when the track plays if it was not preloaded; a file
/// found is kept in the range cache beside the audio (a replay, even after a restart, sends
/// nothing). A missing one (404 and other lasting 4xx) is not asked for again within
/// `revalidate.interval`, and the track's cache entry remembers it for the version it holds:
/// it is asked for again only once the track itself has changed. Concurrent asks
/// for one file share one request, which gives way to the bytes playback waits for (a start,
/// a seek).
final class RemoteLyrics: Sendable {
    /// How many answers are remembered in memory (the cache keeps the files themselves).
    static let memory = 256

    private struct State {
        /// Answers by sibling URL: the text, or nil for a file that is missing.
        var known: [String: (text: String?, at: ContinuousClock.Instant)] = [:]
        var running: [String: Task<String?, Never>] = [:]
        /// Missing siblings the cache does not remember yet: their track's version was unknown
        /// when the answer came (its own request was still out). The next ask records them.
        var unrecorded: Set<String> = []
    }

    private let fetcher: Fetcher
    private let cache: RangeCache?
    private let namespace: String
    private let missInterval: Duration
    private let state = Mutex(State())
    /// The cache's files are read and written here, off the cooperative pool.
    private let disk = DispatchQueue(label: "spool.lyrics.disk")
    private let log = Logger(label: "lyrics")

    /// Fetches with `fetcher` and keeps files found in `cache` (under `namespace`) when there is
    /// one; a missing file is remembered for `missInterval`.
    init(fetcher: Fetcher, cache: RangeCache?, namespace: String, missInterval: Duration) {
        self.fetcher = fetcher
        self.cache = cache
        self.namespace = namespace
        self.missInterval = missInterval
    }

    /// The sibling `.lrc` of `track`: its path's extension replaced (query kept); nil for a URL
    /// that is not http(s) or whose last path component has no extension.
    static func siblingURL(of track: URL) -> URL? {
        guard let scheme = track.scheme?.lowercased(), scheme == "http" || scheme == "https",
            !track.pathExtension.isEmpty, track.pathExtension.lowercased() != "lrc"
        else { return nil }
        return track.deletingPathExtension().appendingPathExtension("lrc")
    }

    /// Starts getting the sibling of `track` in the background unless its answer is known or on
    /// its way; returns at once.
    func prefetch(for track: URL) {
        guard let sibling = Self.siblingURL(of: track) else { return }
        _ = answer(for: sibling, of: track)
    }

    /// The text of the sibling `.lrc` of `track` (decoded as ``LyricsFile`` decodes files), or nil
    /// when there is none or it could not be fetched.
    func lyrics(for track: URL) async -> String? {
        guard let sibling = Self.siblingURL(of: track) else { return nil }
        switch answer(for: sibling, of: track) {
        case .known(let text): return text
        case .coming(let task): return await task.value
        }
    }

    private enum Answer {
        case known(String?)
        case coming(Task<String?, Never>)
    }

    private func answer(for sibling: URL, of track: URL) -> Answer {
        let key = sibling.absoluteString
        let now = ContinuousClock.now
        return state.withLock { state -> Answer in
            if let known = state.known[key], known.text != nil || now - known.at < missInterval {
                if state.unrecorded.remove(key) != nil {
                    Task { [self] in await self.storeMissing(sibling, of: track) }
                }
                return .known(known.text)
            }
            if let running = state.running[key] { return .coming(running) }
            let task = Task { [self] in await self.obtain(sibling, of: track) }
            state.running[key] = task
            return .coming(task)
        }
    }

    /// The cache's copy, else the origin's answer; remembered either way.
    private func obtain(_ sibling: URL, of track: URL) async -> String? {
        let key = sibling.absoluteString
        var text: String?
        var lasting = true
        switch await stored(sibling, of: track) {
        case .text(let stored):
            text = stored
        case .missing:
            log.debug("no lyrics file at \(loggable(sibling)) (known missing for this version of the track)")
        case nil:
            do {
                let data = try await fetcher.fetchWhole(sibling, limit: LyricsFile.maximumSize, priority: .readAhead)
                let bytes = [UInt8](data)
                if LyricsFile.isText(bytes) {
                    text = LyricsFile.decode(bytes)
                    await store(bytes, for: sibling)
                } else if !bytes.isEmpty {
                    log.info("\(loggable(sibling)) is not text: no lyrics from it")
                }
            } catch {
                if case .httpStatus(let status) = error, (400..<500).contains(status), status != 408, status != 429 {
                    log.debug("no lyrics file at \(loggable(sibling)) (HTTP \(status))")
                    await storeMissing(sibling, of: track)
                } else {
                    lasting = false
                    log.debug("no lyrics file at \(loggable(sibling)): \(error)")
                }
            }
        }
        state.withLock { state in
            state.running[key] = nil
            guard lasting else { return }
            if state.known.count >= Self.memory { state.known.removeAll() }
            state.known[key] = (text, ContinuousClock.now)
        }
        return text
    }

    /// What the cache knows of a sibling.
    private enum Stored {
        /// The whole file.
        case text(String)
        /// It was missing for the version of the track the cache holds now.
        case missing
    }

    /// What the cache holds for `sibling` of `track`: the whole file, or the track's entry saying
    /// that the sibling is missing for the version it holds (a new version of the track forgets
    /// that); nil when the origin must be asked. The track's entry is read from the index's
    /// snapshot: no handle is opened.
    private func stored(_ sibling: URL, of track: URL) async -> Stored? {
        guard let cache else { return nil }
        return await disk.perform {
            if cache.info(for: cache.key(for: track), namespace: self.namespace)?.metadata.sidecarMissing == true {
                return .missing
            }
            guard let entry = try? cache.entry(for: cache.key(for: sibling), namespace: self.namespace, create: false)
            else { return nil }
            defer { entry.closeInBackground() }
            guard let length = entry.metadata.validator.length, length > 0, length <= LyricsFile.maximumSize,
                entry.contiguousLength(from: 0) >= length, let data = entry.read(at: 0, maxLength: Int(length))
            else { return nil }
            return .text(LyricsFile.decode([UInt8](data)))
        }
    }

    /// Records on the cache entry of `track` that `sibling` is missing for the version it holds,
    /// or, when its own response has not come yet, for the version it is bound to next; when
    /// neither can be (no entry, an origin naming no version), the next ask tries again.
    private func storeMissing(_ sibling: URL, of track: URL) async {
        guard let cache else { return }
        await disk.perform {
            do {
                if try cache.markSidecarMissing(of: cache.key(for: track), namespace: self.namespace) {
                    self.log.debug("the cache remembers that \(loggable(sibling)) is missing")
                    return
                }
            } catch {
                self.log.info("the missing lyrics of \(loggable(sibling)) were not remembered in the cache: \(error)")
            }
            self.state.withLock { _ = $0.unrecorded.insert(sibling.absoluteString) }
        }
    }

    /// Keeps `bytes` as `sibling`'s whole file in the cache.
    private func store(_ bytes: [UInt8], for sibling: URL) async {
        guard let cache, !bytes.isEmpty else { return }
        await disk.perform {
            do {
                let entry = try cache.entry(for: sibling, namespace: self.namespace)
                defer { entry.closeInBackground() }
                _ = try entry.setMetadata(
                    EntryMetadata(
                        url: sibling, validator: ResourceVersion(length: Int64(bytes.count)), contentType: "text/plain")
                )
                try entry.write(Data(bytes), at: 0)
            } catch {
                self.log.info("the lyrics of \(loggable(sibling)) were not kept in the cache: \(error)")
            }
        }
    }
}
