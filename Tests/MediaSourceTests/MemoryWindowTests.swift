import Foundation
import TestSupport
import Testing

@testable import MediaSource

/// The memory window's decisions and the chunk store it trims, driven directly.
@Suite("Memory window")
struct MemoryWindowTests {
    let window = MemoryWindow(capacity: 100)

    @Test(
        arguments: [
            // held, reader, kept (a trim leaves 94 of the 100)
            ([0..<100], 50, [0..<100]),  // fits: nothing dropped
            ([0..<150], 100, [56..<150]),  // behind the reader first, lowest first
            ([0..<40, 60..<160], 100, [66..<160]),  // a whole run behind goes before part of the next
            ([0..<150], 0, [0..<94]),  // nothing behind: the furthest ahead goes
            ([0..<30, 50..<200], 60, [60..<154]),  // behind first, then the far end ahead
            ([200..<350], 0, [200..<294]),  // all ahead, not touching the reader
        ] as [([Range<Int64>], Int64, [Range<Int64>])])
    func keepsTheBytesNearestTheWayForward(held: [Range<Int64>], reader: Int64, kept: [Range<Int64>]) {
        #expect(window.retained(held, reader: reader) == kept)
    }

    /// A waiting read far from the play head (a seek back, a probe at the end): its bytes stay,
    /// and the others go in its place.
    @Test(
        arguments: [
            // held, reader, needed, kept
            ([0..<10, 100..<200], 150, 0..<10, [0..<10, 116..<200]),  // behind the reader, yet kept
            ([0..<150], 0, 140..<150, [0..<84, 140..<150]),  // furthest ahead, yet kept
            ([0..<150], 100, 20..<30, [20..<30, 66..<150]),  // in the middle of what goes behind
        ] as [([Range<Int64>], Int64, Range<Int64>, [Range<Int64>])])
    func keepsTheBytesAWaitingReadNeeds(
        held: [Range<Int64>], reader: Int64, needed: Range<Int64>, kept: [Range<Int64>]
    ) {
        #expect(window.retained(held, reader: reader, needed: needed) == kept)
    }

    @Test func chunksAreStoredOnceAndTrimmedExactly() {
        var runs = ByteRuns()
        runs.write(Data(0..<10), at: 0)
        runs.write(Data(100..<120), at: 5)  // overlaps: held bytes keep their value
        runs.write(Data(200..<205), at: 40)
        #expect(runs.count == 30)
        #expect(runs.ranges == [0..<25, 40..<45])
        #expect(runs.read(at: 3, maxLength: 10) == Data([3, 4, 5, 6, 7, 8, 9, 105, 106, 107]))
        runs.retain([4..<12, 42..<100])
        #expect(runs.count == 11)
        #expect(runs.ranges == [4..<12, 42..<45])
        #expect(runs.read(at: 4, maxLength: 100) == Data([4, 5, 6, 7, 8, 9, 105, 106]))
        #expect(runs.read(at: 3, maxLength: 1) == nil)
    }

    @Test func smallPiecesInARowShareBlocksAndReadBackExactly() {
        var runs = ByteRuns()
        var expected = Data()
        var generator = SeededGenerator(seed: 7)
        var offset: Int64 = 0
        // A live stream's pieces: a few hundred bytes each, one after the other.
        while offset < 300_000 {
            let piece = Data(
                (0..<Int(generator.next() % 600 + 1)).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
            runs.write(piece, at: offset)
            expected.append(piece)
            offset += Int64(piece.count)
        }
        #expect(runs.ranges == [0..<offset])
        #expect(runs.count == offset)
        #expect(runs.read(at: 0, maxLength: Int(offset)) == expected)
        #expect(runs.read(at: 65_530, maxLength: 20) == expected[65_530..<65_550], "across a block's end")
        runs.write(Data(repeating: 1, count: 10), at: offset + 100)
        runs.write(Data(repeating: 2, count: 100), at: offset)  // fills the gap, joins the ranges
        #expect(runs.ranges == [0..<(offset + 110)])
        runs.retain([1_000..<2_000, 70_000..<(offset + 110)])
        #expect(runs.ranges == [1_000..<2_000, 70_000..<(offset + 110)])
        #expect(runs.read(at: 1_500, maxLength: 10) == expected[1_500..<1_510])
        runs.write(Data(repeating: 3, count: 5_000), at: 1_500)  // grows the first range
        #expect(runs.ranges == [1_000..<6_500, 70_000..<(offset + 110)])
        #expect(runs.read(at: 1_998, maxLength: 4) == expected[1_998..<2_000] + Data([3, 3]))
        runs.write(Data(repeating: 4, count: 63_600), at: 6_400)  // bridges the gap
        #expect(runs.ranges == [1_000..<(offset + 110)])
        #expect(runs.count == offset + 110 - 1_000)
    }
}
