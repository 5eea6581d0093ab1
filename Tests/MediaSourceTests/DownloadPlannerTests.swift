import Fetcher
import Foundation
import MediaSource
import RangeCache
import TestSupport
import Testing

private typealias Planner = DownloadPlanner
private let start = ContinuousClock.now
private let mb: Int64 = 1_000_000

/// A planner for a resource of `length` bytes, opened with `cached` already here.
private func planner(
    length: Int64? = 4 * mb, ranges: Bool = true, cached: RangeSet = RangeSet(),
    readAhead: (threshold: Int64, window: Int64)? = nil
) -> (Planner, [Planner.Action]) {
    var planner = Planner(readAhead: readAhead)
    planner.setResource(.init(length: length, rangesSupported: ranges))
    let actions = planner.open(cached: cached)
    return (planner, actions)
}

/// Where ``plannerWithAProbe()`` probes.
private let probeTarget = 2 * mb

/// A planner whose download from 0 has brought 1000 bytes and whose probe at ``probeTarget``
/// (a 4 KiB read there) has just started, with the keys of both and what is cached.
private func plannerWithAProbe() -> (Planner, main: Int, probe: Int, cached: RangeSet)? {
    var (p, opened) = planner()
    guard case .start(let mainKey, _, _, _) = opened.first else { return nil }
    let cached = RangeSet([0..<1000])
    _ = p.received(mainKey, upTo: 1000, cached: cached)
    let (_, probed) = p.read(.init(offset: probeTarget, maxLength: 4096), cached: cached, now: start)
    guard case .start(let probeKey, _, let to, _) = probed.first, to == probeTarget + Planner.probeRequestMinimum
    else { return nil }
    return (p, mainKey, probeKey, cached)
}

private func starts(_ actions: [Planner.Action]) -> [(from: Int64, to: Int64?, priority: FetchPriority)] {
    actions.compactMap {
        if case .start(_, let from, let to, let priority) = $0 { return (from, to, priority) }
        return nil
    }
}

private func cancels(_ actions: [Planner.Action]) -> [Int] {
    actions.compactMap {
        if case .cancel(let key) = $0 { return key }
        return nil
    }
}

@Suite("Download planner: rules")
struct DownloadPlannerRuleTests {
    @Test func openingUncachedStartsAtZeroForPlaybackAndACompleteEntryStartsNothing() {
        var uncached = Planner()
        let fresh = uncached.open(cached: RangeSet())  // nothing known before the first response
        #expect(starts(fresh).map(\.from) == [0])
        #expect(starts(fresh).first?.priority == .playback)
        #expect(starts(fresh).first?.to == nil)
        let (_, complete) = planner(cached: RangeSet([0..<4 * mb]))
        #expect(complete.isEmpty)
    }

    @Test func aPartialEntryContinuesFromItsFirstMissingByteUpToTheNextCachedOne() {
        let (_, actions) = planner(cached: RangeSet([0..<100, 500..<4 * mb]))
        let started = starts(actions)
        #expect(started.count == 1)
        #expect(started.first?.from == 100 && started.first?.to == 500 && started.first?.priority == .readAhead)
    }

