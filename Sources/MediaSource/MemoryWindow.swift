/// How much of a resource a source keeps in memory when it has no disk to keep it on (no
/// cache, or a full disk), and which part. Pure: it decides from offsets only.
///
/// At most `capacity` bytes are held. Over it, bytes behind the reader go first, furthest
/// behind first (a parser may still step back a little); then bytes furthest ahead. A trim
/// goes down to `trimTarget`, a sixteenth below the capacity, so the next one is due only
/// after that much more has arrived, not on every chunk. A download
/// stops once it is `capacity` ahead of the reader, and starts again from where the held bytes
/// end once the reader has used half of that: playback never waits for a new request, and a
/// long stream (or a length of terabytes in a header) never holds more than the window. On a
/// metered network the download may stop sooner, ``ahead`` bytes ahead of the reader.
public struct MemoryWindow: Sendable, Equatable {
    /// The production window: enough for minutes of audio at any common bitrate.
    public static let standard = MemoryWindow(capacity: 32 << 20)

    /// The most bytes held.
    public let capacity: Int64

    /// How far ahead of the reader a download runs before it stops (at most ``capacity``).
    public let ahead: Int64

    /// Creates a window of `capacity` bytes (at least 1) whose downloads run `ahead` bytes
    /// ahead of the reader (a full window when nil).
    public init(capacity: Int64, ahead: Int64? = nil) {
        self.capacity = max(1, capacity)
        self.ahead = min(self.capacity, max(1, ahead ?? capacity))
    }

    /// This window, with downloads stopping `bytes` ahead of the reader (a full window when nil).
    public func runningAhead(_ bytes: Int64?) -> MemoryWindow { MemoryWindow(capacity: capacity, ahead: bytes) }

    /// What a trim leaves at most.
    public var trimTarget: Int64 { capacity - capacity / 16 }

    /// The parts of `held` (sorted, disjoint) to keep when the reader is at `reader`: all of
    /// it when it fits, else the `trimTarget` bytes nearest the reader's way forward.
    public func retained(_ held: [Range<Int64>], reader: Int64) -> [Range<Int64>] {
        let total = held.reduce(Int64(0)) { $0 + Int64($1.count) }
        guard total > capacity else { return held }
        var excess = total - trimTarget
        var kept = held
        // Behind the reader, from the lowest offset up.
        for index in kept.indices where excess > 0 && kept[index].lowerBound < reader {
            let behind = min(kept[index].upperBound, reader) - kept[index].lowerBound
            let cut = min(behind, excess)
            kept[index] = (kept[index].lowerBound + cut)..<kept[index].upperBound
            excess -= cut
        }
        // Then ahead of it, from the highest offset down.
        for index in kept.indices.reversed() where excess > 0 {
            let cut = min(Int64(kept[index].count), excess)
            kept[index] = kept[index].lowerBound..<(kept[index].upperBound - cut)
            excess -= cut
        }
        return kept.filter { !$0.isEmpty }
    }

    /// Whether a download about to deliver `next` should stop: it is ``ahead`` of the reader.
    public func isFull(reader: Int64, next: Int64) -> Bool { next - reader >= ahead }

    /// Whether a download stopped by the window should start again at `heldEnd` (where the
    /// bytes held from the reader on end): the reader has used half of what it ran ahead.
    public func shouldResume(reader: Int64, heldEnd: Int64) -> Bool { heldEnd - reader < ahead / 2 }
}
