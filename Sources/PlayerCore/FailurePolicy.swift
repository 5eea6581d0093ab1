import EngineAPI

/// What the player does when a track fails, decided from the failure's kind alone, so the
/// rules can be tested as a table without an engine or a network.
///
/// - A track that will never play (missing, not audio, no decoder, HTTP 404) is skipped at once.
/// - A failure that another try may cure (a server error, a cut connection, an origin that
///   refuses connections while the network is up) is retried once where it stopped, then skipped.
/// - With the network down, skipping would run through the whole queue: the player keeps the
///   track and its place and tries again when the network returns.
/// - A new version of the track, found just after its play began from the cached copy, starts
///   it again at once where that play began (once; a second time counts as a failure that may pass).
/// - A lost audio output is no track's fault: skipping would run through the queue in silence.
///   The player pauses the track at its place; Play tries the output again.
/// - Playback stops only when every track of the queue has failed in one pass; any track
///   that starts playing begins a new pass.
public struct FailurePolicy: Sendable, Equatable {
    /// What to do about one failure.
    public enum Action: Sendable, Equatable {
        /// Load the same track again at the place it failed, after `delay`.
        case retry(after: Duration)
        /// Load the same track again at once, where its play began: nothing failed for the listener.
        case restart
        /// Keep the track and its place; load it again once the network is back.
        case waitForNetwork
        /// Keep the track and its place, paused: the output failed, and Play tries it again.
        case pauseForOutput
        /// Go on with the next track in play order.
        case skip
        /// Every track of the queue failed in this pass: stop.
        case stop
    }

    /// How long a retry waits, so a server that just dropped us is not asked again at once.
    public let retryDelay: Duration
    /// The track retried last: a second failure of it is not retried again.
    private var retried: TrackID?
    /// Tracks given up on since a track last started.
    private var givenUp: Set<TrackID> = []

    /// Creates the policy with no failure seen.
    public init(retryDelay: Duration) {
        self.retryDelay = retryDelay
    }

    /// Decides about `track` failing with `kind`; `networkUp` says whether a connection could be
    /// made at all, `queue` holds every entry of the queue.
    public mutating func failed(
        _ track: TrackID, kind: FailureKind, networkUp: Bool, queue: Set<TrackID>
    ) -> Action {
        switch kind {
        case .outputLost:
            return .pauseForOutput
        case .unreachable where !networkUp:
            return .waitForNetwork
        case .newVersion where retried != track:
            retried = track
            return .restart
        case .transient, .unreachable, .newVersion:
            if retried != track {
                retried = track
                return .retry(after: retryDelay)
            }
        case .notFound, .unsupported, .corrupt:
            break
        }
        retried = nil
        givenUp.insert(track)
        return queue.isSubset(of: givenUp) ? .stop : .skip
    }

    /// A track started playing (every track may be retried again, and a new pass begins), or
    /// the queue was replaced (what failed in it no longer counts).
    public mutating func reset() {
        retried = nil
        givenUp = []
    }
}

extension FailureKind {
    /// Whether another server of the same stream (a station's mirror) may play where this one
    /// failed: anything the server did, not the output or a version change.
    var mayDifferOnAMirror: Bool {
        switch self {
        case .transient, .notFound, .unsupported, .corrupt, .unreachable: true
        case .newVersion, .outputLost: false
        }
    }
}
