import ByteSourceAPI

/// How much of a resource the memory store keeps, and which part. Pure: it decides from
/// offsets only.
///
/// At most `capacity` bytes are held. Over it, bytes behind the reader go first, furthest
/// behind first (a parser may still step back a little); then bytes furthest ahead. The bytes
/// a waiting read needs are never dropped. A trim goes down to `trimTarget`, a sixteenth below
/// the capacity, so the next one is due only after that much more has arrived, not on every
/// chunk. How far ahead downloads run is the planner's (``DownloadPlanner/limitToWindow(_:)``):
/// half the capacity, so a long stream, or a length of terabytes in a header, never holds more.
public struct MemoryWindow: Sendable, Equatable {
    /// The production window: enough for minutes of audio at any common bitrate.
    public static let standard = MemoryWindow(capacity: 32 << 20)

    /// The window of a live stream of `kilobitsPerSecond` (320, the highest common bitrate,
    /// when unknown): a pause's worth (``LiveStation/pauseWindow``) of audio ahead of the
    /// listener, as much behind.
    public static func live(kilobitsPerSecond: Int?) -> MemoryWindow {
        let bitrate = Int64(min(max(kilobitsPerSecond ?? 320, 8), 1_536))
        return MemoryWindow(capacity: 2 * LiveStation.pauseWindow.components.seconds * bitrate * 125)
    }

    /// The most bytes held.
    public let capacity: Int64

    /// Creates a window of `capacity` bytes (at least 1).
    public init(capacity: Int64) {
        self.capacity = max(1, capacity)
    }

    /// What a trim leaves at most.
    public var trimTarget: Int64 { capacity - capacity / 16 }

    /// The parts of `held` (sorted, disjoint) to keep when the reader is at `reader`: all of
    /// it when it fits, else the `trimTarget` bytes nearest the reader's way forward, and always
    /// the bytes of `needed` (a waiting read's, which may lie far from the play head).
    public func retained(_ held: [Range<Int64>], reader: Int64, needed: Range<Int64>? = nil) -> [Range<Int64>] {
        let total = held.reduce(Int64(0)) { $0 + Int64($1.count) }
        guard total > capacity else { return held }
        var excess = total - trimTarget
        // Split at the needed range's bounds: each piece is wholly needed or wholly not.
        var kept: [Range<Int64>] = []
        for range in held {
            var cuts = [range.lowerBound, range.upperBound]
            if let needed {
                cuts += [needed.lowerBound, needed.upperBound].filter { range.contains($0) }
            }
            let bounds = Set(cuts).sorted()
            for (lower, upper) in zip(bounds, bounds.dropFirst()) { kept.append(lower..<upper) }
        }
        func isNeeded(_ range: Range<Int64>) -> Bool { needed?.overlaps(range) ?? false }
        // Behind the reader, from the lowest offset up.
        for index in kept.indices where excess > 0 && kept[index].lowerBound < reader && !isNeeded(kept[index]) {
            let behind = min(kept[index].upperBound, reader) - kept[index].lowerBound
            let cut = min(behind, excess)
            kept[index] = (kept[index].lowerBound + cut)..<kept[index].upperBound
            excess -= cut
        }
        // Then ahead of it, from the highest offset down.
        for index in kept.indices.reversed() where excess > 0 && !isNeeded(kept[index]) {
            let cut = min(Int64(kept[index].count), excess)
            kept[index] = kept[index].lowerBound..<(kept[index].upperBound - cut)
            excess -= cut
        }
        // Pieces of one range that are all kept join again.
        var joined: [Range<Int64>] = []
        for range in kept where !range.isEmpty {
            if let last = joined.last, last.upperBound == range.lowerBound {
                joined[joined.count - 1] = last.lowerBound..<range.upperBound
            } else {
                joined.append(range)
            }
        }
        return joined
    }
}
