import Fetcher
import RangeCache

/// Deciding a read: serve, wait, end, fail, and which request a probe, a seek or a seek storm gets.
extension DownloadPlanner {
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

    mutating func arrange(
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

    mutating func startProbe(at offset: Int64, cached: RangeSet) -> [Action] {
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
}
