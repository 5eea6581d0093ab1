import EngineAPI
import Foundation
import PlayerCore
import Synchronization
import TestDoubles
import Testing

private let KiB: Int64 = 1024
private let MiB: Int64 = 1024 * 1024

private func url(_ n: Int) -> URL { URL(string: "http://127.0.0.1:1/\(n).mp3")! }

private func upcoming(_ n: Int, _ download: TrackDownload = TrackDownload(), duration: Duration? = nil)
    -> PreloadSituation.Upcoming
{
    .init(id: TrackID(UInt64(n)), url: url(n), download: download, duration: duration)
}

/// A 10 MB current track of 300 s, cached up to `cachedTo`, played to `position`.
private func situation(
    position: Duration, cachedTo: Int64 = 5_000_000, downloading: Bool = true, rate: Double = 1,
    window: [PreloadSituation.Upcoming] = [upcoming(2), upcoming(3)]
) -> PreloadSituation {
    let length: Int64 = 10_000_000
    let current = TrackDownload(length: length, ranges: cachedTo > 0 ? [0..<cachedTo] : [], downloading: downloading)
    return PreloadSituation(
        current: current, position: position, duration: .seconds(300), rate: rate, window: window,
        following: window.first)
}

@Suite("Preload policy")
struct PreloadPolicyTests {
    let policy = PreloadPolicy()

    @Test func nothingIsFetchedBeforeTheTrigger() {
        let plan = policy.plan(situation(position: .seconds(100)))
        #expect(!plan.triggered)
        #expect(plan.jobs.isEmpty)
        #expect(plan.items.map(\.stage) == [.waiting, .waiting])
        #expect(!plan.handOverNext)
    }

    @Test func lessThanTheTriggerLeftFetchesTheHeadsButNotTheWholeNextTrack() {
        let plan = policy.plan(situation(position: .seconds(241), cachedTo: 9_000_000))
        #expect(plan.triggered)
        #expect(plan.jobs.map(\.id) == [TrackID(2), TrackID(3)])
        #expect(plan.jobs.allSatisfy { $0.prefix == 512 * KiB && $0.tail == 64 * KiB })
        #expect(!plan.handOverNext, "the current track is still downloading")
    }

    @Test func aDownloadedCurrentTrackTriggersAtOnceAndTheNextFollowsWholeOnceItsHeadIsIn() {
        var s = situation(position: .seconds(5), cachedTo: 10_000_000, downloading: false)
        var plan = policy.plan(s)
        #expect(plan.triggered)
        #expect(plan.jobs.map(\.id) == [TrackID(2), TrackID(3)])
        #expect(!plan.handOverNext, "the next track's head is not in yet")

        let length: Int64 = 4_000_000
        let head = TrackDownload(length: length, ranges: [0..<512 * KiB, length - 64 * KiB..<length])
        s.window[0] = upcoming(2, head)
        s.following = s.window[0]
        plan = policy.plan(s)
        #expect(plan.handOverNext)
        #expect(plan.items.map(\.stage) == [.whole, .fetchingHead])

        s.current.downloading = true  // complete, but its connection is busy (revalidation, a tail read)
        #expect(!policy.plan(s).handOverNext)
    }

    @Test func theNextTrackGoesToTheEngineShortlyBeforeTheEndWhateverElseHolds() {
        let plan = policy.plan(situation(position: .seconds(291), cachedTo: 9_000_000))
        #expect(plan.handOverNext, "less than handOverLead left: the gapless hand-over must find it")
    }