    @Test func cachedBytesAreServedAndAMinimumMakesAShortAnswer() {
        var (p, _) = planner()
        let cached = RangeSet([0..<10_000])
        #expect(p.read(.init(offset: 0, maxLength: 4096), cached: cached, now: start).0 == .serve(4096))
        // 64 KiB asked, 8 KiB enough: the 10,000 bytes here are the answer.
        #expect(
            p.read(.init(offset: 0, maxLength: 65536, minLength: 8192), cached: cached, now: start).0 == .serve(10_000))
        #expect(p.read(.init(offset: 0, maxLength: 65536), cached: cached, now: start).0 == .wait)
        // At the end, fewer than the minimum is the whole rest.
        #expect(
            p.read(.init(offset: 4 * mb - 10, maxLength: 4096), cached: RangeSet([0..<4 * mb]), now: start).0
                == .serve(10))
        #expect(p.read(.init(offset: 4 * mb, maxLength: 4096), cached: cached, now: start).0 == .endOfStream)
    }

    @Test func aReadJustAheadOfTheDownloadWaitsForIt() {
        var (p, _) = planner()
        let (answer, actions) = p.read(
            .init(offset: 30_000, maxLength: 65536), cached: RangeSet([0..<10_000]), now: start)
        #expect(answer == .wait)
        #expect(starts(actions).isEmpty)
    }

    @Test func theWaitAheadFollowsTheMeasuredRate() {
        var (p, actions) = planner()
        guard case .start(let key, _, _, _) = actions.first else {
            Issue.record("no start")
            return
        }
        _ = p.setRate(2_000_000, of: key, cached: RangeSet(), now: start)  // 0.3 s at 2 MB/s: 600 kB
        #expect(p.read(.init(offset: 500_000, maxLength: 100_000), cached: RangeSet(), now: start).0 == .wait)
        #expect(starts(p.read(.init(offset: 500_000, maxLength: 100_000), cached: RangeSet(), now: start).1).isEmpty)
        // A slow link (16 KiB floor): the waiting reader gets its own request at once.
        let far = p.setRate(20_000, of: key, cached: RangeSet(), now: start)
        #expect(starts(far).map(\.from) == [500_000])
    }

    @Test func aReaderWaitingForAnUnmeasuredDownloadGetsARequestOnceItsRateShowsTheWaitIsLong() {
        var (p, opened) = planner(length: 30_000)
        guard case .start(let key, _, _, _) = opened.first else {
            Issue.record("no start")
            return
        }
        // The end of a short file: within the first guess of what a new download delivers soon.
        let (answer, first) = p.read(.init(offset: 29_900, maxLength: 100), cached: RangeSet([0..<1000]), now: start)
        #expect(answer == .wait && starts(first).isEmpty)
        let actions = p.setRate(47_000, of: key, cached: RangeSet([0..<20_000]), now: start)
        #expect(starts(actions).map(\.from) == [29_900])
    }

    /// A track prepared ahead has no listener to keep waiting: its probe waits for the download
    /// that will reach it, so nothing crosses the network twice, until it starts playing.
    @Test func aBackgroundProbeWaitsForTheDownloadUntilItPlays() {
        var (p, opened) = planner(length: 300_000)
        guard case .start(let key, _, _, _) = opened.first else {
            Issue.record("no start")
            return
        }
        _ = p.setBackground(true, cached: RangeSet(), now: start)
        let cached = RangeSet([0..<1000])
        let (answer, actions) = p.read(.init(offset: 299_872, maxLength: 128), cached: cached, now: start)
        #expect(answer == .wait && starts(actions).isEmpty)
        #expect(starts(p.setRate(20_000, of: key, cached: cached, now: start)).isEmpty)
        let playing = p.setBackground(false, cached: cached, now: start)
        #expect(starts(playing).map(\.from) == [299_872])
    }

    @Test func aProbeGetsAShortParallelRequestAndTheDownloadGoesOn() {
        var (p, _) = planner()
        let cached = RangeSet([0..<20_000])
        _ = p.read(.init(offset: 0, maxLength: 4096), cached: cached, now: start)
        let (answer, actions) = p.read(.init(offset: 2 * mb, maxLength: 4096), cached: cached, now: start)
        #expect(answer == .wait)
        #expect(cancels(actions).isEmpty)
        #expect(!actions.contains { if case .setPriority = $0 { true } else { false } })
        let probe = starts(actions)
        #expect(probe.count == 1)
        #expect(probe.first?.from == 2 * mb && probe.first?.to == 2 * mb + Planner.probeRequestMinimum)
        #expect(probe.first?.priority == .playback)
        #expect(p.transfers.filter { $0.role == .main }.count == 1)
    }

    @Test func aProbeOfTheEndStopsAtTheEnd() {
        var (p, _) = planner()
        let (_, actions) = p.read(.init(offset: 4 * mb - 128, maxLength: 128), cached: RangeSet([0..<1000]), now: start)
        #expect(starts(actions).map(\.from) == [4 * mb - 128])
        #expect(starts(actions).first?.to == 4 * mb)
    }

    @Test func probesOneAfterAnotherAreNotAStorm() {
        var (p, _) = planner()
        var cached = RangeSet([0..<1000])
        let (_, first) = p.read(.init(offset: 4 * mb - 128, maxLength: 128), cached: cached, now: start)
        cached.insert(4 * mb - 128..<4 * mb)
        #expect(p.read(.init(offset: 4 * mb - 128, maxLength: 128), cached: cached, now: start).0 == .serve(128))
        let (_, second) = p.read(.init(offset: 2 * mb, maxLength: 4096), cached: cached, now: start + .milliseconds(1))
        #expect(starts(first).count == 1 && starts(second).count == 1)
    }

    @Test func aStormOfFarReadsWaitsForTheIntervalAndThenServesTheLastTarget() {
        var (p, _) = planner()
        let cached = RangeSet([0..<1000])
        let (_, first) = p.read(.init(offset: 1 * mb, maxLength: 65536), cached: cached, now: start)
        #expect(starts(first).map(\.from) == [1 * mb])
        var scheduled = 0
        for step in 2...10 {
            let (_, actions) = p.read(
                .init(offset: Int64(step) * 300_000, maxLength: 65536), cached: cached, now: start + .milliseconds(step)
            )
            #expect(starts(actions).isEmpty)
            scheduled += actions.filter { if case .scheduleSeek = $0 { true } else { false } }.count
        }
        #expect(scheduled == 1)
        let after = p.seekIntervalEnded(cached: cached, now: start + .milliseconds(100))
        #expect(starts(after).map(\.from) == [3 * mb])
    }

    /// The storm's end starts a request for what the reader waits for, but never for bytes a
    /// running probe brings: it starts where the probe stops (a property-test seed found it).
    @Test func aStormEndingOnAProbesBytesStartsWhereTheProbeStops() {
        var (p, _) = planner()
        let cached = RangeSet([0..<1000])
        let (_, probe) = p.read(.init(offset: 2 * mb, maxLength: 4096), cached: cached, now: start)
        let probeRequest = starts(probe).first
        #expect(probeRequest?.from == 2 * mb)
        // A seek well after it, then a far read right after that: a storm, which waits for the
        // interval's end.
        _ = p.read(.init(offset: 5 * mb, maxLength: 200_000), cached: cached, now: start + .seconds(1))
        _ = p.read(
            .init(offset: 7 * mb, maxLength: 128), cached: cached, now: start + .seconds(1) + .milliseconds(1))
        // By the end of the interval the reader is back on the probe's bytes, with a large read.
        let (answer, _) = p.read(
            .init(offset: 2 * mb, maxLength: 200_000), cached: cached, now: start + .seconds(1) + .milliseconds(2))
        #expect(answer == .wait)
        #expect(p.transfers.contains { $0.role == .probe }, "the probe still runs")
        let after = p.seekIntervalEnded(cached: cached, now: start + .seconds(1) + .milliseconds(100))
        let probeEnd = probeRequest?.to ?? 0
        #expect(starts(after).map(\.from) == [probeEnd], "the probe delivers \(2 * mb)..<\(probeEnd)")
    }

    @Test func aSeekParksTheDownloadOrCancelsItWhenHeldBytesAreClose() {
        var (p, opened) = planner(length: 20 * mb)
        guard case .start(let mainKey, _, _, _) = opened.first else {
            Issue.record("no start")
            return
        }
        let (_, actions) = p.read(.init(offset: 10 * mb, maxLength: 200_000), cached: RangeSet(), now: start)
        #expect(actions.contains(.setPriority(key: mainKey, .fillHoles)))
        #expect(starts(actions).map(\.from) == [10 * mb])
        #expect(p.transfers.first { $0.key == mainKey }?.role == .parked)
        // The new download reaches cached bytes within 2 MiB: a further seek cancels rather than parks it.
        var (q, opened2) = planner(length: 20 * mb)
        guard case .start(let key2, _, _, _) = opened2.first else {
            Issue.record("no start")
            return
        }
        let (_, actions2) = q.read(
            .init(offset: 10 * mb, maxLength: 200_000), cached: RangeSet([1 * mb..<2 * mb]), now: start)
        #expect(cancels(actions2) == [key2])
    }

    /// How the transfer after a probe the reader reads on from is timed.
    enum FollowOnMoment: CaseIterable, Sendable {
        /// The probe's rate, once measured, puts its end within 0.3 s.
        case rateMeasuredNearTheEnd
        /// Bytes arrive until the probe is within 0.3 s of its end at its measured rate.
        case bytesBringItNearTheEnd
        /// The probe ends before it was measured.
        case probeFinished
        /// A fast link: its rate was measured before the reads went on from it.
        case alreadyMeasuredFast
    }

    /// Reads going on from a probe make it a seek: the download is set aside at once, and a
    /// transfer follows on from the probe's end only once the probe is about to end (on one
    /// link the two would share the bandwidth the reader waits on), not before.
    @Test(arguments: FollowOnMoment.allCases)
    func readsGoingOnFromAProbeTurnItIntoASeek(moment: FollowOnMoment) {
        guard case (var p, var mainKey, var probeKey, var cached)? = plannerWithAProbe() else {
            Issue.record("no download or no probe request")
            return
        }
        let target = probeTarget
        let probeEnd = target + Planner.probeRequestMinimum
        if moment == .alreadyMeasuredFast {
            #expect(p.setRate(10 * Double(mb), of: probeKey, cached: cached, now: start).isEmpty)
        }
        cached.insert(target..<target + 8192)
        _ = p.received(probeKey, upTo: target + 8192, cached: cached)
        #expect(p.read(.init(offset: target, maxLength: 4096), cached: cached, now: start).0 == .serve(4096))
        let (answer, actions) = p.read(.init(offset: target + 4096, maxLength: 8192), cached: cached, now: start)
        #expect(answer == .wait)
        // The main download (at 1000, 2 MB short of the target's held bytes) is cancelled, not parked.
        #expect(cancels(actions) == [mainKey], "\(actions)")
        if moment == .alreadyMeasuredFast {
            #expect(starts(actions).map(\.from) == [probeEnd])
            return
        }
        #expect(starts(actions).isEmpty, "the probe still has 8 KiB to bring: \(actions)")
        let followOn: [Planner.Action]
        switch moment {
        case .rateMeasuredNearTheEnd:
            // 8 KiB left: not due at 20 kB/s (0.41 s), due at 40 kB/s (0.2 s).
            #expect(p.setRate(20_000, of: probeKey, cached: cached, now: start).isEmpty)
            followOn = p.setRate(40_000, of: probeKey, cached: cached, now: start)
        case .bytesBringItNearTheEnd:
            #expect(p.setRate(20_000, of: probeKey, cached: cached, now: start).isEmpty)
            cached.insert(target + 8192..<probeEnd - 4000)
            followOn = p.received(probeKey, upTo: probeEnd - 4000, cached: cached).actions
        case .probeFinished:
            cached.insert(target + 8192..<probeEnd)
            followOn = p.finished(probeKey, cached: cached).actions
        case .alreadyMeasuredFast:
            return
        }
        #expect(starts(followOn).map(\.from) == [probeEnd])
        #expect(starts(followOn).first?.priority == .playback)
    }

    /// The reader reads on from a probe, then seeks elsewhere before the probe ends: nothing
    /// follows on from the probe's end, and the seek's transfer is left running.
    @Test(arguments: [false, true])
    func aSeekElsewhereBeforeTheProbeEndsLeavesNothingToFollowIt(seekIntoCachedBytes: Bool) {
        guard case (var p, _, var probeKey, var cached)? = plannerWithAProbe() else {
            Issue.record("no download or no probe request")
            return
        }
        let target = probeTarget
        cached.insert(target..<target + 8192)
        _ = p.received(probeKey, upTo: target + 8192, cached: cached)
        _ = p.read(.init(offset: target, maxLength: 4096), cached: cached, now: start)
        _ = p.read(.init(offset: target + 4096, maxLength: 8192), cached: cached, now: start)
        let elsewhere: Int64 = seekIntoCachedBytes ? 0 : 3 * mb
        let (answer, seek) = p.read(
            .init(offset: elsewhere, maxLength: seekIntoCachedBytes ? 1000 : 200_000), cached: cached,
            now: start + .seconds(1))
        if seekIntoCachedBytes {
            #expect(answer == .serve(1000))
        } else {
            #expect(starts(seek).map(\.from) == [elsewhere])
        }
        let seekKeys = p.transfers.filter { $0.role == .main }.map(\.key)
        cached.insert(target..<target + Planner.probeRequestMinimum)
        let finished = p.finished(probeKey, cached: cached)
        #expect(
            !starts(finished.actions).contains { $0.from == target + Planner.probeRequestMinimum },
            "\(finished.actions)")
        #expect(cancels(finished.actions).allSatisfy { !seekKeys.contains($0) }, "\(finished.actions)")
    }

    @Test func withoutRangesReadsWaitForTheOneStream() {
        var (p, opened) = planner(ranges: false)
        #expect(starts(opened).map(\.from) == [0])
        let (answer, actions) = p.read(.init(offset: 3 * mb, maxLength: 4096), cached: RangeSet([0..<1000]), now: start)
        #expect(answer == .wait)
        #expect(actions.isEmpty)
    }

    @Test func aStreamOfUnknownLengthEndsWhereItsDownloadEnded() {
        var (p, opened) = planner(length: nil, ranges: false)
        guard case .start(let key, _, _, _) = opened.first else {
            Issue.record("no start")
            return
        }
        let cached = RangeSet([0..<50_000])
        #expect(p.read(.init(offset: 0, maxLength: 65536), cached: cached, now: start).0 == .serve(50_000))
        // The download ends before the reader gets there: no reader waits at that moment.
        let effects = p.finished(key, cached: cached)
        #expect(!effects.wakeReader)
        #expect(p.resource?.length == 50_000)
        #expect(p.read(.init(offset: 50_000, maxLength: 65536), cached: cached, now: start).0 == .endOfStream)
    }

    @Test func anOverstatedLengthEndsTheStreamWhereTheBodyEnded() {
        // Declared 4 MB; the origin, without ranges, sends 3 MB and closes.
        var (p, opened) = planner(ranges: false)
        guard case .start(let key, _, _, _) = opened.first else {
            Issue.record("no start")
            return
        }
        let cached = RangeSet([0..<3 * mb])
        _ = p.received(key, upTo: 3 * mb, cached: cached)
        // The decoder asks across the real end, more than is left: it waits, as for any byte to come.
        #expect(p.read(.init(offset: 3 * mb - 100, maxLength: 4096), cached: cached, now: start).0 == .wait)
        let effects = p.resourceEnds(at: 3 * mb, reportedBy: key, cached: cached)
        #expect(effects.wakeReader, "the reader waiting across the end goes on at once")
        #expect(effects.actions.isEmpty, "the transfer that found the end finishes by itself")
        #expect(p.resource?.length == 3 * mb)
        #expect(p.read(.init(offset: 3 * mb - 100, maxLength: 4096), cached: cached, now: start).0 == .serve(100))
        #expect(p.read(.init(offset: 3 * mb, maxLength: 4096), cached: cached, now: start).0 == .endOfStream)
        // Its finish starts nothing: everything up to the end is here.
        #expect(p.finished(key, cached: cached).actions.isEmpty)
        #expect(!p.isDownloading)
        // A longer length later changes nothing: the end is known.
        #expect(p.resourceEnds(at: 4 * mb, reportedBy: key, cached: cached) == .init())
        #expect(p.resource?.length == 3 * mb)
    }

    @Test func anOverstatedLengthStopsTransfersPastTheRealEnd() {
        // With ranges: a probe of the declared end asks for bytes that do not exist.
        var (p, opened) = planner()
        guard case .start(let mainKey, _, _, _) = opened.first else {
            Issue.record("no start")
            return
        }
        let (_, probed) = p.read(.init(offset: 4 * mb - 128, maxLength: 128), cached: RangeSet(), now: start)
        guard case .start(let probeKey, _, _, _)? = probed.last else {
            Issue.record("no probe: \(probed)")
            return
        }
        let cached = RangeSet([0..<3 * mb])
        _ = p.received(mainKey, upTo: 3 * mb, cached: cached)
        let effects = p.resourceEnds(at: 3 * mb, reportedBy: mainKey, cached: cached)
        #expect(effects.actions == [.cancel(key: probeKey)])
        #expect(p.transfers.map(\.key) == [mainKey])
    }

    @Test func aWaitingReaderIsWokenWhenItsMinimumArrives() {
        var (p, opened) = planner()
        guard case .start(let key, _, _, _) = opened.first else {
            Issue.record("no start")
            return
        }
        #expect(p.read(.init(offset: 0, maxLength: 65536, minLength: 8192), cached: RangeSet(), now: start).0 == .wait)
        #expect(!p.received(key, upTo: 4096, cached: RangeSet([0..<4096])).wakeReader)
        #expect(p.received(key, upTo: 9000, cached: RangeSet([0..<9000])).wakeReader)
    }

    @Test func theDownloadStopsAtBytesAProbeFetchedAndGoesOnAfterThem() {
        var (p, opened) = planner()
        guard case .start(let mainKey, _, _, _) = opened.first else {
            Issue.record("no start")
            return
        }
        _ = p.read(.init(offset: 0, maxLength: 4096), cached: RangeSet(), now: start)
        var cached = RangeSet([0..<4096])
        _ = p.read(.init(offset: 100_000, maxLength: 4096), cached: cached, now: start)  // a probe
        guard let probe = p.transfers.first(where: { $0.role == .probe }) else {
            Issue.record("no probe")
            return
        }
        cached.insert(100_000..<100_000 + Planner.probeRequestMinimum)
        _ = p.finished(probe.key, cached: cached)
        cached.insert(0..<100_000)
        let effects = p.received(mainKey, upTo: 100_000, cached: cached)
        #expect(cancels(effects.actions) == [mainKey])
        #expect(starts(effects.actions).map(\.from) == [100_000 + Planner.probeRequestMinimum])
    }
}

