import Basics
import EngineAPI
import FoundationEssentials

/// Settings of preloading: which upcoming tracks are prepared, when, and how much of each.
public struct PreloadSettings: Sendable, Equatable {
    /// How many upcoming tracks (in play order) are prepared.
    public var count = 2
    /// Preparation starts when less than this remains of the current track (or once it is downloaded).
    public var trigger: Duration = .seconds(60)
    /// Most bytes planned for upcoming tracks, all of them together.
    public var budget: Int64 = 512 << 20
    /// Most preload jobs running at once.
    public var concurrency = 2
    /// Preloading pauses while the current track has less than this cached ahead of the play head,
    /// so its own download gets all the bandwidth.
    public var lowWater: Duration = .seconds(10)
    /// The engine is handed the next track (its source opens, its download continues) at the
    /// latest this long before the current one ends, whatever else holds, so the gapless
    /// hand-over (about 1 s before the end) always finds it ready.
    public var handOverLead: Duration = .seconds(10)
    /// How often the player looks at the clock and the downloads while a track is loaded.
    public var checkInterval: Duration = .milliseconds(500)
    /// The smallest prefix fetched of an upcoming track.
    public var prefixMinimum: Int64 = 512 << 10
    /// The prefix covers at least this much audio, when the byte rate can be estimated.
    public var prefixAudio: Duration = .seconds(15)
    /// The largest prefix fetched of an upcoming track.
    public var prefixMaximum: Int64 = 2 << 20
    /// The end of an upcoming track that is fetched with its prefix (trailing tags, an MP4 `moov`).
    public var tail: Int64 = 64 << 10
    /// On a metered network the following track's head is fetched only once less than this
    /// remains of the current one (or `trigger`, when shorter), and nothing else ahead.
    public var meteredLead: Duration = .seconds(30)

    /// The defaults.
    public init() {}
}

/// What the cache holds of one track and whether a download of it runs, as the preloader sees it.
public struct TrackDownload: Sendable, Equatable {
    /// A local file: nothing to fetch, always complete.
    public var local = false
    /// The resource's length, once an origin said it.
    public var length: Int64?
    /// The byte ranges cached, in order, not overlapping.
    public var ranges: [Range<Int64>] = []
    /// Whether a transfer for it is running (playback, read-ahead or a preload job).
    public var downloading = false

    /// Creates a description; the defaults describe a track with nothing cached.
    public init(local: Bool = false, length: Int64? = nil, ranges: [Range<Int64>] = [], downloading: Bool = false) {
        self.local = local
        self.length = length
        self.ranges = ranges
        self.downloading = downloading
    }

    /// A local file.
    public static let localFile = TrackDownload(local: true)

    /// Whether every byte is here (a local file always is).
    public var complete: Bool {
        if local { return true }
        guard let length else { return false }
        return contains(0..<length)
    }

    /// Whether every byte of `range` is cached.
    public func contains(_ range: Range<Int64>) -> Bool {
        range.isEmpty || ranges.contains { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }
    }

    /// How many bytes from `offset` on are cached without a gap.
    public func contiguous(from offset: Int64) -> Int64 {
        ranges.first { $0.contains(offset) }.map { $0.upperBound - offset } ?? 0
    }

    /// Bytes cached.
    public var cachedBytes: Int64 { ranges.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } }
}

/// The player's view of the moment, from which ``PreloadPolicy`` decides.
public struct PreloadSituation: Sendable, Equatable {
    /// One upcoming track.
    public struct Upcoming: Sendable, Equatable {
        /// The queue entry.
        public var id: TrackID
        /// What to fetch.
        public var url: URL
        /// What the cache holds of it.
        public var download: TrackDownload
        /// Its length in time, when known (from an earlier play); sizes the prefix.
        public var duration: Duration?

        /// Creates an upcoming track.
        public init(id: TrackID, url: URL, download: TrackDownload, duration: Duration? = nil) {
            self.id = id
            self.url = url
            self.download = download
            self.duration = duration
        }
    }

    /// The current track's download.
    public var current: TrackDownload
    /// The play head, when the engine knows it.
    public var position: Duration?
    /// The current track's length, when known.
    public var duration: Duration?
    /// Playback rate: at 2× the remaining time passes twice as fast.
    public var rate: Double
    /// The preload window: upcoming tracks in play order (at most `count`).
    public var window: [Upcoming]
    /// The entry the engine plays after the current one without a gap (the current one again
    /// under loop Track), if any.
    public var following: Upcoming?
    /// The network is metered (``MeteredNetwork``): only what the gapless hand-over needs.
    public var metered: Bool

