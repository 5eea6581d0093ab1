import Fetcher
import MediaSource
import RangeCache
import Testing

private typealias Planner = DownloadPlanner
private let now = ContinuousClock.now

private func starts(_ actions: [Planner.Action]) -> [(key: Int, from: Int64, to: Int64?, priority: FetchPriority)] {
    actions.compactMap {
        if case .start(let key, let from, let to, let priority) = $0 { return (key, from, to, priority) }
        return nil
    }
}

/// A preload is the planner with a scope (the head) and nobody reading.
@Suite("Download planner: a preload's scope")
struct PlannerScopeTests {
    /// A planner preloading the first `prefix` and last `tail` bytes, in the background.
    private func preloading(prefix: Int64, tail: Int64) -> Planner {
        var planner = Planner()
        planner.limitToHead(prefix: prefix, tail: tail)
        _ = planner.setBackground(true, cached: RangeSet(), now: now)
        return planner
    }

    @Test func anUncachedResourceAsksForThePrefixThenTheTailThenNothing() throws {
        var planner = preloading(prefix: 65_536, tail: 16_384)
        let opened = starts(planner.open(cached: RangeSet()))
        #expect(opened.map(\.from) == [0])
        #expect(opened.map(\.to) == [65_536], "the length is not known yet: the prefix alone")
        #expect(opened.map(\.priority) == [.preload])
        planner.setResource(.init(length: 1_000_000, rangesSupported: true))
        var cached = RangeSet([0..<65_536])
        let key = try #require(opened.first?.key)
        _ = planner.received(key, upTo: 65_536, cached: cached)
        let tail = starts(planner.finished(key, cached: cached).actions)
        #expect(tail.map(\.from) == [983_616])
        #expect(tail.map(\.to) == [1_000_000])
        #expect(tail.map(\.priority) == [.preload])
        cached.insert(983_616..<1_000_000)
        #expect(planner.holdsScope(cached: cached))
        let tailKey = try #require(tail.first?.key)
        _ = planner.received(tailKey, upTo: 1_000_000, cached: cached)
        #expect(planner.finished(tailKey, cached: cached).actions.isEmpty, "nothing past the head")
        #expect(!planner.isDownloading)
    }

    @Test func aPartialEntryFetchesOnlyTheHolesOfItsHead() {
        let table: [(cached: [Range<Int64>], from: Int64?, to: Int64?)] = [
            ([0..<10_000], 10_000, 65_536),  // the prefix's rest first
            ([0..<65_536], 983_616, 1_000_000),  // then the tail
            ([0..<65_536, 990_000..<1_000_000], 983_616, 990_000),  // only the tail's hole
            ([0..<65_536, 983_616..<1_000_000], nil, nil),  // the head is here: nothing
            ([0..<1_000_000], nil, nil),
        ]
        for row in table {
            var planner = preloading(prefix: 65_536, tail: 16_384)
            planner.setResource(.init(length: 1_000_000, rangesSupported: true))
            let started = starts(planner.open(cached: RangeSet(row.cached)))
            #expect(started.first?.from == row.from, "\(row.cached)")
            #expect(started.first?.to == row.to, "\(row.cached)")
            #expect(started.count <= 1)
        }
    }

    @Test func aFileShorterThanItsHeadIsFetchedOnceWhole() {
        var planner = preloading(prefix: 65_536, tail: 16_384)
        planner.setResource(.init(length: 50_000, rangesSupported: true))
        let started = starts(planner.open(cached: RangeSet()))
        #expect(started.map(\.from) == [0])
        #expect(started.map(\.to) == [50_000])
        #expect(planner.holdsScope(cached: RangeSet([0..<50_000])))
    }

    @Test func withoutAScopeNothingCountsAsTheHeadAndTheWholeResourceIsFetched() {
        var planner = Planner()
        planner.setResource(.init(length: 1_000_000, rangesSupported: true))
        let started = starts(planner.open(cached: RangeSet([0..<65_536])))
        #expect(started.map(\.from) == [65_536])
        #expect(started.map(\.to) == [nil])
        #expect(!planner.holdsScope(cached: RangeSet([0..<1_000_000])))
    }
}
