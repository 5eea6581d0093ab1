import FoundationEssentials

/// Bytes of a resource held in memory at their offsets, in blocks. A piece that continues the
/// last block is appended to it while the block has room (``blockSize``, reserved when the
/// block starts, so appending never reallocates): a live stream arrives in pieces of a few
/// hundred bytes, fifty a second, and a store of one `Data` per piece spent more on the pieces'
/// bookkeeping than on their bytes, and its readers walked thousands of them. Dropping part of
/// a block copies the part kept, so what is dropped is freed.
struct ByteRuns {
    /// Sorted by offset and disjoint.
    private var chunks: [(start: Int64, bytes: Data)] = []

    /// The most bytes a block takes by appending; a larger piece is a block of its own.
    static let blockSize = 64 * 1024

    /// Bytes held in all.
    private(set) var count: Int64 = 0

    /// The held ranges, in order, adjacent blocks merged; kept as bytes come and go, so asking
    /// costs nothing (the http source asks at every piece that arrives).
    private(set) var ranges: [Range<Int64>] = []

    /// Up to `maxLength` contiguous bytes from `offset`, or nil if that byte is not held.
    func read(at offset: Int64, maxLength: Int) -> Data? {
        guard var index = index(containing: offset) else { return nil }
        var result = Data()
        var position = offset
        // Chunks are disjoint: a later one starting at or before `position` starts exactly there.
        while result.count < maxLength, index < chunks.count, chunks[index].start <= position {
            let chunk = chunks[index]
            let from = Int(position - chunk.start)
            let take = min(maxLength - result.count, chunk.bytes.count - from)
            let base = chunk.bytes.startIndex
            result.append(chunk.bytes[(base + from)..<(base + from + take)])
            position += Int64(take)
            index += 1
        }
        return result
    }

    /// Stores `bytes` at `offset`; bytes already held keep their value.
    mutating func write(_ bytes: Data, at offset: Int64) {
        let end = offset + Int64(bytes.count)
        guard end > offset else { return }
        var position = offset
        var index = firstIndex(endingAfter: offset)
        while position < end {
            if index < chunks.count, chunks[index].start <= position {
                position = min(end, chunks[index].start + Int64(chunks[index].bytes.count))
                index += 1
                continue
            }
            let gapEnd = index < chunks.count ? min(end, chunks[index].start) : end
            let piece = Int(position - offset)..<Int(gapEnd - offset)
            if index > 0, chunks[index - 1].start + Int64(chunks[index - 1].bytes.count) == position,
                chunks[index - 1].bytes.count + piece.count <= Self.blockSize
            {
                bytes.withUnsafeBytes { raw in
                    chunks[index - 1].bytes.append(
                        UnsafeRawBufferPointer(rebasing: raw[piece]).assumingMemoryBound(to: UInt8.self))
                }
            } else {
                chunks.insert((position, Self.block(bytes, piece)), at: index)
                index += 1
            }
            count += gapEnd - position
            position = gapEnd
        }
        insertRange(offset..<end)
    }

    /// Adds `range` to ``ranges``, joining what it touches: at the end (the usual case) at once.
    private mutating func insertRange(_ range: Range<Int64>) {
        if let last = ranges.last, last.upperBound <= range.lowerBound {
            if last.upperBound == range.lowerBound {
                ranges[ranges.count - 1] = last.lowerBound..<range.upperBound
            } else {
                ranges.append(range)
            }
            return
        }
        var low = 0
        var high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].upperBound < range.lowerBound { low = middle + 1 } else { high = middle }
        }
        var joined = range
        var last = low
        while last < ranges.count, ranges[last].lowerBound <= joined.upperBound {
            joined = min(joined.lowerBound, ranges[last].lowerBound)..<max(joined.upperBound, ranges[last].upperBound)
            last += 1
        }
        ranges.replaceSubrange(low..<last, with: [joined])
    }

    /// Keeps only the bytes inside `kept` (sorted, disjoint ranges); a chunk cut in two keeps
    /// a copy of its part, so the rest is freed.
    mutating func retain(_ kept: [Range<Int64>]) {
        var result: [(start: Int64, bytes: Data)] = []
        var total: Int64 = 0
        for chunk in chunks {
            let range = chunk.start..<(chunk.start + Int64(chunk.bytes.count))
            for keep in kept where keep.overlaps(range) {
                let part = range.clamped(to: keep)
                let bytes =
                    part == range
                    ? chunk.bytes
                    : Self.copy(chunk.bytes, Int(part.lowerBound - chunk.start)..<Int(part.upperBound - chunk.start))
                result.append((part.lowerBound, bytes))
                total += Int64(part.count)
            }
        }
        chunks = result
        count = total
        ranges = []
        for chunk in chunks {
            let range = chunk.start..<(chunk.start + Int64(chunk.bytes.count))
            if let last = ranges.last, last.upperBound == range.lowerBound {
                ranges[ranges.count - 1] = last.lowerBound..<range.upperBound
            } else {
                ranges.append(range)
            }
        }
    }

    /// A fresh copy of `bytes[relative]`: a slice would keep the whole buffer alive.
    private static func copy(_ bytes: Data, _ relative: Range<Int>) -> Data {
        bytes.withUnsafeBytes { raw in Data(UnsafeRawBufferPointer(rebasing: raw[relative])) }
    }

    /// A new block holding `bytes[relative]`: room for ``blockSize`` when the piece is smaller,
    /// so that the pieces that follow it are appended in place.
    private static func block(_ bytes: Data, _ relative: Range<Int>) -> Data {
        guard relative.count < blockSize else { return copy(bytes, relative) }
        var block = Data(capacity: blockSize)
        bytes.withUnsafeBytes { raw in
            block.append(UnsafeRawBufferPointer(rebasing: raw[relative]).assumingMemoryBound(to: UInt8.self))
        }
        return block
    }

    /// The first chunk that ends after `offset` (binary search).
    private func firstIndex(endingAfter offset: Int64) -> Int {
        var low = 0
        var high = chunks.count
        while low < high {
            let middle = (low + high) / 2
            if chunks[middle].start + Int64(chunks[middle].bytes.count) <= offset {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }

    private func index(containing offset: Int64) -> Int? {
        let index = firstIndex(endingAfter: offset)
        return index < chunks.count && chunks[index].start <= offset ? index : nil
    }
}