    /// Creates a situation.
    public init(
        current: TrackDownload, position: Duration?, duration: Duration?, rate: Double = 1, window: [Upcoming],
        following: Upcoming?, metered: Bool = false
    ) {
        self.current = current
        self.position = position
        self.duration = duration
        self.rate = rate
        self.window = window
        self.following = following
        self.metered = metered
    }
}

/// What to do now: the decision ``PreloadPolicy`` takes and a ``Preloader`` carries out.
public struct PreloadPlan: Sendable, Equatable {
    /// Where one upcoming track stands.
    public enum Stage: String, Sendable, Equatable {
        /// Nothing fetched yet: the trigger has not fired, or the budget is spent.
        case waiting
        /// Its head is due but waits while the current track has too little ahead.
        case paused
        /// Its prefix and tail are being fetched.
        case fetchingHead = "fetching-head"
        /// Its prefix and tail are cached: it starts with no network.
        case headReady = "head-ready"
        /// Handed to the engine for the gapless hand-over; the rest of it downloads.
        case whole
        /// Every byte is here.
        case complete
    }

    /// One upcoming track and what to do about it.
    public struct Item: Sendable, Equatable {
        /// The queue entry.
        public var id: TrackID
        /// What to fetch.
        public var url: URL
        /// Where it stands.
        public var stage: Stage
        /// The bytes from the start to fetch.
        public var prefix: Int64
        /// The bytes at the end to fetch.
        public var tail: Int64

        /// Creates an item.
        public init(id: TrackID, url: URL, stage: Stage, prefix: Int64, tail: Int64) {
            self.id = id
            self.url = url
            self.stage = stage
            self.prefix = prefix
            self.tail = tail
        }
    }

    /// Every track of the window, in play order.
    public var items: [Item] = []
    /// The trigger fired: upcoming tracks are being prepared.
    public var triggered = false
    /// Preloading waits for the current track's download.
    public var paused = false
    /// Give the engine the following track now (its source opens and downloads the rest).
    public var handOverNext = false

    /// Nothing to do (no track loaded).
    public init() {}

    /// The heads to fetch now, in order.
    public var jobs: [Item] { items.filter { $0.stage == .fetchingHead } }
}

/// Decides WHAT of the upcoming tracks is fetched and WHEN; pure, so it is tested with
/// plain values.
///
/// - Nothing happens before the trigger: the current track downloaded, or less than
///   `trigger` of it left to play.
/// - Then every track of the window gets its head: the first max(512 KiB, 15 s of audio),
///   at most 2 MiB, and its last 64 KiB (tags, `moov`), within the budget.
/// - The following track is handed to the engine (whose source then downloads the rest of
///   it) once the current one is complete with no transfer running and the head is in;
///   or, whatever holds, `handOverLead` before the end, so the gapless hand-over is never late.
/// - While the current track has less than `lowWater` cached ahead of the play head, heads wait.
/// - On a metered network only what the gapless hand-over needs: nothing until less than
///   `meteredLead` (or `trigger`, when shorter) remains, whether or not the current track is
///   downloaded; then the following track's head alone; the hand-over itself (which lets the
///   engine's source read ahead into that track) only `handOverLead` before the end.
public struct PreloadPolicy: Sendable, Equatable {
    /// The settings.
    public var settings: PreloadSettings

    /// Creates a policy.
    public init(settings: PreloadSettings = PreloadSettings()) {
        self.settings = settings
    }

