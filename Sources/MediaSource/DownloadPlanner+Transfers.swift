import Fetcher
import RangeCache

/// The bookkeeping of transfers: starting, parking, resuming and trimming them, and what is held.
extension DownloadPlanner {
    mutating func start(at offset: Int64, priority wanted: FetchPriority, cached: RangeSet) -> [Action] {
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
        if scope != nil, let part = fetchedParts(length: resource?.length).first(where: { $0.contains(offset) }) {
            end = min(end ?? part.upperBound, part.upperBound)
        }
        let key = takeKey()
        transfers.append(Transfer(key: key, next: offset, end: end, role: .main))
        actions.append(.start(key: key, from: offset, to: end, priority: priority))
        return actions
    }

    /// Makes a parked transfer the main one again if it reaches `offset` soon (the current main
    /// one is parked in its place); nil when none does.
    mutating func resumeParked(reaching offset: Int64) -> [Action]? {
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
    mutating func parkMain() -> [Action] {
        guard let main, let index = index(of: main.key) else { return [] }
        transfers[index].role = .parked
        return [.setPriority(key: main.key, .fillHoles)] + trimParked()
    }

    mutating func trimParked() -> [Action] {
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
    mutating func park(for target: Int64, cached: RangeSet) -> [Action] {
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

    func collides(_ transfer: Transfer, target: Int64, cached: RangeSet) -> Bool {
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
    func isHeld(_ offset: Int64, cached: RangeSet, excluding key: Int? = nil) -> Bool {
        cached.contains(offset)
            || transfers.contains { $0.key != key && $0.role == .probe && $0.reaches(offset, within: .max) }
    }

    /// The first missing byte that no running probe is about to deliver.
    func nextToFetch(length: Int64, cached: RangeSet) -> Int64? {
        for range in fetchedParts(length: length).flatMap({ cached.missing(in: $0) }) {
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
    var windowEnd: Int64? {
        guard let readAhead else { return nil }
        let length = resource?.length
        guard memoryBound != nil || (length.map { $0 > readAhead.threshold } ?? false) else { return nil }
        return min(length ?? .max, playHead + readAhead.window)
    }

    /// Whether a request may start at any byte: the origin serves ranges, or the bytes are held
    /// in memory only, where a byte the window dropped can come again only from a new request
    /// (the fetcher reads an origin without ranges from byte 0, skipping to it).
    var canStartAnywhere: Bool { resource?.rangesSupported == true || memoryBound != nil }

    /// Fetches the window's first missing byte on, once no more than half the window is held
    /// ahead of the reader: requests of half a window or more, not one per read.
    mutating func refillWindow(cached: RangeSet) -> [Action] {
        guard let limit = windowEnd, let window = readAhead?.window, playHead < limit,
            let missing = cached.missing(in: playHead..<limit).first?.lowerBound, missing - playHead <= window / 2
        else { return [] }
        return start(at: missing, priority: .readAhead, cached: cached)
    }

    mutating func takeKey() -> Int {
        defer { nextKey += 1 }
        return nextKey
    }

    func index(of key: Int) -> Int? { transfers.firstIndex { $0.key == key } }

    mutating func remove(_ key: Int) {
        transfers.removeAll { $0.key == key }
        if tailFirst?.key == key { tailFirst = nil }
        if followedProbe == key { followedProbe = nil }
    }
}
