import Fetcher
import RangeCache

// The rules live in extensions by what starts them: the opening (`+Opening`), a read
// (`+Reads`), a transfer's event (`+Events`) and the bookkeeping of transfers (`+Transfers`).
// Their shared fields are settable within this module for that reason only: nothing but the
// planner's own files sets them.

/// The download decisions of one cached http resource, as a pure value: given what is cached,
/// the transfers in flight and the read being asked for, it says whether the read is served,
/// waits, ends or fails, and which transfers to start, park, resume or cancel.
///
/// ``HTTPByteSource`` owns one planner under its lock and executes the returned
/// ``Action``s outside it; the planner never touches the network, the disk or a clock
/// (the time is passed in), so every rule is tested alone (`DownloadPlannerTests`).
///
/// The rules, in the order a read meets them:
/// - **Serve** what is here: at least the read's minimum, at most its maximum.
/// - **End of stream** past the known length (cut to where the body ended when an origin
///   overstated it, ``resourceEnds(at:reportedBy:cached:)``), or past the last byte of a stream
///   of unknown length whose download ended cleanly.
/// - **Wait** when a transfer delivers the missing byte soon: within ``waitAheadTime`` at its
///   measured rate (at least ``waitAheadFloor``, at most 512 KiB or 3 s of audio; in the
///   background, for a track prepared ahead that nobody hears yet, always that most). Without
///   Range support only the one stream from byte 0 can bring a byte, so reads wait for it.
/// - A **probe** — a read of at most ``probeMaxRead`` bytes that does not continue the last
///   one (GStreamer's type finders peek at the end and the middle, tag readers read the end,
///   MP4 demuxers jump to a trailing `moov`) — gets its own short request at once, in parallel,
///   at the download's priority; the running download goes on untouched.
/// - Reads that go on from a probe turn it into a **seek**: the running download is set aside
///   at once, and a transfer follows on from the probe's end when the probe is within
///   ``waitAheadTime`` of it at its measured rate (not before: on one link the two would share
///   the bandwidth the reader waits on).
/// - A **seek** (a larger far read, or playback reaching a hole) parks the running transfer —
///   paused, its connection and bytes in flight kept — or cancels it when it would run into
///   held bytes soon, and starts a request at the missing byte at once; a storm opens at most
///   one connection per ``seekConnectionInterval``.
/// - **Tail first**: a resource whose decoder reads its last bytes before its first audio (an
///   Ogg demuxer finds the duration on the last page) opens with a short request for the head
///   and, beside it, one for its last bytes, whose offsets the first response tells; the rest
///   waits until the tail is about to end, so the two share the link with nothing else (a
///   running download cannot be made to stand aside: pausing it leaves the origin sending into
///   the socket's buffers).
/// - Under a **memory bound** (the bytes are kept in memory only), every resource keeps to the
///   window, of unknown length too, and a byte the window dropped is asked for again.
/// - A **preload** of the head (``limitToHead(prefix:tail:)``), with nobody reading: requests
///   cover only the first `prefix` and the last `tail` bytes, and once those are held nothing
///   starts.
/// - No request ever covers a byte that is cached or that another transfer will deliver.
public struct DownloadPlanner: Sendable {
    /// How far ahead of a running transfer a read waits for it, at least.
    public static let waitAheadFloor: Int64 = 16 * 1024
    /// The most a read waits ahead of a transfer, in bytes or ``waitAheadSeconds`` of audio.
    public static let waitAheadLimit: Int64 = 512 * 1024
    /// Seconds of audio ahead of a running transfer a seek may be and still wait for it, at most.
    public static let waitAheadSeconds: Double = 3
    /// A read waits for a transfer that delivers its byte within this time at its measured
    /// rate: about what a new connection costs before its first byte.
    public static let waitAheadTime: Double = 0.3
    /// Bytes a transfer of unmeasured rate counts as delivering within ``waitAheadTime``.
    public static let unmeasuredWaitAhead: Int64 = 32 * 1024
    /// Reads of at most this many bytes that do not continue playback are probes.
    public static let probeMaxRead = 64 * 1024
    /// The least a probe's request asks for (a type finder peeks a few bytes, then a few more).
    public static let probeRequestMinimum: Int64 = 16 * 1024
    /// Probes in flight at once; a further one cancels the oldest.
    public static let maxProbes = 3
    /// Transfers set aside by seeks that stay paused (each holds a connection).
    public static let maxParkedTransfers = 4
    /// A transfer is parked only if no held byte lies less than this far ahead of it: while
    /// paused its connection fills with up to the kernel buffers' worth of bytes (0.3–0.6 MB
    /// on loopback), sent for nothing past such a byte. Closer, it is cancelled.
    public static let parkReach: Int64 = 2 * 1024 * 1024
    /// A seek storm opens at most one connection per this interval; only the latest target counts.
    public static let seekConnectionInterval: Duration = .milliseconds(100)
    /// The head an opening asks for when the tail comes first: what type finding and the
    /// container's first headers need; the first audio may lie further, fetched after the tail.
    public static let headBeforeTail: Int64 = 4096
    /// Where a transfer whose first byte is not known yet (the last bytes of a resource of
    /// unknown length) delivers, until ``learn(_:cached:)``: past every offset.
    static let unknownOffset = Int64.max

