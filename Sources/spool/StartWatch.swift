import PlayerCore

/// What `spool play` learns about the first track while it waits for it to start or fail.
enum StartObservation: Equatable {
    /// `org.spool.Spool1.LastError` was signalled with this value.
    case lastError(String)
    /// `Metadata` was signalled with this track id.
    case track(String)
    /// `PlaybackStatus` was signalled with this value.
    case status(String)
    /// `Position` was sampled (it is never signalled, as MPRIS prescribes), in microseconds.
    case position(Int64)
    /// `LastError` as read after the track stopped being current without a signalled error.
    case errorAfterwards(String)
    /// The time allowed ran out.
    case timeout
}

/// What `spool play` does next.
enum StartVerdict: Equatable {
    /// Keep waiting.
    case waiting
    /// Read `LastError` and report it as ``StartObservation/errorAfterwards(_:)``.
    case readLastError
    /// Audio of the first track is flowing (or a listener took over): exit 0.
    case started
    /// The first track failed: this one line, exit 2.
    case failed(String)
    /// Print this line (entries a list left out) and keep waiting: the rest still plays.
    case warning(String)
    /// Neither start nor failure within the time allowed: exit 0 with a note.
    case undecided
}

/// Decides from D-Bus observations whether the first track of a `spool play` started or failed.
/// Started: its position advanced. Failed: an error was signalled and the player then moved on
/// from the track (a retry that succeeds counts as a start), or the time ran out after an error.
/// The player retries a failed track before it moves on, so an error alone is not yet a verdict.
struct StartWatch {
    /// The track id MPRIS reserves for "no track".
    static let noTrack = "/org/mpris/MediaPlayer2/TrackList/NoTrack"
    /// How far the position must advance to count as playing: more than a seek's rounding.
    static let advance: Int64 = 50_000

    /// The track id that must start (while ``replacing``, the one that was current before).
    private(set) var track: String
    /// Its name for messages.
    private(set) var name: String
    /// The queue is replaced only later (a remote playlist is being fetched): the first new
    /// track id signalled is the one to watch; an error before it means the playlist failed.
    private(set) var replacing: Bool
    /// The first position sampled.
    private(set) var baseline: Int64?
    /// The error signalled since the call, if any.
    private(set) var error: String?
    /// The file names of the playlists being fetched: while ``replacing``, only an error that
    /// names one of them is the playlist's (the daemon writes "NAME: why"); any other is about
    /// the queue before, a failure that was under way when the call came.
    private let playlistNames: [String]
    /// The warnings already shown (a warning stays in `LastError` and may be signalled again).
    private var warned: Set<String> = []

    /// Watches `track` (shown as `name`), or with `replacing` the track that replaces it once
    /// the playlists `playlistNames` have arrived.
    init(track: String, name: String, replacing: Bool = false, playlistNames: [String] = []) {
        self.track = track
        self.name = name
        self.replacing = replacing
        self.playlistNames = playlistNames
    }

    /// The verdict after `observation`.
    mutating func observe(_ observation: StartObservation) -> StartVerdict {
        // A list that left entries out is no failure: what it kept plays.
        if case .lastError(let text) = observation, PlaylistEntries.isWarning(text) {
            return warned.insert(text).inserted ? .warning(text) : .waiting
        }
        if replacing {
            switch observation {
            case .track(let id) where id != track && id != Self.noTrack:
                (track, name, replacing) = (id, "the first track", false)
                return .waiting
            case .lastError(let text) where !text.isEmpty && namesAPlaylist(text):
                return .failed(text)
            case .timeout:
                return .undecided
            default:
                return .waiting
            }
        }
        switch observation {
        case .lastError(let text):
            if !text.isEmpty { error = text }
            return .waiting
        case .position(let micros):
            guard let baseline else {
                self.baseline = micros
                return .waiting
            }
            return micros - baseline >= Self.advance ? .started : .waiting
        case .track(let id):
            // Ids grow: a smaller one is the queue before this play, signalled late.
            if id == track || (Self.number(id) ?? .max) < (Self.number(track) ?? 0) { return .waiting }
            return moved()
        case .status(let status):
            switch status {
            case "Stopped": return moved()
            case "Paused": return .started  // a listener paused it: not ours to wait for
            default: return .waiting
            }
        case .errorAfterwards(let text):
            let error = PlaylistEntries.isWarning(text) ? "" : text
            return .failed(error.isEmpty ? "\(name) stopped before it started" : error)
        case .timeout:
            return error.map(StartVerdict.failed) ?? .undecided
        }
    }

    /// Whether `error` is about one of the playlists being fetched (any error is, when their
    /// names are not known).
    private func namesAPlaylist(_ error: String) -> Bool {
        playlistNames.isEmpty || playlistNames.contains { error.hasPrefix($0 + ": ") }
    }

    /// The number at the end of a track id (`/org/spool/Track/12`).
    private static func number(_ id: String) -> UInt64? {
        id.split(separator: "/").last.flatMap { UInt64($0) }
    }

    /// The player left the track before its position advanced.
    private func moved() -> StartVerdict {
        error.map(StartVerdict.failed) ?? .readLastError
    }
}
