import Fetcher
import RangeCache

// One file though past 500 lines: the rules below read and change the same few fields, which
// stay private to them here; split across files, every one would need an internal setter.

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
    public private(set) var resource: Resource?
    /// The transfers in flight.
    public private(set) var transfers: [Transfer] = []
    /// The pending read, if a reader waits.
    public private(set) var waiting: Read?
    /// Whether the pending read is a probe.
    private var waitingIsProbe = false
    /// Whether the stream of unknown length was downloaded to its clean end.
    public private(set) var streamComplete = false
    /// Downloads run at preload priority (the source is prepared ahead of need).
    public private(set) var background = false
    /// The stream's bytes per second, when the player knows it.
    public private(set) var byteRate: Double?
    /// Large resources keep only a window ahead of the play head: (threshold, window). What the
    /// source asks for (``setReadAhead(_:cached:)``) within the bound of ``limitToWindow(_:)``.
    public private(set) var readAhead: (threshold: Int64, window: Int64)?
    /// The bound set when the disk refused bytes, which no later read-ahead lifts.
    private var memoryBound: Int64?
    /// Where playback reads: the last read that continued it, or a large one (not a probe).
    public private(set) var playHead: Int64 = 0

    private var nextKey = 1
    private var lastReadEnd: Int64?
    /// The last request started for a far read (probe or seek) whose reader has not been served
    /// yet: another far read within ``seekConnectionInterval`` means the reader left it unserved,
    /// a storm (a slider dragged), and waits for the interval to end.
    private var unservedFarRead: (key: Int, at: ContinuousClock.Instant)?
    private var seekScheduled = false
    /// The opening's tail (see "tail first"): the bytes the decoder reads at the end before its
    /// first audio, and the key of their request once it runs. The rest of the download waits
    /// while it does, until it is about to end.
    private var tailFirst: (length: Int64, key: Int?)?
    /// The probe the reader reads on from: a transfer follows on from its end once it is about
    /// to end (see ``followProbeIfDue(cached:)``).
    private var followedProbe: Int?
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
    private mutating func replanWaiting(cached: RangeSet, now: ContinuousClock.Instant) -> [Action] {
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

    // MARK: Opening

    /// Opening: an uncached resource starts at byte 0 for playback; a partial one continues
    /// from its first missing byte in the background; a complete one needs nothing. With a
    /// `tail` (the bytes at the end the decoder reads before its first audio), the tail comes
    /// first: an uncached resource asks for its head and, beside it, for its last `tail` bytes
    /// (``Action/startLast(key:length:priority:)``), whose offsets ``learn(_:cached:)`` tells;
    /// the rest of the download waits until the tail is here.
    public mutating func open(cached: RangeSet, tail: Int64? = nil) -> [Action] {
        tailFirst = tail.flatMap { $0 > 0 ? ($0, nil) : nil }
        guard let length = resource?.length else {
            guard let tail = tailFirst?.length else { return start(at: 0, priority: .playback, cached: cached) }
            let priority: FetchPriority = background ? .preload : .playback
            let key = takeKey()
            transfers.append(Transfer(key: key, next: 0, end: Self.headBeforeTail, role: .main))
            let tailKey = takeKey()
            transfers.append(Transfer(key: tailKey, next: Self.unknownOffset, end: nil, role: .probe))
            tailFirst = (tail, tailKey)
            return [
                .startHead(key: key, to: Self.headBeforeTail, priority: priority),
                .startLast(key: tailKey, length: tail, priority: priority),
            ]
        }
        if let actions = startTail(length: length, cached: cached) { return actions }
        guard let missing = cached.missing(in: 0..<length).first?.lowerBound else { return [] }
        return start(at: missing, priority: .readAhead, cached: cached)
    }

    /// The first response (the head's or the tail's) told the resource's facts: where the
    /// tail's request delivers, or, when the origin serves no ranges or no length, the
    /// opening's head request runs to the end instead (the fetcher reads such a body whole, as
    /// ``Action/startHead(key:to:priority:)`` asked) and the tail's request stops. A file so
    /// short that its last bytes reach into the head gets a tail from the head's end instead.
    public mutating func learn(_ resource: Resource, cached: RangeSet) -> [Action] {
        self.resource = resource
        var actions: [Action] = []
        if let tail = tailFirst, let key = tail.key, let index = index(of: key),
            transfers[index].next == Self.unknownOffset
        {
            if resource.rangesSupported, let length = resource.length, length - tail.length >= Self.headBeforeTail {
                transfers[index].next = length - tail.length
                transfers[index].end = length
                return []
            }
            actions.append(.cancel(key: key))
            remove(key)
            tailFirst = (tail.length, nil)
        }
        guard tailFirst != nil, tailFirst?.key == nil else { return actions }
        if resource.rangesSupported, let length = resource.length,
            let started = startTail(length: length, cached: cached)
        {
            return actions + started
        }
        tailFirst = nil
        if let index = transfers.firstIndex(where: { $0.role == .main && $0.next < Self.headBeforeTail }),
            transfers[index].end == Self.headBeforeTail, !resource.rangesSupported || resource.length == nil
        {
            transfers[index].end = nil
        }
        return actions
    }

    /// Starts the request for the opening's tail, beyond what the main transfer asks; nil when
    /// there is none to fetch (no tail wanted, no ranges, or its bytes are held already).
    private mutating func startTail(length: Int64, cached: RangeSet) -> [Action]? {
        guard let tail = tailFirst, resource?.rangesSupported == true else {
            tailFirst = nil
            return nil
        }
        let headEnd = main.map { $0.end ?? length } ?? 0
        let from = max(length - tail.length, headEnd, 0)
        guard from < length, let missing = cached.missing(in: from..<length).first else {
            tailFirst = nil
            return nil
        }
        let key = takeKey()
        transfers.append(Transfer(key: key, next: missing.lowerBound, end: missing.upperBound, role: .probe))
        tailFirst = (tail.length, key)
        return [
            .start(
                key: key, from: missing.lowerBound, to: missing.upperBound, priority: background ? .preload : .playback)
        ]
    }

    /// Takes a request already under way, delivering from `offset` to the end, as the main
    /// download under `key`, one the planner never gives (below 1): a revalidation answered with
    /// a new version, whose response is that version's body. Returns the cancel of a main
    /// download it replaces.
    public mutating func adopt(at offset: Int64, as key: Int) -> [Action] {
        var actions: [Action] = []
        if let old = main {
            actions.append(.cancel(key: old.key))
            remove(old.key)
        }
        transfers.append(Transfer(key: key, next: offset, end: nil, role: .main))
        return actions
    }

    // MARK: Reads

    /// Decides a read. On ``ReadAnswer/wait`` the read is remembered and a later event's
    /// ``Effects/wakeReader`` says when to try again.
    public mutating func read(_ read: Read, cached: RangeSet, now: ContinuousClock.Instant) -> (ReadAnswer, [Action]) {
        guard let resource else { return (.wait, []) }
        let length = resource.length
        if let length, read.offset >= length { return (.endOfStream, []) }
        let continuesPlayback = lastReadEnd == read.offset
        // A probe (a parser peeking at the end) is not where playback is: the read-ahead window
        // stays at the play head, or a probe at the end of a long stream would let the download
        // from the start run on to that end.
        if continuesPlayback || read.maxLength > Self.probeMaxRead { playHead = read.offset }
        let available = cached.contiguousLength(from: read.offset)
        let remaining = length.map { $0 - read.offset }
        let needed = Int64(remaining.map { min(Int64(read.minLength), $0) } ?? Int64(read.minLength))
        if available >= needed || (length == nil && available > 0) {
            let served = Int(min(available, Int64(read.maxLength)))
            lastReadEnd = read.offset + Int64(served)
            waiting = nil
            unservedFarRead = nil
            var actions: [Action] = []
            if main == nil, windowEnd != nil { actions = refillWindow(cached: cached) }
            return (.serve(served), actions)
        }
        if length == nil, streamComplete { return (.endOfStream, []) }
        lastReadEnd = read.offset
        let missing = read.offset + available
        let isProbe = !continuesPlayback && available == 0 && read.maxLength <= Self.probeMaxRead
        waiting = read
        waitingIsProbe = isProbe
        return (
            .wait,
            arrange(
                for: missing, isProbe: isProbe, continuesPlayback: continuesPlayback || available > 0,
                cached: cached, now: now)
        )
    }

    /// The reader stopped waiting (a seek, a stop).
    public mutating func cancelWaiting() {
        waiting = nil
    }

    /// How far ahead of `transfer` a read waits for it.
    func waitAhead(for transfer: Transfer) -> Int64 {
        let upper = max(Self.waitAheadLimit, Int64((byteRate ?? 0) * Self.waitAheadSeconds))
        if background { return upper }
        guard let rate = transfer.rate else { return min(upper, Self.unmeasuredWaitAhead) }
        return min(upper, max(Self.waitAheadFloor, Int64(rate * Self.waitAheadTime)))
    }

    private mutating func arrange(
        for offset: Int64, isProbe: Bool, continuesPlayback: Bool, cached: RangeSet, now: ContinuousClock.Instant
    ) -> [Action] {
        let rangesSupported = resource?.rangesSupported ?? true
        var actions: [Action] = []
        if let main, main.reaches(offset, within: waitAhead(for: main)) {
            if !background, !isProbe { actions.append(.setPriority(key: main.key, .playback)) }
            return actions  // the running download gets there soon
        }
        if let probe = transfers.first(where: { $0.role == .probe && $0.reaches(offset, within: .max) }) {
            if continuesPlayback, let end = probe.end, let length = resource?.length, end < length,
                !isHeld(end, cached: cached), !(main?.reaches(end, within: main.map(waitAhead(for:)) ?? 0) ?? false)
            {
                // Reads go on from a probe: it was a seek after all, so a transfer follows on
                // from its end before the reader gets there, but only once the probe is about
                // to end: on one link, two transfers would halve the speed of the bytes the
                // reader waits for. The download set aside makes way for it now.
                actions += park(for: end, cached: cached)
                followedProbe = probe.key
                actions += followProbeIfDue(cached: cached)
            }
            return actions
        }
        followedProbe = nil  // the reader went elsewhere: nothing follows that probe
        if !rangesSupported {
            // Only a stream from byte 0 can bring it: the running one, unless it has passed it
            // (bytes held in memory only, dropped by the window), then a new one.
            guard memoryBound != nil, !(main.map { $0.next <= offset } ?? false) else { return [] }
            return start(at: offset, priority: .playback, cached: cached)
        }
        if isAwaitingTail { return actions }  // the tail comes first; the rest follows it
        if let resumed = resumeParked(reaching: offset) { return resumed }
        if let last = unservedFarRead, now - last.at < Self.seekConnectionInterval {
            // A storm: the last far read's request is already left behind. Stop it now so it
            // wastes nothing while the storm settles, and start once the interval is over, for
            // whatever the reader wants by then (what an earlier seek set aside stays parked).
            if transfers.contains(where: { $0.key == last.key && $0.role != .parked }) {
                actions.append(.cancel(key: last.key))
                remove(last.key)
            }
            unservedFarRead = nil
            guard !seekScheduled else { return actions }
            seekScheduled = true
            actions.append(.scheduleSeek(after: Self.seekConnectionInterval - (now - last.at)))
            return actions
        }
        if seekScheduled { return actions }  // the storm's interval is still running
        if isProbe, main != nil {
            actions += startProbe(at: offset, cached: cached)
        } else {
            actions += park(for: offset, cached: cached)
            actions += start(at: offset, priority: .playback, cached: cached)
        }
        if let key = transfers.last?.key { unservedFarRead = (key, now) }
        return actions
    }

    /// The end of a seek storm: one connection, at the offset the reader waits for now.
    public mutating func seekIntervalEnded(cached: RangeSet, now: ContinuousClock.Instant) -> [Action] {
        seekScheduled = false
        guard let waiting else { return [] }
        var offset = waiting.offset + cached.contiguousLength(from: waiting.offset)
        if let probe = transfers.first(where: { $0.role == .probe && $0.reaches(offset, within: .max) }),
            let end = probe.end
        {
            // A probe brings the bytes from here to its end: asking for them again would fetch
            // them twice, so the request starts where the probe stops.
            offset = end + cached.contiguousLength(from: end)
            if let length = resource?.length, offset >= length { return [] }
        }
        if let main, main.reaches(offset, within: waitAhead(for: main)) { return [] }
        if let resumed = resumeParked(reaching: offset) { return resumed }
        let actions = park(for: offset, cached: cached) + start(at: offset, priority: .playback, cached: cached)
        if let key = transfers.last?.key { unservedFarRead = (key, now) }
        return actions
    }

    private mutating func startProbe(at offset: Int64, cached: RangeSet) -> [Action] {
        var actions: [Action] = []
        let probes = transfers.filter { $0.role == .probe }
        if probes.count >= Self.maxProbes, let oldest = probes.first {
            actions.append(.cancel(key: oldest.key))
            remove(oldest.key)
        }
        let length = resource?.length
        let wanted = offset + max(Self.probeRequestMinimum, Int64(waiting?.maxLength ?? 0))
        let end = [length, wanted, nextHeld(after: offset, cached: cached)].compactMap { $0 }.min()
        let key = takeKey()
        // At the download's own priority, so the fetcher does not pause the download meanwhile.
        transfers.append(Transfer(key: key, next: offset, end: end, role: .probe))
        actions.append(.start(key: key, from: offset, to: end, priority: background ? .preload : .playback))
        return actions
    }

    // MARK: Transfer events

    /// Bytes of `key` arrived up to (not including) `next`; `cached` includes them.
    public mutating func received(_ key: Int, upTo next: Int64, cached: RangeSet) -> Effects {
        guard let index = index(of: key) else { return Effects() }
        transfers[index].next = next
        var effects = Effects()
        if transfers[index].role == .main, let limit = windowEnd, next >= limit,
            waiting.map({ $0.offset < limit }) ?? true
        {
            // Far enough ahead of the play head in a large resource: stop here for now.
            effects.actions.append(.cancel(key: key))
            remove(key)
        } else if transfers[index].role != .probe, windowEnd != nil, let window = readAhead?.window,
            next < playHead - window,
            !(waitingMissing(cached).map { transfers[index].reaches($0, within: window) } ?? false)
        {
            // A window behind the play head in a large resource (set aside by a seek, resumed
            // once the seek's download ended): nobody reads there soon, and it would run to the end.
            effects.actions.append(.cancel(key: key))
            remove(key)
        }
        effects.actions += stopAtHeldBytes(cached: cached)
        effects.actions += followProbeIfDue(cached: cached)
        effects.wakeReader = readerCanGoOn(cached: cached)
        return effects
    }

    /// Starts the transfer that follows on from the end of the probe the reader reads on from,
    /// once that probe is within ``waitAheadTime`` of its end at its measured rate (at once when
    /// it has ended): about what a new request takes to bring its first byte, so the reader
    /// goes on without a pause and the two share the link only briefly.
    private mutating func followProbeIfDue(cached: RangeSet) -> [Action] {
        guard let key = followedProbe, let probe = transfers.first(where: { $0.key == key }), let end = probe.end,
            let rate = probe.rate, Double(end - probe.next) <= rate * Self.waitAheadTime
        else { return [] }
        return follow(probeEndingAt: end, cached: cached)
    }

    /// The transfer that follows on from `end`, where the probe the reader reads on from ends;
    /// none when the reader has gone elsewhere since (its last read is not on the way to `end`).
    private mutating func follow(probeEndingAt end: Int64, cached: RangeSet) -> [Action] {
        followedProbe = nil
        guard let reader = lastReadEnd, reader <= end, end - reader <= Int64(Self.probeMaxRead),
            let length = resource?.length, end < length, !isHeld(end, cached: cached),
            !(main?.reaches(end, within: main.map(waitAhead(for:)) ?? 0) ?? false)
        else { return [] }
        if let resumed = resumeParked(reaching: end) { return resumed }
        return park(for: end, cached: cached) + start(at: end, priority: .playback, cached: cached)
    }

    /// The transfer ended: its bytes are all delivered (a stream of unknown length ends there).
    public mutating func finished(_ key: Int, cached: RangeSet) -> Effects {
        guard let transfer = transfers.first(where: { $0.key == key }) else { return Effects() }
        let followed = followedProbe == key
        remove(key)
        if resource?.length == nil, transfer.role == .main, transfer.end.map({ transfer.next < $0 }) ?? true {
            // A stream of unknown length: its clean end before the end asked is the end.
            streamComplete = true
            resource?.length = cached.upperBound ?? 0
        }
        var effects = Effects()
        if followed, let end = transfer.end { effects.actions = follow(probeEndingAt: end, cached: cached) }
        effects.actions += continueDownload(cached: cached)
        effects.wakeReader = readerCanGoOn(cached: cached) || (waiting != nil && transfers.isEmpty)
        return effects
    }

    /// The resource ends at `length`, before the length the planner knew: transfer `key` found
    /// that the origin overstated it. Reads at or past it end the stream, a reader waiting there
    /// goes on, and other transfers already past it (asking for bytes that do not exist) stop.
    public mutating func resourceEnds(at length: Int64, reportedBy key: Int, cached: RangeSet) -> Effects {
        guard resource?.length.map({ length < $0 }) ?? false else { return Effects() }
        resource?.length = length
        var actions: [Action] = []
        for transfer in transfers where transfer.key != key && transfer.next >= length {
            actions.append(.cancel(key: transfer.key))
            remove(transfer.key)
        }
        return Effects(actions: actions, wakeReader: readerCanGoOn(cached: cached))
    }

    /// The transfer failed or was replaced; it is forgotten.
    public mutating func forget(_ key: Int) {
        remove(key)
    }

    /// Cancels everything (the source closes, or the resource changed under the transfers).
    public mutating func stopAll() -> [Action] {
        tailFirst = nil
        followedProbe = nil
        defer { transfers = [] }
        return transfers.map { .cancel(key: $0.key) }
    }

    /// After the origin could not be reached while a reader waited: try once more, now.
    public mutating func retryNow(at offset: Int64, cached: RangeSet) -> [Action] {
        start(at: offset, priority: .playback, cached: cached)
    }

    /// The first byte the waiting reader still misses.
    private func waitingMissing(_ cached: RangeSet) -> Int64? {
        waiting.map { $0.offset + cached.contiguousLength(from: $0.offset) }
    }

    /// Whether the waiting reader's bytes (its minimum) are here, or its offset is at the end.
    private func readerCanGoOn(cached: RangeSet) -> Bool {
        guard let waiting else { return false }
        let available = cached.contiguousLength(from: waiting.offset)
        if let length = resource?.length {
            if waiting.offset >= length { return true }
            return available >= min(Int64(waiting.minLength), length - waiting.offset)
        }
        return available > 0 || streamComplete
    }

    /// Stops the main or a parked transfer whose next byte is held (a probe fetched it after the
    /// main request was made): past that point it would only fetch bytes a second time.
    private mutating func stopAtHeldBytes(cached: RangeSet) -> [Action] {
        var actions: [Action] = []
        for transfer in transfers where transfer.role != .probe {
            guard transfer.end.map({ transfer.next < $0 }) ?? true,
                isHeld(transfer.next, cached: cached, excluding: transfer.key)
            else { continue }
            actions.append(.cancel(key: transfer.key))
            remove(transfer.key)
            if transfer.role == .main { actions += continueDownload(cached: cached) }
        }
        return actions
    }

    /// After the main transfer ends: fetch for the waiting reader, else the next hole (read-ahead).
    private mutating func continueDownload(cached: RangeSet) -> [Action] {
        guard main == nil, !isAwaitingTail, resource != nil else { return [] }
        guard let length = resource?.length else {
            // A stream of unknown length held in memory: the window goes on where it ended.
            return memoryBound != nil && !streamComplete ? refillWindow(cached: cached) : []
        }
        if let waiting {
            let offset = waiting.offset + cached.contiguousLength(from: waiting.offset)
            if offset < length, !isHeld(offset, cached: cached) {
                if let resumed = resumeParked(reaching: offset) { return resumed }
                guard canStartAnywhere else { return [] }
                return start(at: offset, priority: .playback, cached: cached)
            }
        }
        if windowEnd != nil { return refillWindow(cached: cached) }
        if let index = transfers.firstIndex(where: {
            $0.role == .parked && !isHeld($0.next, cached: cached, excluding: $0.key)
        }) {
            // The seek's transfer is done: the one it set aside goes on as the read-ahead.
            transfers[index].role = .main
            return [.setPriority(key: transfers[index].key, background ? .preload : .readAhead)]
        }
        guard canStartAnywhere, let missing = nextToFetch(length: length, cached: cached) else {
            return []
        }
        return start(at: missing, priority: .readAhead, cached: cached)
    }

    // MARK: Transfers

    private mutating func start(at offset: Int64, priority wanted: FetchPriority, cached: RangeSet) -> [Action] {
        var actions: [Action] = []
        if let old = main {
            actions.append(.cancel(key: old.key))
            remove(old.key)
        }
        let priority = background ? FetchPriority.preload : wanted
        // Bounded by the next byte held or being fetched, so nothing is asked twice.
        var end = resource?.length.flatMap { _ in nextHeld(after: offset, cached: cached) }
        if resource?.length != nil, let limit = windowEnd, let window = readAhead?.window {
            // A large resource: a window past the play head (or past this read), no further. A
            // stream of unknown length (a live one, perhaps) is asked for whole and stopped when
            // it runs a window ahead: a new request would not continue a live stream.
            let windowLimit = max(limit, offset + window / 4)
            end = min(end ?? windowLimit, windowLimit)
        }
        let key = takeKey()
        transfers.append(Transfer(key: key, next: offset, end: end, role: .main))
        actions.append(.start(key: key, from: offset, to: end, priority: priority))
        return actions
    }

    /// Makes a parked transfer the main one again if it reaches `offset` soon (the current main
    /// one is parked in its place); nil when none does.
    private mutating func resumeParked(reaching offset: Int64) -> [Action]? {
        guard
            let index = transfers.firstIndex(where: {
                $0.role == .parked && $0.reaches(offset, within: waitAhead(for: $0))
            })
        else { return nil }
        let key = transfers[index].key
        var actions = parkMain()
        guard let resumed = self.index(of: key) else { return actions }
        transfers[resumed].role = .main
        actions.append(.setPriority(key: key, background ? .preload : .playback))
        return actions
    }

    /// Sets the main transfer aside without checks (a parked one takes its place).
    private mutating func parkMain() -> [Action] {
        guard let main, let index = index(of: main.key) else { return [] }
        transfers[index].role = .parked
        return [.setPriority(key: main.key, .fillHoles)] + trimParked()
    }

    private mutating func trimParked() -> [Action] {
        let parked = transfers.filter { $0.role == .parked }
        guard parked.count > Self.maxParkedTransfers, let oldest = parked.first else { return [] }
        remove(oldest.key)
        return [.cancel(key: oldest.key)]
    }

    /// Sets the main transfer aside for a seek instead of cancelling it: at the lowest priority
    /// the fetcher pauses it while the seek's transfer receives, so what the origin already
    /// sent waits in the socket and is used when it resumes. A transfer that would reach a held
    /// byte or `target` within ``parkReach`` is cancelled instead, and so are parked ones
    /// `target` lies just ahead of.
    private mutating func park(for target: Int64, cached: RangeSet) -> [Action] {
        var actions: [Action] = []
        for transfer in transfers where transfer.role == .parked && collides(transfer, target: target, cached: cached) {
            actions.append(.cancel(key: transfer.key))
            remove(transfer.key)
        }
        guard let main else { return actions }
        if collides(main, target: target, cached: cached) {
            remove(main.key)
            return actions + [.cancel(key: main.key)]
        }
        return actions + parkMain()
    }

    private func collides(_ transfer: Transfer, target: Int64, cached: RangeSet) -> Bool {
        let ahead = [nextHeld(after: transfer.next, cached: cached, excluding: transfer.key), target].compactMap { $0 }
            .filter { $0 > transfer.next && $0 < (transfer.end ?? .max) }.min()
        return ahead.map { $0 - transfer.next < Self.parkReach } ?? false
    }

    /// The first byte after `offset` that is cached or that another transfer will deliver next:
    /// where a new request should stop.
    func nextHeld(after offset: Int64, cached: RangeSet, excluding key: Int? = nil) -> Int64? {
        let cachedStart = cached.ranges.first { $0.lowerBound > offset }?.lowerBound
        let others = transfers.filter { $0.key != key && $0.role != .main && $0.next != Self.unknownOffset }.map(\.next)
        return ([cachedStart] + others).compactMap { $0 }.filter { $0 > offset }.min()
    }

    /// Whether `offset` is cached or is a probe's to deliver.
    private func isHeld(_ offset: Int64, cached: RangeSet, excluding key: Int? = nil) -> Bool {
        cached.contains(offset)
            || transfers.contains { $0.key != key && $0.role == .probe && $0.reaches(offset, within: .max) }
    }

    /// The first missing byte that no running probe is about to deliver.
    private func nextToFetch(length: Int64, cached: RangeSet) -> Int64? {
        for range in cached.missing(in: 0..<length) {
            var start = range.lowerBound
            for probe in transfers where probe.role == .probe {
                if let end = probe.end, probe.next <= start, start < end { start = end }
            }
            if start < range.upperBound { return start }
        }
        return nil
    }

    /// The end of the read-ahead window in a large resource, or in any resource held in memory
    /// only (of unknown length too); nil when it downloads whole.
    private var windowEnd: Int64? {
        guard let readAhead else { return nil }
        let length = resource?.length
        guard memoryBound != nil || (length.map { $0 > readAhead.threshold } ?? false) else { return nil }
        return min(length ?? .max, playHead + readAhead.window)
    }

    /// Whether a request may start at any byte: the origin serves ranges, or the bytes are held
    /// in memory only, where a byte the window dropped can come again only from a new request
    /// (the fetcher reads an origin without ranges from byte 0, skipping to it).
    private var canStartAnywhere: Bool { resource?.rangesSupported == true || memoryBound != nil }

    /// Fetches the window's first missing byte on, once no more than half the window is held
    /// ahead of the reader: requests of half a window or more, not one per read.
    private mutating func refillWindow(cached: RangeSet) -> [Action] {
        guard let limit = windowEnd, let window = readAhead?.window, playHead < limit,
            let missing = cached.missing(in: playHead..<limit).first?.lowerBound, missing - playHead <= window / 2
        else { return [] }
        return start(at: missing, priority: .readAhead, cached: cached)
    }

    private mutating func takeKey() -> Int {
        defer { nextKey += 1 }
        return nextKey
    }

    private func index(of key: Int) -> Int? { transfers.firstIndex { $0.key == key } }

    private mutating func remove(_ key: Int) {
        transfers.removeAll { $0.key == key }
        if tailFirst?.key == key { tailFirst = nil }
        if followedProbe == key { followedProbe = nil }
    }
}
