import Fetcher
import Foundation
import MediaSource
import RangeCache
import Testing

private typealias Planner = DownloadPlanner
private let now = ContinuousClock.now
private let length: Int64 = 470_032
private let tail: Int64 = 8500
private let head = Planner.headBeforeTail

/// The keys and ranges of the requests `actions` start, head requests included (the last
/// bytes' request as it will deliver them, in a resource of `length`).
private func requests(_ actions: [Planner.Action]) -> [(key: Int, from: Int64, to: Int64?, head: Bool)] {
    actions.compactMap {
        switch $0 {
        case .start(let key, let from, let to, _): (key, from, to, false)
        case .startHead(let key, let to, _): (key, 0, to, true)
        case .startLast(let key, let count, _): (key, length - count, length, false)
        default: nil
        }
    }
}

/// An uncached resource opened tail first and answered by an origin serving ranges: the head's
/// and the tail's keys.
private func openedWithTail(_ planner: inout Planner) -> (head: Int, tail: Int) {
    let opened = requests(planner.open(cached: RangeSet(), tail: tail))
    #expect(planner.learn(.init(length: length, rangesSupported: true), cached: RangeSet()).isEmpty)
    return (opened.first?.key ?? -1, opened.dropFirst().first?.key ?? -1)
}

/// Opened tail first, and the head's request finished: the keys, and the head's bytes held.
private func openedWithHeadDone(_ planner: inout Planner) -> (keys: (head: Int, tail: Int), cached: RangeSet) {
    let keys = openedWithTail(&planner)
    var cached = RangeSet()
    cached.insert(0..<head)
    _ = planner.finished(keys.head, cached: cached)
    return (keys, cached)
}