    @Test func thePrefixIsFifteenSecondsOfAudioWithinItsBounds() {
        // Unknown byte rate: 512 KiB.
        #expect(policy.prefixLength(of: upcoming(2)) == 512 * KiB)
        // 8 MB for 200 s = 40 kB/s: 15 s = 600 kB.
        #expect(
            policy.prefixLength(of: upcoming(2, TrackDownload(length: 8_000_000), duration: .seconds(200))) == 600_000)
        // 60 MB for 200 s: 15 s would be 4.5 MB, capped at 2 MiB.
        #expect(
            policy.prefixLength(of: upcoming(2, TrackDownload(length: 60_000_000), duration: .seconds(200))) == 2 * MiB)
        // A low rate stays at the minimum.
        #expect(
            policy.prefixLength(of: upcoming(2, TrackDownload(length: 1_000_000), duration: .seconds(200))) == 512 * KiB
        )
        // A file shorter than the prefix: all of it.
        #expect(policy.prefixLength(of: upcoming(2, TrackDownload(length: 300_000))) == 300_000)
    }

    @Test func preloadingPausesWhileTheCurrentTrackHasLessThanTenSecondsAhead() {
        // At 250 s of 300 the play head is at byte 8.33 M; cached to 8.5 M is 5 s ahead.
        let starved = policy.plan(situation(position: .seconds(250), cachedTo: 8_500_000))
        #expect(starved.triggered && starved.paused)
        #expect(starved.jobs.isEmpty)
        #expect(starved.items.map(\.stage) == [.paused, .paused])
        // 9.5 M is 35 s ahead: it resumes.
        let fed = policy.plan(situation(position: .seconds(250), cachedTo: 9_500_000))
        #expect(!fed.paused)
        #expect(fed.jobs.count == 2)
    }

    @Test func theBudgetLimitsWhatIsPlanned() {
        var settings = PreloadSettings()
        settings.budget = 700 * KiB  // one head (576 KiB), not two
        let plan = PreloadPolicy(settings: settings).plan(situation(position: .seconds(250), cachedTo: 9_999_000))
        #expect(plan.items.map(\.stage) == [.fetchingHead, .waiting])
    }

    @Test func atTwiceTheRateTheTriggerComesTwiceAsLateInTheTrack() {
        // 100 s of audio left at 2× is 50 s of wall time: under the 60 s trigger.
        #expect(policy.plan(situation(position: .seconds(200), cachedTo: 9_000_000, rate: 2)).triggered)
        #expect(!policy.plan(situation(position: .seconds(200), cachedTo: 9_000_000, rate: 1)).triggered)
    }

    @Test func completeAndReadyTracksNeedNoJob() {
        let complete = TrackDownload(length: 1000, ranges: [0..<1000])
        let plan = policy.plan(
            situation(position: .seconds(250), cachedTo: 9_999_000, window: [upcoming(2, complete), upcoming(3)]))
        #expect(plan.items.map(\.stage) == [.complete, .fetchingHead])
        #expect(plan.jobs.map(\.id) == [TrackID(3)])
    }
}

/// A preloader that records plans and answers from a table the test fills.
final class FakePreloader: Preloader {
    private let state = Mutex<
        (downloads: [URL: TrackDownload], plans: [PreloadPlan], onChange: (@Sendable () -> Void)?)
    >(
        ([:], [], nil))

    func set(_ url: URL, _ download: TrackDownload) { state.withLock { $0.downloads[url] = download } }
    var plans: [PreloadPlan] { state.withLock { $0.plans } }
    var lastPlan: PreloadPlan? { plans.last }

    func download(of url: URL) -> TrackDownload { state.withLock { $0.downloads[url] ?? TrackDownload() } }
    func apply(_ plan: PreloadPlan) { state.withLock { $0.plans.append(plan) } }
    func setChangeHandler(_ handler: @escaping @Sendable () -> Void) { state.withLock { $0.onChange = handler } }
    /// What the real preloader does when a job ends.
    func jobEnded() { state.withLock { $0.onChange }?() }
}

@Suite("Player preloading with a fake engine")
struct PlayerPreloadTests {
    let items = (1...5).map { (url($0), Optional<String>.none) }

