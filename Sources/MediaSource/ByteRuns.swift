import FoundationEssentials

/// Bytes of a resource held in memory at their offsets, as the chunks they arrived in.
/// Chunks are never grown or merged: dropping part of the held bytes frees exactly that much,
/// with no copy of the rest and no spare capacity left over from appending.
struct ByteRuns {
    /// Sorted by offset and disjoint.
    private var chunks: [(start: Int64, bytes: Data)] = []

    /// Bytes held in all.
    private(set) var count: Int64 = 0

    /// The held ranges, in order, adjacent chunks merged.
    var ranges: [Range<Int64>] {
        var merged: [Range<Int64>] = []
        for chunk in chunks {
            let range = chunk.start..<(chunk.start + Int64(chunk.bytes.count))
            if let last = merged.last, last.upperBound == range.lowerBound {
                merged[merged.count - 1] = last.lowerBound..<range.upperBound
            } else {
                merged.append(range)
            }
        }
        return merged
    }

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
        var position = offset
        var index = firstIndex(endingAfter: offset)
        while position < end {
            if index < chunks.count, chunks[index].start <= position {
                position = min(end, chunks[index].start + Int64(chunks[index].bytes.count))
                index += 1
                continue
            }
            let gapEnd = index < chunks.count ? min(end, chunks[index].start) : end
            chunks.insert((position, Self.copy(bytes, Int(position - offset)..<Int(gapEnd - offset))), at: index)
            count += gapEnd - position
            position = gapEnd
            index += 1
        }
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
    }

    /// A fresh copy of `bytes[relative]`: a slice would keep the whole buffer alive.
    private static func copy(_ bytes: Data, _ relative: Range<Int>) -> Data {
        bytes.withUnsafeBytes { raw in Data(UnsafeRawBufferPointer(rebasing: raw[relative])) }
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
