import Fetcher
import RangeCache

/// Opening a resource: what the first requests ask for, the tail first, and what the first response teaches.
extension DownloadPlanner {
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
        guard let missing = nextToFetch(length: length, cached: cached) else { return [] }
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
    mutating func startTail(length: Int64, cached: RangeSet) -> [Action]? {
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
}