    /// A playing player on track 1 (300 s, 10 MB, half downloaded), window of `count`;
    /// the clock never ticks by itself (the test calls refreshPreload).
    func makePlayer(count: Int = 2, memory: PlaybackMemory = TransientMemory()) async
        -> (FakeEngine, FakePreloader, Player, [TrackID])
    {
        let engine = FakeEngine()
        let preloader = FakePreloader()
        preloader.set(url(1), TrackDownload(length: 10_000_000, ranges: [0..<5_000_000], downloading: true))
        var settings = PreloadSettings()
        settings.count = count
        settings.checkInterval = .seconds(3600)
        let player = Player(engine: engine, memory: memory, retryDelay: .zero, preloader: preloader, preload: settings)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.open(items)
        let ids = await player.state.queue.map(\.id)
        engine.setPosition(.seconds(1))
        engine.send(.described(ids[0], TrackTags(), duration: .seconds(300)))
        #expect(
            await recorder.waitUntil { updates in
                updates.contains {
                    if case .changed(let s) = $0 { s.nowPlaying?.duration == .seconds(300) } else { false }
                }
            })
        return (engine, preloader, player, ids)
    }

    private func nexts(_ engine: FakeEngine) -> [TrackID?] {
        engine.commands.compactMap { if case .next(let id) = $0 { id } else { nil } }
    }

    @Test func atTrackStartNothingIsPreparedAndTheEngineGetsNoNextTrack() async {
        let (engine, preloader, player, _) = await makePlayer()
        await player.refreshPreload()
        #expect(nexts(engine).isEmpty, "\(engine.commands)")
        #expect(preloader.lastPlan?.jobs.isEmpty == true)
        #expect(preloader.lastPlan?.items.count == 2)
    }

    @Test func theTriggerStartsHeadsAndTheWholeNextTrackWaitsForTheCurrentDownload() async {
        let (engine, preloader, player, ids) = await makePlayer()
        engine.setPosition(.seconds(245))  // 55 s left
        preloader.set(url(1), TrackDownload(length: 10_000_000, ranges: [0..<9_500_000], downloading: true))
        await player.refreshPreload()
        #expect(preloader.lastPlan?.jobs.map(\.id) == [ids[1], ids[2]])
        #expect(nexts(engine).isEmpty, "the current track still downloads")

        // The current track completes and its connection goes idle; the next head is in.
        preloader.set(url(1), TrackDownload(length: 10_000_000, ranges: [0..<10_000_000]))
        preloader.set(url(2), TrackDownload(length: 3_000_000, ranges: [0..<524_288, 2_934_464..<3_000_000]))
        preloader.jobEnded()
        let handed = await waitFor { nexts(engine) == [ids[1]] }
        #expect(handed, "\(engine.commands)")
        #expect(preloader.lastPlan?.items.map(\.stage) == [.whole, .fetchingHead])
        #expect(await player.preloadPlan.handOverNext)
    }

    @Test func anAutomaticTransitionIsTheEnginesGaplessHandOverWithNoLoad() async {
        let (engine, preloader, player, ids) = await makePlayer()
        engine.setPosition(.seconds(295))
        await player.refreshPreload()
        #expect(nexts(engine) == [ids[1]])
        let loads = engine.loads.count
        engine.send(.trackStarted(ids[1]))  // the hand-over: track 2's audio follows track 1's
        let moved = await waitFor { preloader.lastPlan?.items.map(\.id) == [ids[2], ids[3]] }
        #expect(moved, "the window moves on with the hand-over")
        #expect(await player.state.nowPlaying?.entry.id == ids[1])
        #expect(engine.loads.count == loads, "no load: the engine played on without a gap")
    }

    @Test func theDurationFromAnEarlierPlaySizesThePrefix() async {
        let memory = TransientMemory()
        memory.save(
            SavedPosition(key: url(2).absoluteString, position: .zero, duration: .seconds(200), rate: 1, finished: true)
        )
        let (engine, preloader, player, _) = await makePlayer(memory: memory)
        preloader.set(url(2), TrackDownload(length: 8_000_000, ranges: [0..<1000]))
        engine.setPosition(.seconds(250))
        await player.refreshPreload()
        // 8 MB over 200 s is 40 kB/s: 15 s of it is 600 kB; track 3's rate is unknown: 512 KiB.
        #expect(preloader.lastPlan?.items.map(\.prefix) == [600_000, 512 * 1024])
    }

    @Test func preloadCountSetsTheWindow() async {
        let (engine, preloader, player, ids) = await makePlayer(count: 3)
        engine.setPosition(.seconds(295))
        await player.refreshPreload()
        #expect(preloader.lastPlan?.items.map(\.id) == [ids[1], ids[2], ids[3]])
        #expect(nexts(engine) == [ids[1]], "less than handOverLead left: the engine gets the next track")
    }

    @Test func tracksThatLeaveTheWindowLeaveThePlanAndTheEngineAtOnce() async {
        let (engine, preloader, player, ids) = await makePlayer()
        engine.setPosition(.seconds(295))
        await player.refreshPreload()
        #expect(preloader.lastPlan?.items.map(\.id) == [ids[1], ids[2]])
        #expect(nexts(engine) == [ids[1]])
        await player.remove(ids[1])
        // Track 2 is gone: the plan (whose jobs the preloader keeps) no longer names it, and
        // the engine drops it for the new follower.
        #expect(preloader.lastPlan?.items.map(\.id) == [ids[2], ids[3]])
        #expect(nexts(engine) == [ids[1], ids[2]])
        await player.move(ids[3], to: 1)
        #expect(preloader.lastPlan?.items.map(\.id) == [ids[3], ids[2]])
        #expect(nexts(engine).last == ids[3])
    }

    @Test func stoppingEndsEveryJob() async {
        let (engine, preloader, player, _) = await makePlayer()
        engine.setPosition(.seconds(250))
        preloader.set(url(1), TrackDownload(length: 10_000_000, ranges: [0..<10_000_000]))
        await player.refreshPreload()
        #expect(preloader.lastPlan?.jobs.isEmpty == false)
        await player.stop()
        #expect(preloader.lastPlan == PreloadPlan())
    }

    @Test func withoutAPreloaderTheEngineGetsTheNextTrackAtOnce() async {
        let engine = FakeEngine()
        let player = Player(engine: engine, retryDelay: .zero)
        await player.open(items)
        let ids = await player.state.queue.map(\.id)
        #expect(nexts(engine) == [ids[1]])
    }

    /// Yields until `condition` holds (the change handler hops through a task).
    private func waitFor(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<10_000 {
            if condition() { return true }
            await Task.yield()
        }
        return condition()
    }
}
