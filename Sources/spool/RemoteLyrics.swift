import Fetcher
import FoundationEssentials
import PlayerCore
import SpoolLog
import Synchronization

/// The `.lrc` file beside an http(s) track (`…/song.mp3` → `…/song.lrc`), fetched whole in the
/// background through the fetcher when the MPRIS layer asks, once per daemon run: a file found
/// is kept in memory, and a missing one (404 and other lasting 4xx) is not asked for again
/// within `revalidate.interval`.
final class RemoteLyrics: Sendable {
    /// How many siblings' answers are remembered.
    static let memory = 256

    private let fetcher: Fetcher
    private let missInterval: Duration
    private let known = Mutex<[String: (text: String?, at: ContinuousClock.Instant)]>([:])
    private let log = Logger(label: "lyrics")

    /// Fetches with `fetcher`; a missing file is remembered for `missInterval`.
    init(fetcher: Fetcher, missInterval: Duration) {
        self.fetcher = fetcher
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

    /// The text of the sibling `.lrc` of `track` (decoded as ``LyricsFile`` decodes files), or nil
    /// when there is none or it could not be fetched.
    func lyrics(for track: URL) async -> String? {
        guard let sibling = Self.siblingURL(of: track) else { return nil }
        let key = sibling.absoluteString
        let now = ContinuousClock.now
        if let answer = known.withLock({ $0[key] }), answer.text != nil || now - answer.at < missInterval {
            return answer.text
        }
        do {
            let data = try await fetcher.fetchWhole(sibling, limit: LyricsFile.maximumSize)
            let text = data.isEmpty ? nil : LyricsFile.decode([UInt8](data))
            remember(text, for: key)
            return text
        } catch {
            if case .httpStatus(let status) = error, (400..<500).contains(status), status != 408, status != 429 {
                remember(nil, for: key)
            } else {
                log.debug("no lyrics file for \(track.lastPathComponent): \(error)")
            }
            return nil
        }
    }

    private func remember(_ text: String?, for key: String) {
        known.withLock { known in
            if known.count >= Self.memory { known.removeAll() }
            known[key] = (text, ContinuousClock.now)
        }
    }
}