    /// The resource facts; nil until the first response (or the cache) tells them.
    public internal(set) var resource: Resource?
    /// The transfers in flight.
    public internal(set) var transfers: [Transfer] = []
    /// The pending read, if a reader waits.
    public internal(set) var waiting: Read?
    /// Whether the pending read is a probe.
    var waitingIsProbe = false
    /// Whether the stream of unknown length was downloaded to its clean end.
    public internal(set) var streamComplete = false
    /// Downloads run at preload priority (the source is prepared ahead of need).
    public internal(set) var background = false
    /// The stream's bytes per second, when the player knows it.
    public internal(set) var byteRate: Double?
    /// Large resources keep only a window ahead of the play head: (threshold, window). What the
    /// source asks for (``setReadAhead(_:cached:)``) within the bound of ``limitToWindow(_:)``.
    public internal(set) var readAhead: (threshold: Int64, window: Int64)?
    /// The bound set when the disk refused bytes, which no later read-ahead lifts.
    var memoryBound: Int64?
    /// Where playback reads: the last read that continued it, or a large one (not a probe).
    public internal(set) var playHead: Int64 = 0
    /// What a download fetches with no reader asking: the resource's first and last bytes (a
    /// preload of its head), after which it stops; nil, the whole resource.
    public internal(set) var scope: (prefix: Int64, tail: Int64)?

    var nextKey = 1
    var lastReadEnd: Int64?
    /// The last request started for a far read (probe or seek) whose reader has not been served
    /// yet: another far read within ``seekConnectionInterval`` means the reader left it unserved,
    /// a storm (a slider dragged), and waits for the interval to end.
    var unservedFarRead: (key: Int, at: ContinuousClock.Instant)?
    var seekScheduled = false
    /// The opening's tail (see "tail first"): the bytes the decoder reads at the end before its
    /// first audio, and the key of their request once it runs. The rest of the download waits
    /// while it does, until it is about to end.
    var tailFirst: (length: Int64, key: Int?)?
    /// The probe the reader reads on from: a transfer follows on from its end once it is about
    /// to end (see ``followProbeIfDue(cached:)``).
    var followedProbe: Int?
    /// Whether the rest of the download waits for the opening's tail: until the tail's request
    /// is within ``waitAheadTime`` of its end at its measured rate, about what a new request
    /// takes to bring its first byte. Then the rest's request leaves, and its first bytes come
    /// as the tail's last do, instead of one round trip after them.
    public var isAwaitingTail: Bool {
        guard let key = tailFirst?.key else { return false }
        guard let tail = transfers.first(where: { $0.key == key }), let end = tail.end, let rate = tail.rate,
            tail.next != Self.unknownOffset
        else { return true }
        return Double(end - tail.next) > rate * Self.waitAheadTime
    }

    /// Creates a planner; with `readAhead`, resources above its threshold are fetched only a
    /// window ahead of the play head.
    public init(readAhead: (threshold: Int64, window: Int64)? = nil) {
        self.readAhead = readAhead
    }

    // MARK: Facts

    /// The bytes have nowhere to go but memory (the disk refused them): every resource, whatever
    /// its size, is fetched at most `window` ahead of the play head from now on.
    public mutating func limitToWindow(_ window: Int64) {
        memoryBound = min(window, memoryBound ?? window)
        readAhead = (threshold: 0, window: min(window, readAhead?.window ?? window))
    }

