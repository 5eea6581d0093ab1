import Basics
import EngineAPI
import FoundationEssentials

/// What happens at the end of a track or of the queue (MPRIS LoopStatus).
public enum LoopMode: String, Sendable, Equatable, Codable, CaseIterable {
    /// Play the queue once, then stop.
    case none = "None"
    /// Repeat the current track.
    case track = "Track"
    /// Start the queue again after its last track.
    case playlist = "Playlist"
}

/// One entry of the play queue.
public struct QueueEntry: Sendable, Equatable {
    /// Unique for the life of the daemon, never reused (even for the same URL).
    public let id: TrackID
    /// What to play.
    public var url: URL
    /// A title known before playing (from a playlist's EXTINF or Title line).
    public var title: String?
    /// What the queue shows of its tags (title, artists, album), heard while it played or read
    /// ahead from its bytes (see ``QueueTagPolicy``); nil while none are known.
    public var tags: TrackTags?
    /// Its length, heard while it played or read ahead with its tags.
    public var duration: Duration?
    /// Other addresses of the same stream (a station's mirrors), tried in turn when this one fails.
    public var mirrors: [URL]

    /// Creates an entry.
    public init(id: TrackID, url: URL, title: String? = nil, mirrors: [URL] = []) {
        self.id = id
        self.url = url
        self.title = title
        self.mirrors = mirrors
    }
}

extension TrackID: Codable {
    /// Decodes the raw number.
    public init(from decoder: Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(UInt64.self))
    }

    /// Encodes the raw number.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// The play queue as a value: entries in list order, the current one, and the
/// play order (list order, or a shuffled permutation that plays every entry
/// once before repeating). Pure and synchronous so the rules are tested directly.
public struct PlayQueue: Sendable, Equatable {
    /// Entries in list order.
    public private(set) var entries: [QueueEntry] = []
    /// The current entry's id, if any.
    public private(set) var currentID: TrackID?
    /// What happens at the end of a track or the queue.
    public var loop: LoopMode = .none
    /// The shuffled play order (ids), when shuffle is on; the current entry is in it.
    private var shuffledOrder: [TrackID]?
    private var nextRawID: UInt64 = 1
    /// Where shuffled orders come from: the system's randomness, or a seed that replays them.
    private var randomness: SplitMix64

    /// An empty queue; with `shuffleSeed`, its shuffled orders are the same every time.
    public init(shuffleSeed: UInt64? = nil) {
        randomness = SplitMix64(seed: shuffleSeed ?? UInt64.random(in: .min ... .max))
    }

    /// Queues are equal when they hold the same entries in the same order and state; where their
    /// next shuffle would come from is not part of them.
    public static func == (lhs: PlayQueue, rhs: PlayQueue) -> Bool {
        lhs.entries == rhs.entries && lhs.currentID == rhs.currentID && lhs.loop == rhs.loop
            && lhs.shuffledOrder == rhs.shuffledOrder && lhs.nextRawID == rhs.nextRawID
    }

    /// Whether shuffle is on.
    public var shuffle: Bool { shuffledOrder != nil }

    /// The current entry.
    public var current: QueueEntry? { currentID.flatMap(entry) }

    /// The index of the current entry in list order.
    public var currentIndex: Int? { currentID.flatMap(index) }

    /// The entry with this id.
    public func entry(_ id: TrackID) -> QueueEntry? { entries.first { $0.id == id } }

    /// The list index of the entry with this id.
    public func index(of id: TrackID) -> Int? { entries.firstIndex { $0.id == id } }

    /// Entry ids in play order.
    public var playOrder: [TrackID] { shuffledOrder ?? entries.map(\.id) }

    // MARK: Editing

    /// Appends entries (or inserts them after entry `after`, or at the start); returns
    /// their new ids. The first added entry becomes current when the queue had none.
    @discardableResult
    public mutating func add(_ items: [TrackItem], after: TrackID? = nil, atStart: Bool = false) -> [TrackID] {
        let new = items.map { item -> QueueEntry in
            defer { nextRawID += 1 }
            return QueueEntry(id: TrackID(nextRawID), url: item.url, title: item.title, mirrors: item.mirrors)
        }
        let position = atStart ? 0 : after.flatMap(index).map { $0 + 1 } ?? entries.count
        entries.insert(contentsOf: new, at: position)
        if var order = shuffledOrder {
            // New entries go at random places among those still to play.
            let start = currentID.flatMap { order.firstIndex(of: $0) }.map { $0 + 1 } ?? 0
            for entry in new { order.insert(entry.id, at: Int.random(in: start...order.count, using: &randomness)) }
            shuffledOrder = order
        }
        if currentID == nil { currentID = new.first?.id }
        return new.map(\.id)
    }

    /// ``add(_:after:atStart:)`` for plain addresses with their titles.
    @discardableResult
    public mutating func add(
        _ tracks: [(url: URL, title: String?)], after: TrackID? = nil, atStart: Bool = false
    ) -> [TrackID] {
        add(TrackItem.list(tracks), after: after, atStart: atStart)
    }

    /// Makes the entry's first mirror its address, the other mirrors kept behind it; returns the
    /// entry, or nil when it has no mirror left. The id stays: to the listener and to MPRIS it is
    /// the same station, and the engine takes a new load of an id as a new start (as a retry).
    public mutating func replaceWithMirror(_ id: TrackID) -> QueueEntry? {
        guard let index = index(of: id), let mirror = entries[index].mirrors.first else { return nil }
        entries[index].url = mirror
        entries[index].mirrors.removeFirst()
        return entries[index]
    }