/// A world the planner's actions run in: transfers deliver in chunks, in any order.
private struct SimulatedWorld {
    let length: Int64
    let ranges: Bool
    var planner: Planner
    var cached = RangeSet()
    var running: [Int: (next: Int64, end: Int64)] = [:]
    var now = start
    var pendingSeekAt: ContinuousClock.Instant?
    /// Bytes delivered that were already here.
    var duplicated: Int64 = 0
    var violations: [String] = []

    /// An uncached resource; with a `tail`, opened tail first, its facts learnt from the response.
    init(length: Int64, ranges: Bool, tail: Int64? = nil) {
        self.length = length
        self.ranges = ranges
        planner = Planner()
        if let tail {
            apply(planner.open(cached: cached, tail: tail))
            apply(planner.learn(.init(length: length, rangesSupported: ranges), cached: cached))
        } else {
            planner.setResource(.init(length: length, rangesSupported: ranges))
            apply(planner.open(cached: cached))
        }
    }

    mutating func apply(_ actions: [Planner.Action]) {
        for action in actions {
            switch action {
            case .start(let key, let from, let to, _):
                if cached.contains(from) { violations.append("start at cached byte \(from)") }
                if let to, !cached.intersection(with: from..<to).isEmpty {
                    violations.append("request \(from)..<\(to) covers cached bytes")
                }
                for (other, transfer) in running where other != key && transfer.next <= from && from < transfer.end {
                    let role = planner.transfers.first(where: { $0.key == other })?.role
                    if role != .main, role != .parked {
                        violations.append(
                            "start at \(from), transfer \(other) (\(String(describing: role))) delivers it")
                    }
                }
                running[key] = (from, to ?? length)
            case .startHead(let key, let to, _):
                // An origin without ranges sends the whole body.
                running[key] = (0, ranges ? min(to, length) : length)
            case .startLast(let key, let count, _):
                // An origin without ranges sends the whole body, of which the fetcher reads nothing.
                guard ranges else { break }
                let from = max(0, length - count)
                if !cached.intersection(with: from..<length).isEmpty {
                    violations.append("the last bytes \(from)..<\(length) cover cached bytes")
                }
                for (other, transfer) in running where other != key && transfer.next < length && from < transfer.end {
                    violations.append("the last bytes \(from)..<\(length) overlap transfer \(other)")
                }
                running[key] = (from, length)
            case .cancel(let key):
                running[key] = nil
            case .setPriority:
                break
            case .scheduleSeek(let delay):
                pendingSeekAt = now + delay
            }
        }
    }

