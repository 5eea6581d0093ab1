import Fetcher
import RangeCache

/// A transfer's events: bytes arriving, its end, the resource's true end, and what follows on.
extension DownloadPlanner {
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
    mutating func followProbeIfDue(cached: RangeSet) -> [Action] {
        guard let key = followedProbe, let probe = transfers.first(where: { $0.key == key }), let end = probe.end,
            let rate = probe.rate, Double(end - probe.next) <= rate * Self.waitAheadTime
        else { return [] }
        return follow(probeEndingAt: end, cached: cached)
    }

    /// The transfer that follows on from `end`, where the probe the reader reads on from ends;
    /// none when the reader has gone elsewhere since (its last read is not on the way to `end`).
    mutating func follow(probeEndingAt end: Int64, cached: RangeSet) -> [Action] {
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
    func waitingMissing(_ cached: RangeSet) -> Int64? {
        waiting.map { $0.offset + cached.contiguousLength(from: $0.offset) }
    }

    /// Whether the waiting reader's bytes (its minimum) are here, or its offset is at the end.
    func readerCanGoOn(cached: RangeSet) -> Bool {
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
    mutating func stopAtHeldBytes(cached: RangeSet) -> [Action] {
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
    mutating func continueDownload(cached: RangeSet) -> [Action] {
        guard main == nil, !isAwaitingTail, resource != nil else { return [] }
        guard let length = resource?.length else {
            // A stream of unknown length held in memory: the window goes on where it ended.
            return memoryBound != nil && !streamComplete ? refillWindow(cached: cached) : []
        }
        // A reader woken but not yet back is not waiting: its next read moves the play head
        // and the window with it, and fetching on for it now would use the old window.
        if let waiting, !readerCanGoOn(cached: cached) {
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
}
