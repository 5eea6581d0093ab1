import Foundation
import TestSupport
import Testing

@testable import RangeCache

/// The reference model: one Bool per offset of a small domain.
private struct NaiveSet {
    var held = [Bool](repeating: false, count: 300)
    mutating func insert(_ range: Range<Int64>) { for i in range { held[Int(i)] = true } }
    mutating func subtract(_ range: Range<Int64>) { for i in range { held[Int(i)] = false } }
    var count: Int64 { Int64(held.filter { $0 }.count) }
    var ranges: [Range<Int64>] {
        var result: [Range<Int64>] = []
        var start: Int?
        for (i, bit) in zip(0..., held + [false]) {
            if bit, start == nil { start = i }
            if !bit, let s = start {
                result.append(Int64(s)..<Int64(i))
                start = nil
            }
        }
        return result
    }
    func missing(in range: Range<Int64>) -> [Range<Int64>] {
        var result: [Range<Int64>] = []
        var start: Int64?
        for i in range {
            if !held[Int(i)], start == nil { start = i }
            if held[Int(i)], let s = start {
                result.append(s..<i)
                start = nil
            }
        }
        if let start { result.append(start..<range.upperBound) }
        return result
    }
    func contiguousLength(from offset: Int64) -> Int64 {
        var i = Int(offset)
        while i < held.count, held[i] { i += 1 }
        return Int64(i) - offset
    }
}

@Suite struct RangeSetTests {
    @Test(arguments: 1...8 as ClosedRange<UInt64>)
    func randomOperationsAgreeWithTheReferenceModel(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var set = RangeSet()
        var model = NaiveSet()
        func randomRange() -> Range<Int64> {
            let a = Int64.random(in: 0..<280, using: &random)
            return a..<(a + Int64.random(in: 0...(seed % 2 == 0 ? 20 : 6), using: &random))
        }
        for step in 0..<1500 {
            let range = randomRange()
            if Int.random(in: 0..<3, using: &random) == 0 {
                set.subtract(range)
                model.subtract(range)
            } else {
                set.insert(range)
                model.insert(range)
            }
            #expect(set.ranges == model.ranges, "step \(step) after \(range)")
            #expect(set.count == model.count)
            let query = randomRange()
            #expect(set.missing(in: query) == model.missing(in: query), "missing(in: \(query)) at step \(step)")
            let offset = Int64.random(in: 0..<290, using: &random)
            #expect(set.contiguousLength(from: offset) == model.contiguousLength(from: offset))
            #expect(set.contains(offset) == model.held[Int(offset)])
            #expect(set.contains(query) == model.missing(in: query).isEmpty)
            if step % 100 == 0 {
                let decoded = set.encoded.withUnsafeBytes { RangeSet(encoded: $0) }
                #expect(decoded == set)
            }
        }
    }

    @Test func touchingRangesMergeAndSubtractSplits() {
        var set = RangeSet([10..<20, 0..<10, 30..<40])
        #expect(set.ranges == [0..<20, 30..<40])
        set.insert(20..<30)
        #expect(set.ranges == [0..<40])
        set.subtract(5..<8)
        #expect(set.ranges == [0..<5, 8..<40])
        #expect(set.count == 37)
        #expect(set.missing(in: 0..<50) == [5..<8, 40..<50])
        #expect(set.contiguousLength(from: 8) == 32)
        #expect(set.intersection(with: 3..<10).ranges == [3..<5, 8..<10])
    }

    @Test func malformedEncodingsAreRejected() {
        func decode(_ pairs: [Int64]) -> RangeSet? {
            let bytes = pairs.flatMap { value in withUnsafeBytes(of: value.littleEndian) { Array($0) } }
            return bytes.withUnsafeBytes { RangeSet(encoded: $0) }
        }
        #expect(decode([0, 10, 20, 30]) == RangeSet([0..<10, 20..<30]))
        #expect(decode([0, 10, 10, 30]) == nil, "touching ranges")
        #expect(decode([20, 30, 0, 10]) == nil, "unsorted")
        #expect(decode([5, 5]) == nil, "empty range")
        #expect(decode([-4, 5]) == nil, "negative offset")
        #expect([UInt8](repeating: 1, count: 7).withUnsafeBytes { RangeSet(encoded: $0) } == nil, "ragged length")
    }
}
