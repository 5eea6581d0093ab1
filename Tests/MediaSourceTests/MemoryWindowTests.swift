import Foundation
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

    @Test(
        arguments: [
            // reader, next or held end, full, resume
            (0, 99, false, false),
            (0, 100, true, false),
            (1_000, 1_100, true, false),
            (1_000, 1_050, false, false),
            (1_000, 1_049, false, true),
            (1_000, 1_000, false, true),
        ] as [(Int64, Int64, Bool, Bool)])
    func stopsAFullWindowAheadAndResumesAtHalf(reader: Int64, end: Int64, full: Bool, resume: Bool) {
        #expect(window.isFull(reader: reader, next: end) == full)
        #expect(window.shouldResume(reader: reader, heldEnd: end) == resume)
    }

    /// A window running 40 bytes ahead (a metered read-ahead) stops there and resumes at 20;
    /// what it keeps is still the whole capacity.
    @Test(
        arguments: [
            // reader, next or held end, full, resume
            (0, 39, false, false),
            (0, 40, true, false),
            (1_000, 1_020, false, false),
            (1_000, 1_019, false, true),
        ] as [(Int64, Int64, Bool, Bool)])
    func runningAheadStopsThereAndResumesAtHalfOfIt(reader: Int64, end: Int64, full: Bool, resume: Bool) {
        let metered = window.runningAhead(40)
        #expect(metered.isFull(reader: reader, next: end) == full)
        #expect(metered.shouldResume(reader: reader, heldEnd: end) == resume)
        #expect(metered.retained([0..<150], reader: 100) == window.retained([0..<150], reader: 100))
    }

    @Test func runningAheadIsBoundedByTheCapacity() {
        #expect(window.runningAhead(nil).ahead == 100)
        #expect(window.runningAhead(500).ahead == 100)
        #expect(window.runningAhead(0).ahead == 1)
        #expect(window.runningAhead(nil) == window)
    }

    @Test func chunksAreStoredOnceAndTrimmedExactly() {
        var runs = ByteRuns()
        runs.write(Data(0..<10), at: 0)
        runs.write(Data(100..<120), at: 5)  // overlaps: held bytes keep their value
        runs.write(Data(200..<205), at: 40)
        #expect(runs.count == 30)
        #expect(runs.ranges == [0..<25, 40..<45])
        #expect(runs.read(at: 3, maxLength: 10) == Data([3, 4, 5, 6, 7, 8, 9, 105, 106, 107]))
        #expect(runs.contiguousEnd(from: 2) == 25)
        #expect(runs.contiguousEnd(from: 30) == 30)
        runs.retain([4..<12, 42..<100])
        #expect(runs.count == 11)
        #expect(runs.ranges == [4..<12, 42..<45])
        #expect(runs.read(at: 4, maxLength: 100) == Data([4, 5, 6, 7, 8, 9, 105, 106]))
        #expect(runs.read(at: 3, maxLength: 1) == nil)
    }
}