    /// One chunk from one running transfer; false when nothing runs.
    mutating func step(_ generator: inout SeededGenerator) -> Bool {
        if let due = pendingSeekAt {
            now = max(now, due)
            pendingSeekAt = nil
            apply(planner.seekIntervalEnded(cached: cached, now: now))
            return true
        }
        guard !running.isEmpty else { return false }
        let keys = running.keys.sorted()
        let key = keys[generator.next(below: keys.count)]
        guard let transfer = running[key] else { return false }
        let chunk = min(Int64(1 + generator.next(below: 40_000)), transfer.end - transfer.next)
        let range = transfer.next..<(transfer.next + chunk)
        duplicated += cached.intersection(with: range).count
        cached.insert(range)
        now = now + .milliseconds(1)
        if range.upperBound >= transfer.end {
            running[key] = nil
            let effects = planner.finished(key, cached: cached)
            apply(effects.actions)
        } else {
            running[key] = (range.upperBound, transfer.end)
            let effects = planner.received(key, upTo: range.upperBound, cached: cached)
            apply(effects.actions)
        }
        return true
    }
}

@Suite("Download planner: properties over random reads")
struct DownloadPlannerPropertyTests {
    /// Random reads (playback runs, probes, seeks) against a simulated origin: every read is
    /// served, no request starts at a byte that is here or that another transfer delivers, a
    /// far read starts a request in the same call (but while an opening's tail comes first), and
    /// little is delivered twice; also for resources opened tail first.
    @Test(arguments: [(false, false), (true, false), (false, true)])
    func everyReadIsServedAndNothingIsRequestedTwice(storms: Bool, tailFirst: Bool) {
        let seed =
            ProcessInfo.processInfo.environment["SPOOL_TEST_SEED"].flatMap(UInt64.init)
            ?? UInt64.random(in: 0...UInt64(UInt32.max))
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<200 {
            let length = Int64(100_000 + generator.next(below: 5_000_000))
            var world = SimulatedWorld(
                length: length, ranges: generator.next(below: 5) != 0,
                tail: tailFirst ? Int64(1 + generator.next(below: 20_000)) : nil)
            var offset: Int64 = 0
            for _ in 0..<12 {
                let kind = generator.next(below: 4)
                if kind == 1 { offset = Int64(generator.next(below: Int(length))) }  // a seek or probe
                let size = [4096, 65536, 128, 200_000][generator.next(below: 4)]
                let read = Planner.Read(offset: offset, maxLength: size, minLength: kind == 2 ? 1024 : nil)
                var served = false
                for attempt in 0..<100_000 {
                    let far = world.planner.transfers.allSatisfy { !$0.reachesSoon(read.offset, world.planner) }
                    let (answer, actions) = world.planner.read(read, cached: world.cached, now: world.now)
                    let wasStorm = actions.contains { if case .scheduleSeek = $0 { true } else { false } }
                    world.apply(actions)
                    if attempt == 0, far, world.ranges, answer == .wait, !wasStorm, !world.cached.contains(read.offset),
                        !world.planner.isAwaitingTail,
                        world.pendingSeekAt == nil,
                        !actions.contains(where: {
                            if case .start = $0 { true } else if case .setPriority = $0 { true } else { false }
                        })
                    {
                        world.violations.append("far read at \(read.offset) started nothing: \(actions)")
                    }
                    if case .serve(let count) = answer {
                        offset = read.offset + Int64(count)
                        served = true
                        break
                    }
                    if answer == .endOfStream {
                        offset = 0
                        served = true
                        break
                    }
                    if storms, generator.next(below: 3) == 0 { break }  // the reader moved on unserved
                    guard world.step(&generator) else { break }
                }
                if !served, !storms { world.violations.append("read at \(read.offset) never served") }
            }
            #expect(world.violations.isEmpty, "seed \(seed): \(world.violations.prefix(3))")
            // Bytes a transfer delivers past a probe's bytes before it is stopped: at most a chunk per probe.
            #expect(world.duplicated <= 12 * 40_000, "seed \(seed): \(world.duplicated) bytes delivered twice")
            if !world.violations.isEmpty { return }
        }
    }
}

extension DownloadPlanner.Transfer {
    /// Whether the planner would wait for this transfer to deliver `offset`.
    fileprivate func reachesSoon(_ offset: Int64, _ planner: DownloadPlanner) -> Bool {
        next <= offset && end.map { offset < $0 } ?? true && (role == .probe || offset - next <= 512 * 1024)
    }
}
