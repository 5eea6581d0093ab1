import Foundation
import MediaSource
import RangeCache
import Testing

private let now = ContinuousClock.now
private let mb: Int64 = 1_000_000

/// A planner for a large resource whose length came with the first response (as for an
/// uncached one): its first download runs with no end of its own, and the read-ahead window
/// (2 MB past the play head) is what stops it.
private func largeResource() -> (DownloadPlanner, key: Int) {
    var planner = DownloadPlanner(readAhead: (threshold: 10 * mb, window: 2 * mb))
    _ = planner.open(cached: RangeSet())
    planner.setResource(.init(length: 5_000 * mb, rangesSupported: true))
    return (planner, planner.transfers[0].key)
}

private func cancels(_ actions: [DownloadPlanner.Action]) -> [Int] {
    actions.compactMap { if case .cancel(let key) = $0 { key } else { nil } }
}

@Suite("Download planner: the read-ahead window of a large resource")
struct PlannerWindowTests {
    @Test func aProbeOfTheEndLeavesTheWindowAtThePlayHead() {
        var (planner, main) = largeResource()
        var held = RangeSet([0..<mb])
        _ = planner.read(.init(offset: 0, maxLength: 128 << 10), cached: held, now: now)
        let end = 5_000 * mb
        _ = planner.read(.init(offset: end - 128, maxLength: 128), cached: held, now: now)
        held.insert(end - 128..<end)
        #expect(planner.read(.init(offset: end - 128, maxLength: 128), cached: held, now: now).0 == .serve(128))
        held.insert(0..<3 * mb)
        let effects = planner.received(main, upTo: 3 * mb, cached: held)
        #expect(cancels(effects.actions) == [main])
    }

    @Test func aDownloadLeftAWindowBehindThePlayHeadStops() {
        var (planner, first) = largeResource()
        var held = RangeSet([0..<mb])
        _ = planner.read(.init(offset: 0, maxLength: 128 << 10), cached: held, now: now)
        // A seek far ahead: the first download is set aside, a new one starts at the target.
        let (answer, actions) = planner.read(.init(offset: 50 * mb, maxLength: 128 << 10), cached: held, now: now)
        #expect(answer == .wait)
        #expect(planner.transfers.contains { $0.key == first && $0.role == .parked })
        #expect(actions.contains { if case .start(_, 50 * mb, _, _) = $0 { true } else { false } })
        held.insert(0..<mb + 1000)
        let effects = planner.received(first, upTo: mb + 1000, cached: held)
        #expect(cancels(effects.actions) == [first])
        #expect(!planner.transfers.contains { $0.key == first })
    }

    /// The window is refilled once no more than half of it is held ahead of the reader, and
    /// not before: requests of half a window, not one per read.
    @Test func theWindowIsRefilledOnceHalfOfItIsUsed() {
        var (planner, main) = largeResource()
        var held = RangeSet([0..<mb])
        _ = planner.read(.init(offset: 0, maxLength: 128 << 10), cached: held, now: now)
        held.insert(0..<1_500_000)
        _ = planner.finished(main, cached: held)
        let (_, early) = planner.read(.init(offset: 128 << 10, maxLength: 128 << 10), cached: held, now: now)
        #expect(early.isEmpty, "refilled with 1.37 MB of 2 MB ahead: \(early)")
        let (_, due) = planner.read(.init(offset: 500_000, maxLength: 128 << 10), cached: held, now: now)
        #expect(due.contains { if case .start(_, 1_500_000, _, _) = $0 { true } else { false } }, "\(due)")
    }

    /// A read far behind the play head (a seek back) whose first bytes arrive short of its
    /// minimum: the transfer bringing the rest is the reader's, not one left behind.
    @Test func aDownloadBringingTheRestOfAWaitingReadIsKept() {
        var (planner, main) = largeResource()
        var held = RangeSet([0..<2 * mb])
        _ = planner.read(.init(offset: 0, maxLength: 128 << 10), cached: held, now: now)
        #expect(cancels(planner.received(main, upTo: 2 * mb, cached: held).actions) == [main])  // the window is full
        // Read on to 40 MB (the window refilled on the way), then a small read back at 0.
        held = RangeSet([40 * mb..<41 * mb])
        _ = planner.read(.init(offset: 40 * mb, maxLength: 128 << 10), cached: held, now: now)
        for transfer in planner.transfers { _ = planner.received(transfer.key, upTo: 41 * mb, cached: held) }
        let (answer, actions) = planner.read(.init(offset: 0, maxLength: 4096), cached: held, now: now)
        #expect(answer == .wait)
        let back = actions.compactMap { if case .start(let key, 0, _, _) = $0 { key } else { nil } }.first
        guard let back else {
            Issue.record("no request at byte 0: \(actions)")
            return
        }
        held.insert(0..<1000)
        let effects = planner.received(back, upTo: 1000, cached: held)
        #expect(cancels(effects.actions).isEmpty)
        #expect(planner.transfers.contains { $0.key == back })
    }

    @Test func aDownloadTheReaderWaitsForIsKeptWhereverThePlayHeadIs() {
        var (planner, main) = largeResource()
        let held = RangeSet([0..<mb])
        // The reader waits just ahead of the download: it is the way there.
        _ = planner.read(.init(offset: mb + 1000, maxLength: 128 << 10), cached: held, now: now)
        let effects = planner.received(main, upTo: mb + 500, cached: RangeSet([0..<mb + 500]))
        #expect(cancels(effects.actions).isEmpty)
    }

    /// A seek whose transfer ends before the woken reader reads again: the reader is not
    /// waiting any more, so nothing more is fetched for it at the old play head's window; its
    /// next read moves the window and refills it a whole window past the target.
    @Test func aSatisfiedReaderIsNotFetchedForAgainBeforeItReads() {
        var planner = DownloadPlanner(readAhead: (threshold: 2 * mb, window: mb))
        _ = planner.open(cached: RangeSet())
        planner.setResource(.init(length: 6 * mb, rangesSupported: true))
        var held = RangeSet([0..<mb])
        _ = planner.read(.init(offset: 0, maxLength: 65_536), cached: held, now: now)
        _ = planner.finished(planner.transfers[0].key, cached: held)
        let target = 3 * mb
        let (answer, seek) = planner.read(.init(offset: target, maxLength: 65_536), cached: held, now: now)
        #expect(answer == .wait)
        guard case .start(let key, target, let end?, _) = seek.last else {
            Issue.record("no request at the target: \(seek)")
            return
        }
        held.insert(target..<end)
        #expect(planner.received(key, upTo: end, cached: held).wakeReader)
        let finished = planner.finished(key, cached: held)
        #expect(finished.actions.isEmpty, "fetched on for a reader already served: \(finished.actions)")
        let (served, refill) = planner.read(.init(offset: target, maxLength: 65_536), cached: held, now: now)
        #expect(served == .serve(65_536))
        #expect(
            refill.contains { if case .start(_, end, target + mb, _) = $0 { true } else { false } }, "\(refill)")
    }
}
