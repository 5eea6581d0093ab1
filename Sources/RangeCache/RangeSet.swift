/// A set of byte offsets stored as sorted, disjoint, non-adjacent half-open
/// ranges: inserting `0..<10` and `10..<20` leaves one range `0..<20`.
/// Queries binary-search the ranges, so they cost O(log n) in the number of
/// ranges (plus the size of the answer).
public struct RangeSet: Sendable, Hashable, CustomStringConvertible {
    /// The ranges, sorted, disjoint, none empty, no two touching.
    public private(set) var ranges: [Range<Int64>]
    /// How many offsets the set holds (the sum of the ranges' lengths).
    public private(set) var count: Int64

    /// Creates an empty set.
    public init() {
        ranges = []
        count = 0
    }

    /// Creates the union of `ranges`, in any order, overlapping or not.
    public init<S: Sequence>(_ ranges: S) where S.Element == Range<Int64> {
        self.init()
        for range in ranges { insert(range) }
    }

    /// Whether the set holds no offsets.
    public var isEmpty: Bool { ranges.isEmpty }

    /// One past the highest offset held, or nil when empty.
    public var upperBound: Int64? { ranges.last?.upperBound }

    /// `[0..<10, 20..<30]`.
    public var description: String {
        "[" + ranges.map { "\($0.lowerBound)..<\($0.upperBound)" }.joined(separator: ", ") + "]"
    }

    /// The index of the first range whose upper bound is at least `offset`
    /// (the first range that contains `offset` or touches or follows it).
    private func firstIndex(reaching offset: Int64) -> Int {
        var low = 0
        var high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].upperBound < offset { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The index of the range containing `offset`, if any.
    private func index(containing offset: Int64) -> Int? {
        // First range whose upper bound is strictly above the offset.
        var low = 0
        var high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].upperBound <= offset { low = middle + 1 } else { high = middle }
        }
        guard low < ranges.count, ranges[low].lowerBound <= offset else { return nil }
        return low
    }

    /// Adds `range`, merging it with every range it overlaps or touches.
    public mutating func insert(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        let first = firstIndex(reaching: range.lowerBound)
        var last = first
        var merged = range
        while last < ranges.count, ranges[last].lowerBound <= range.upperBound {
            merged = min(merged.lowerBound, ranges[last].lowerBound)..<max(merged.upperBound, ranges[last].upperBound)
            count -= Int64(ranges[last].count)
            last += 1
        }
        ranges.replaceSubrange(first..<last, with: CollectionOfOne(merged))
        count += Int64(merged.count)
    }

    /// Adds every range of `other`.
    public mutating func formUnion(_ other: RangeSet) {
        for range in other.ranges { insert(range) }
    }

    /// Removes the offsets of `range`, splitting a range that straddles it.
    public mutating func subtract(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        // First range that ends strictly after the removed range starts.
        var first = firstIndex(reaching: range.lowerBound)
        if first < ranges.count, ranges[first].upperBound == range.lowerBound { first += 1 }
        var last = first
        var keep: [Range<Int64>] = []
        while last < ranges.count, ranges[last].lowerBound < range.upperBound {
            let current = ranges[last]
            count -= Int64(current.count)
            if current.lowerBound < range.lowerBound { keep.append(current.lowerBound..<range.lowerBound) }
            if current.upperBound > range.upperBound { keep.append(range.upperBound..<current.upperBound) }
            last += 1
        }
        for piece in keep { count += Int64(piece.count) }
        ranges.replaceSubrange(first..<last, with: keep)
    }

    /// Removes every range of `other`.
    public mutating func subtract(_ other: RangeSet) {
        for range in other.ranges { subtract(range) }
    }

    /// Whether `offset` is in the set.
    public func contains(_ offset: Int64) -> Bool { index(containing: offset) != nil }

    /// Whether every offset of `range` is in the set (true for an empty range).
    public func contains(_ range: Range<Int64>) -> Bool {
        guard !range.isEmpty else { return true }
        guard let index = index(containing: range.lowerBound) else { return false }
        return ranges[index].upperBound >= range.upperBound
    }

    /// The sub-ranges of `range` that are not in the set, in order.
    public func missing(in range: Range<Int64>) -> [Range<Int64>] {
        guard !range.isEmpty else { return [] }
        var gaps: [Range<Int64>] = []
        var cursor = range.lowerBound
        var index = firstIndex(reaching: range.lowerBound)
        if index < ranges.count, ranges[index].upperBound == range.lowerBound { index += 1 }
        while index < ranges.count, ranges[index].lowerBound < range.upperBound, cursor < range.upperBound {
            let held = ranges[index]
            if held.lowerBound > cursor { gaps.append(cursor..<held.lowerBound) }
            cursor = max(cursor, held.upperBound)
            index += 1
        }
        if cursor < range.upperBound { gaps.append(cursor..<range.upperBound) }
        return gaps
    }

    /// How many offsets from `offset` on are in the set without a gap (0 when
    /// `offset` itself is missing).
    public func contiguousLength(from offset: Int64) -> Int64 {
        guard let index = index(containing: offset) else { return 0 }
        return ranges[index].upperBound - offset
    }

    /// The set's ranges that overlap `range`, clipped to it.
    public func intersection(with range: Range<Int64>) -> RangeSet {
        var result = RangeSet()
        var index = firstIndex(reaching: range.lowerBound)
        while index < ranges.count, ranges[index].lowerBound < range.upperBound {
            result.insert(
                max(ranges[index].lowerBound, range.lowerBound)..<min(ranges[index].upperBound, range.upperBound))
            index += 1
        }
        return result
    }
}

extension RangeSet {
    /// The ranges as bytes for the index: little-endian (lower, upper) pairs.
    var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(ranges.count * 16)
        for range in ranges {
            withUnsafeBytes(of: range.lowerBound.littleEndian) { bytes.append(contentsOf: $0) }
            withUnsafeBytes(of: range.upperBound.littleEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    /// Decodes what ``encoded`` wrote; nil unless the bytes are a well-formed
    /// set (sorted, disjoint, non-touching, non-negative, none empty).
    init?(encoded bytes: UnsafeRawBufferPointer) {
        guard bytes.count % 16 == 0 else { return nil }
        var ranges: [Range<Int64>] = []
        ranges.reserveCapacity(bytes.count / 16)
        var total: Int64 = 0
        var previousUpper: Int64 = -1
        var offset = 0
        while offset < bytes.count {
            let lower = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int64.self))
            let upper = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: Int64.self))
            guard lower >= 0, upper > lower, lower > previousUpper else { return nil }
            ranges.append(lower..<upper)
            total += upper - lower
            previousUpper = upper
            offset += 16
        }
        self.ranges = ranges
        self.count = total
    }
}