@Suite("Download planner: the tail first")
struct TailFirstTests {
    /// One round trip: the head and the last bytes are asked for together, before the length
    /// is known; the first response (either) tells where the last bytes start.
    @Test func anUncachedOpenAsksForTheHeadAndTheLastBytesTogether() {
        var planner = Planner()
        let opened = planner.open(cached: RangeSet(), tail: tail)
        #expect(
            opened == [
                .startHead(key: 1, to: head, priority: .playback),
                .startLast(key: 2, length: tail, priority: .playback),
            ])
        #expect(planner.isAwaitingTail)
        let learned = planner.learn(.init(length: length, rangesSupported: true), cached: RangeSet())
        #expect(learned.isEmpty)
        let last = planner.transfers.first { $0.key == 2 }
        #expect(last?.next == length - tail && last?.end == length && last?.role == .probe)
        #expect(planner.isAwaitingTail)
    }

    /// Before any response, a read of the end waits for the last bytes' request: no other.
    @Test func aReadOfTheEndBeforeAnyResponseAsksNothingMore() {
        var planner = Planner()
        _ = planner.open(cached: RangeSet(), tail: tail)
        let (answer, actions) = planner.read(.init(offset: length - 100, maxLength: 100), cached: RangeSet(), now: now)
        #expect(answer == .wait)
        #expect(requests(actions).isEmpty)
    }

    @Test func withoutATailTheOpenAsksForEverything() {
        var planner = Planner()
        #expect(requests(planner.open(cached: RangeSet())).map(\.to) == [nil])
        #expect(planner.learn(.init(length: length, rangesSupported: true), cached: RangeSet()).isEmpty)
    }

    @Test func theRestWaitsForTheTailThenFollowsFromTheEndOfTheHead() {
        var planner = Planner()
        let keys = openedWithTail(&planner)
        var cached = RangeSet()
        cached.insert(0..<head)
        let headDone = planner.finished(keys.head, cached: cached)
        #expect(requests(headDone.actions).isEmpty, "the rest started before the tail: \(headDone.actions)")
        cached.insert((length - tail)..<length)
        let tailDone = planner.finished(keys.tail, cached: cached)
        #expect(requests(tailDone.actions).map(\.from) == [head])
        #expect(requests(tailDone.actions).map(\.to) == [length - tail])
        #expect(!planner.isAwaitingTail)
    }

    /// The rest's request leaves once the tail is about to end at its measured rate (within
    /// the time a request takes to bring its first byte), not one round trip after it.
    @Test func theRestLeavesAsTheTailIsAboutToEnd() {
        var planner = Planner()
        var (keys, cached) = openedWithHeadDone(&planner)
        _ = planner.read(.init(offset: head, maxLength: 8500, minLength: 1), cached: cached, now: now)
        // At 1 kB/s, 3 s to go is not yet; at 10 kB/s, 0.2 s to go is.
        cached.insert((length - tail)..<(length - 3000))
        _ = planner.received(keys.tail, upTo: length - 3000, cached: cached)
        #expect(requests(planner.setRate(1000, of: keys.tail, cached: cached, now: now)).isEmpty)
        #expect(planner.isAwaitingTail)
        cached.insert((length - 3000)..<(length - 2000))
        _ = planner.received(keys.tail, upTo: length - 2000, cached: cached)
        let due = planner.setRate(10_000, of: keys.tail, cached: cached, now: now)
        #expect(requests(due).map(\.from) == [head])
        #expect(!planner.isAwaitingTail)
    }

    @Test func aReadPastTheHeadWaitsForTheTailAndIsFetchedAfterIt() {
        var planner = Planner()
        var (keys, cached) = openedWithHeadDone(&planner)
        let (answer, actions) = planner.read(.init(offset: 0, maxLength: 8500, minLength: 1), cached: cached, now: now)
        #expect(answer == .serve(Int(head)))
        #expect(actions.isEmpty)
        let (later, waiting) = planner.read(
            .init(offset: head, maxLength: 8500, minLength: 1), cached: cached, now: now)
        #expect(later == .wait)
        #expect(requests(waiting).isEmpty, "a request beside the tail's: \(waiting)")
        cached.insert((length - tail)..<length)
        let tailDone = planner.finished(keys.tail, cached: cached)
        #expect(requests(tailDone.actions).map(\.from) == [head])
    }

    @Test func theEndReadIsServedByTheTailRequestWithoutAnotherOne() {
        var planner = Planner()
        _ = openedWithTail(&planner)
        var cached = RangeSet()
        cached.insert(0..<head)
        let (answer, actions) = planner.read(.init(offset: length - tail, maxLength: 8500), cached: cached, now: now)
        #expect(answer == .wait)
        #expect(requests(actions).isEmpty)
    }

    @Test(arguments: [(false, Int64?.some(length)), (true, nil), (false, nil)])
    func anOriginWithoutRangesOrLengthGetsNoTailAndTheHeadRunsToTheEnd(ranges: Bool, length: Int64?) {
        var planner = Planner()
        _ = planner.open(cached: RangeSet(), tail: tail)
        let learned = planner.learn(.init(length: length, rangesSupported: ranges), cached: RangeSet())
        #expect(learned == [.cancel(key: 2)], "the last bytes' request stops")
        #expect(!planner.isAwaitingTail)
        #expect(planner.main?.end == nil, "the head stays bounded: \(String(describing: planner.main))")
    }

    @Test func aShortFileAsksForTheTailOnlyFromTheEndOfTheHead() {
        var planner = Planner()
        _ = planner.open(cached: RangeSet(), tail: tail)
        let learned = planner.learn(.init(length: 6000, rangesSupported: true), cached: RangeSet())
        #expect(learned == [.cancel(key: 2), .start(key: 3, from: head, to: 6000, priority: .playback)])
    }

    @Test func aFileNoLongerThanTheHeadNeedsNoTail() {
        var planner = Planner()
        _ = planner.open(cached: RangeSet(), tail: tail)
        #expect(planner.learn(.init(length: 3000, rangesSupported: true), cached: RangeSet()) == [.cancel(key: 2)])
        #expect(!planner.isAwaitingTail)
    }

    @Test func aPartialEntryFetchesItsMissingTailFirstThenContinues() {
        var planner = Planner()
        planner.setResource(.init(length: length, rangesSupported: true))
        var cached = RangeSet()
        cached.insert(0..<100_000)
        let opened = planner.open(cached: cached, tail: tail)
        #expect(requests(opened).map(\.from) == [length - tail])
        guard let key = requests(opened).first?.key else { return }
        cached.insert((length - tail)..<length)
        let done = planner.finished(key, cached: cached)
        #expect(requests(done.actions).map(\.from) == [100_000])
    }

    @Test func aPartialEntryWithItsTailContinuesAtOnce() {
        var planner = Planner()
        planner.setResource(.init(length: length, rangesSupported: true))
        var cached = RangeSet()
        cached.insert(0..<100_000)
        cached.insert((length - tail)..<length)
        let opened = planner.open(cached: cached, tail: tail)
        #expect(requests(opened).map(\.from) == [100_000])
        #expect(!planner.isAwaitingTail)
    }

    @Test func aFailedTailNoLongerHoldsTheRestBack() {
        var planner = Planner()
        let keys = openedWithTail(&planner)
        planner.forget(keys.tail)
        #expect(!planner.isAwaitingTail)
        var cached = RangeSet()
        cached.insert(0..<head)
        let headDone = planner.finished(keys.head, cached: cached)
        #expect(requests(headDone.actions).map(\.from) == [head])
    }

    @Test func inTheBackgroundTheOpeningRequestsArePreloads() {
        var planner = Planner()
        _ = planner.setBackground(true, cached: RangeSet(), now: now)
        #expect(
            planner.open(cached: RangeSet(), tail: tail) == [
                .startHead(key: 1, to: head, priority: .preload), .startLast(key: 2, length: tail, priority: .preload),
            ])
        #expect(planner.learn(.init(length: length, rangesSupported: true), cached: RangeSet()).isEmpty)
    }
}