    /// The plan for `situation`.
    public func plan(_ situation: PreloadSituation) -> PreloadPlan {
        var plan = PreloadPlan()
        let remaining = remainingTime(situation)
        let metered = situation.metered
        let trigger = metered ? min(settings.trigger, settings.meteredLead) : settings.trigger
        plan.triggered = (!metered && situation.current.complete) || remaining.map { $0 < trigger } == true
        plan.paused =
            plan.triggered && !situation.current.complete
            && bufferedAhead(situation).map { $0 < settings.lowWater } == true
        let urgent = remaining.map { $0 < settings.handOverLead } == true
        if let following = situation.following, plan.triggered {
            let ready = following.download.complete || isHeadReady(following)
            plan.handOverNext =
                urgent || (!metered && situation.current.complete && !situation.current.downloading && ready)
        }
        var spent: Int64 = 0
        for upcoming in situation.window {
            let prefix = prefixLength(of: upcoming)
            let tail = upcoming.download.length.map { min(settings.tail, $0) } ?? settings.tail
            var item = PreloadPlan.Item(id: upcoming.id, url: upcoming.url, stage: .waiting, prefix: prefix, tail: tail)
            let handedOver = plan.handOverNext && upcoming.id == situation.following?.id
            let cost =
                handedOver
                ? (upcoming.download.length ?? prefix + tail) : min(prefix + tail, upcoming.download.length ?? .max)
            if upcoming.download.complete {
                item.stage = .complete
            } else if !plan.triggered {
                item.stage = .waiting
            } else if handedOver {
                item.stage = .whole
                spent += cost  // the engine downloads it whatever the budget: the hand-over needs it
            } else if isHeadReady(upcoming) {
                item.stage = .headReady
                spent += cost
            } else if metered, upcoming.id != situation.following?.id {
                item.stage = .waiting  // the hand-over needs the following track's head alone
            } else if spent + cost > settings.budget {
                item.stage = .waiting
            } else {
                item.stage = plan.paused ? .paused : .fetchingHead
                spent += cost
            }
            plan.items.append(item)
        }
        return plan
    }

    /// The prefix to fetch of `upcoming`: max(prefixMinimum, prefixAudio at its byte rate), at
    /// most prefixMaximum (and the whole when shorter). Without a known length and duration
    /// the byte rate is unknown: prefixMinimum.
    public func prefixLength(of upcoming: PreloadSituation.Upcoming) -> Int64 {
        var prefix = settings.prefixMinimum
        if let length = upcoming.download.length, let duration = upcoming.duration, duration > .zero {
            let bytesPerSecond = Double(length) / seconds(duration)
            let audio = Int64((bytesPerSecond * seconds(settings.prefixAudio)).rounded(.up))
            prefix = min(settings.prefixMaximum, max(settings.prefixMinimum, audio))
        }
        return upcoming.download.length.map { min($0, prefix) } ?? prefix
    }

    /// Whether the prefix and tail of `upcoming` are cached.
    public func isHeadReady(_ upcoming: PreloadSituation.Upcoming) -> Bool {
        let download = upcoming.download
        if download.complete { return true }
        guard let length = download.length else { return false }
        let prefix = prefixLength(of: upcoming)
        return download.contains(0..<prefix) && download.contains(max(0, length - settings.tail)..<length)
    }

    /// Wall-clock time until the current track ends, when position and duration are known.
    public func remainingTime(_ situation: PreloadSituation) -> Duration? {
        guard let duration = situation.duration, let position = situation.position else { return nil }
        return max(.zero, duration - position) / max(situation.rate, 0.01)
    }

    /// Wall-clock time of audio cached past the play head, estimated from the byte rate;
    /// nil when length, duration or position is unknown.
    public func bufferedAhead(_ situation: PreloadSituation) -> Duration? {
        let current = situation.current
        guard let length = current.length, length > 0, let duration = situation.duration, duration > .zero,
            let position = situation.position
        else { return nil }
        let fraction = min(1, max(0, seconds(position) / seconds(duration)))
        let head = min(length - 1, Int64(Double(length) * fraction))
        let ahead = Double(current.contiguous(from: head)) / Double(length) * seconds(duration)
        return .seconds(ahead / max(situation.rate, 0.01))
    }

    private func seconds(_ duration: Duration) -> Double {
        duration.inSeconds
    }
}

/// Carries out preload plans (HOW: requests, cache writes, cancellation) and tells the player
/// what the cache holds. Implemented by the executable, which owns the cache and the fetcher.
public protocol Preloader: Sendable {
    /// What the cache holds of `url` and whether it is downloading.
    func download(of url: URL) -> TrackDownload
    /// Makes the running jobs match `plan`: fetches the heads of ``PreloadPlan/jobs`` (a few
    /// at a time, in order) and cancels at once every job no longer in it; bytes stay cached.
    func apply(_ plan: PreloadPlan)
    /// Sets what to call when a job ends, so the player plans again.
    func setChangeHandler(_ handler: @escaping @Sendable () -> Void)
}