    /// Removes an entry. Removing the current one makes the next in play order
    /// current (or none); returns whether the current entry changed.
    @discardableResult
    public mutating func remove(_ id: TrackID) -> Bool {
        guard let index = index(of: id) else { return false }
        var changedCurrent = false
        if id == currentID {
            currentID = following(id, wrap: false)
            changedCurrent = true
        }
        entries.remove(at: index)
        shuffledOrder?.removeAll { $0 == id }
        if entries.isEmpty { currentID = nil }
        return changedCurrent
    }

    /// Moves an entry to list position `to` (clamped).
    public mutating func move(_ id: TrackID, to position: Int) {
        guard let from = index(of: id) else { return }
        let entry = entries.remove(at: from)
        entries.insert(entry, at: max(0, min(position, entries.count)))
    }

    /// Names an entry (a title read ahead from its tags) without playing it.
    public mutating func setTitle(_ title: String, of id: TrackID) {
        guard let index = index(of: id) else { return }
        entries[index].title = title
    }

    /// Replaces an entry's tags and length (``QueueTagPolicy`` decides what they are).
    public mutating func setTags(_ tags: TrackTags?, duration: Duration?, of id: TrackID) {
        guard let index = index(of: id) else { return }
        entries[index].tags = tags
        entries[index].duration = duration
    }

    /// Empties the queue.
    public mutating func clear() {
        entries.removeAll()
        currentID = nil
        if shuffledOrder != nil { shuffledOrder = [] }
    }

    /// Makes `id` current; false when there is no such entry.
    @discardableResult
    public mutating func jump(to id: TrackID) -> Bool {
        guard entry(id) != nil else { return false }
        currentID = id
        return true
    }

    /// Turns shuffle on (a fresh order starting with the current entry) or off
    /// (list order continues from the current entry).
    public mutating func setShuffle(_ on: Bool) {
        guard on != shuffle else { return }
        if on {
            let rest = entries.map(\.id).filter { $0 != currentID }.shuffled(using: &randomness)
            shuffledOrder = (currentID.map { [$0] } ?? []) + rest
        } else {
            shuffledOrder = nil
        }
    }

    // MARK: Moving

    /// The entry after the current one in play order, following the loop mode:
    /// `automatic` is a track ending by itself (Track loop repeats it), otherwise
    /// the listener asked for Next (which always moves on).
    public func upcoming(automatic: Bool) -> TrackID? {
        guard let currentID else { return nil }
        if automatic && loop == .track { return currentID }
        if let next = following(currentID, wrap: false) { return next }
        guard loop == .playlist else { return nil }
        return playOrder.first
    }

    /// Moves to the entry after the current one; returns it, or nil at the end of the queue.
    public mutating func advance(automatic: Bool) -> TrackID? {
        guard let currentID else { return nil }
        if automatic && loop == .track { return currentID }
        if let next = following(currentID, wrap: false) {
            self.currentID = next
            return next
        }
        guard loop == .playlist, !entries.isEmpty else { return nil }
        if shuffle {
            // A new round: every entry once more, not starting with the one just played.
            var order = entries.map(\.id).shuffled(using: &randomness)
            if order.count > 1, order.first == currentID { order.swapAt(0, order.count - 1) }
            shuffledOrder = order
        }
        self.currentID = playOrder.first
        return self.currentID
    }

    /// Moves to the entry before the current one in play order; nil at the start.
    public mutating func retreat() -> TrackID? {
        guard let currentID, let position = playOrder.firstIndex(of: currentID) else { return nil }
        if position > 0 {
            self.currentID = playOrder[position - 1]
        } else if loop == .playlist, let last = playOrder.last {
            self.currentID = last
        } else {
            return nil
        }
        return self.currentID
    }

    /// Up to `count` entries that will play after the current one, in play order
    /// (wrapping under loop Playlist; none under loop Track beyond the repeat).
    public func upcoming(_ count: Int) -> [TrackID] {
        guard let currentID, count > 0, let position = playOrder.firstIndex(of: currentID) else { return [] }
        var order = Array(playOrder[(position + 1)...])
        if loop == .playlist { order += playOrder[..<position] }
        return Array(order.prefix(count))
    }

    /// Whether Next has somewhere to go.
    public var canGoNext: Bool { upcoming(automatic: false) != nil }

    /// Whether Previous has somewhere to go.
    public var canGoPrevious: Bool {
        guard let currentID, let position = playOrder.firstIndex(of: currentID) else { return false }
        return position > 0 || (loop == .playlist && !entries.isEmpty)
    }

    private func following(_ id: TrackID, wrap: Bool) -> TrackID? {
        let order = playOrder
        guard let position = order.firstIndex(of: id) else { return nil }
        if position + 1 < order.count { return order[position + 1] }
        return wrap ? order.first : nil
    }

    // MARK: Persistence

    /// Rebuilds a queue from saved entries (ids renumbered from 1), with `current` the list index.
    public static func restored(
        _ items: [TrackItem], current: Int?, loop: LoopMode, shuffle: Bool, shuffleSeed: UInt64? = nil
    ) -> PlayQueue {
        var queue = PlayQueue(shuffleSeed: shuffleSeed)
        queue.add(items)
        if let current, current < queue.entries.count { queue.currentID = queue.entries[current].id }
        queue.loop = loop
        queue.setShuffle(shuffle)
        return queue
    }
}