    /// Sets the read-ahead (a metered network narrows it, its end widens it again), within the
    /// memory bound. A transfer beyond a narrower window stops at its next bytes (``received``);
    /// with a wider one or none, an idle download goes on at once.
    public mutating func setReadAhead(_ wanted: (threshold: Int64, window: Int64)?, cached: RangeSet) -> [Action] {
        readAhead = memoryBound.map { (threshold: 0, window: min($0, wanted?.window ?? $0)) } ?? wanted
        guard main == nil, resource != nil else { return [] }
        return continueDownload(cached: cached)
    }

    /// Fetches only the first `prefix` and the last `tail` bytes (a preload of the head, with
    /// nobody reading): no download goes past them, and once they are held none starts.
    public mutating func limitToHead(prefix: Int64, tail: Int64) {
        scope = (max(0, prefix), max(0, tail))
    }

    /// The parts of a resource of `length` (nil: unknown) that downloads fetch: all of it, or
    /// the scope's head and tail (only the head while the length is unknown).
    func fetchedParts(length: Int64?) -> [Range<Int64>] {
        guard let scope else { return length.map { [0..<$0] } ?? [0..<Int64.max] }
        guard let length else { return scope.prefix > 0 ? [0..<scope.prefix] : [] }
        let head = 0..<min(scope.prefix, length)
        let tail = max(head.upperBound, length - scope.tail)..<length
        return [head, tail].filter { !$0.isEmpty }
    }

    /// Whether every byte the scope names is held (always false without a scope).
    public func holdsScope(cached: RangeSet) -> Bool {
        scope != nil && fetchedParts(length: resource?.length).allSatisfy { cached.contains($0) }
    }

    /// The resource is known (from the cache or the first response).
    public mutating func setResource(_ resource: Resource) {
        self.resource = resource
    }

    /// Sets the stream's byte rate (zero or less forgets it).
    public mutating func setByteRate(_ bytesPerSecond: Double) {
        byteRate = bytesPerSecond > 0 ? bytesPerSecond : nil
    }

    /// Prepared ahead of need, nobody listens yet: a read waits for the download whenever it
    /// reaches the byte within ``waitAheadLimit`` (or 3 s of audio), so nothing crosses the network
    /// twice. Playing again, a waiting read is planned anew under the playing rules.
    public mutating func setBackground(_ background: Bool, cached: RangeSet, now: ContinuousClock.Instant) -> [Action] {
        self.background = background
        guard !background, let main = main else { return [] }
        return [.setPriority(key: main.key, .readAhead)] + replanWaiting(cached: cached, now: now)
    }

    /// The transfer's measured rate. A reader that waits for this transfer only because its rate
    /// was not known yet gets its own request once the rate says the wait is long.
    public mutating func setRate(_ rate: Double, of key: Int, cached: RangeSet, now: ContinuousClock.Instant)
        -> [Action]
    {
        guard let index = index(of: key) else { return [] }
        transfers[index].rate = rate
        if followedProbe == key { return followProbeIfDue(cached: cached) }
        if tailFirst?.key == key { return isAwaitingTail ? [] : continueDownload(cached: cached) }
        guard main?.key == key else { return [] }
        return replanWaiting(cached: cached, now: now)
    }

    /// A reader waiting for the main transfer that no longer counts as reaching it soon gets
    /// its own request.
    mutating func replanWaiting(cached: RangeSet, now: ContinuousClock.Instant) -> [Action] {
        guard let waiting, let main else { return [] }
        let missing = waiting.offset + cached.contiguousLength(from: waiting.offset)
        guard main.reaches(missing, within: .max), !main.reaches(missing, within: waitAhead(for: main)),
            !transfers.contains(where: { $0.role == .probe && $0.reaches(missing, within: .max) })
        else { return [] }
        return arrange(for: missing, isProbe: waitingIsProbe, continuesPlayback: false, cached: cached, now: now)
    }

    /// The main transfer, if one runs.
    public var main: Transfer? { transfers.first { $0.role == .main } }

    /// Whether any download runs.
    public var isDownloading: Bool { !transfers.isEmpty }
}
