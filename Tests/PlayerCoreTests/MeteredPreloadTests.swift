import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

private let KiB: Int64 = 1024

private func url(_ n: Int) -> URL { URL(string: "http://127.0.0.1:1/\(n).mp3")! }

private func upcoming(_ n: Int, _ download: TrackDownload = TrackDownload()) -> PreloadSituation.Upcoming {
    .init(id: TrackID(UInt64(n)), url: url(n), download: download)
}

@Suite("Metered rules")
struct MeteredRulesTests {
    @Test(
        arguments: [
            // (network.metered forced, NetworkManager says, in force)
            (nil, nil, false),  // no NetworkManager: not metered
            (nil, NetworkManagerMetered.unknown, false),
            (nil, .yes, true),
            (nil, .no, false),
            (nil, .guessYes, true),
            (nil, .guessNo, false),
            (true, nil, true),
            (true, .no, true),
            (false, .yes, false),
            (false, .guessYes, false),
        ] as [(Bool?, NetworkManagerMetered?, Bool)])
    func autoFollowsNetworkManagerAndYesOrNoOverrideIt(forced: Bool?, reported: NetworkManagerMetered?, inForce: Bool) {
        #expect(MeteredNetwork.inForce(forced: forced, reported: reported) == inForce)
    }

    @Test func networkManagersRawValuesAreItsEnumAndUnknownValuesCountAsUnknown() {
        #expect((0...4).map { MeteredNetwork.reported(UInt32($0)) } == [.unknown, .yes, .no, .guessYes, .guessNo])
        #expect(MeteredNetwork.reported(99) == .unknown)
    }
}

/// A 10 MB current track of 300 s, cached up to `cachedTo` (complete and idle by default),
/// at `position`, with tracks 2, 3 and 4 upcoming (2 follows).
private func situation(position: Duration, cachedTo: Int64 = 10_000_000, metered: Bool) -> PreloadSituation {
    let length: Int64 = 10_000_000
    let current = TrackDownload(length: length, ranges: [0..<cachedTo], downloading: cachedTo < length)
    let window = [upcoming(2), upcoming(3), upcoming(4)]
    return PreloadSituation(
        current: current, position: position, duration: .seconds(300), window: window, following: window[0],
        metered: metered)
}

@Suite("Preload policy on a metered network")
struct MeteredPreloadPolicyTests {
    let policy = PreloadPolicy()

    /// One row: where the play head is (300 s track), whether metered, then what the plan says.
    struct Row: Sendable, CustomStringConvertible {
        var position: Int
        var metered: Bool
        var stages: [PreloadPlan.Stage]
        var handOver: Bool
        var description: String { "\(position) s\(metered ? " metered" : "")" }
    }

    @Test(arguments: [
        // Unmetered, the downloaded current track triggers at once: every head, then the whole next.
        Row(position: 5, metered: false, stages: [.fetchingHead, .fetchingHead, .fetchingHead], handOver: false),
        // Metered: nothing while more than 30 s remain, downloaded or not.
        Row(position: 5, metered: true, stages: [.waiting, .waiting, .waiting], handOver: false),
        Row(position: 250, metered: true, stages: [.waiting, .waiting, .waiting], handOver: false),
        // Within the last 30 s: the following track's head alone.
        Row(position: 271, metered: true, stages: [.fetchingHead, .waiting, .waiting], handOver: false),
        // The hand-over only at handOverLead (10 s) before the end.
        Row(position: 291, metered: true, stages: [.whole, .waiting, .waiting], handOver: true),
    ])
    func meteredPreloadsOnlyTheFollowingHeadWithinTheLastThirtySeconds(row: Row) {
        let plan = policy.plan(situation(position: .seconds(row.position), metered: row.metered))
        #expect(plan.items.map(\.stage) == row.stages, "\(row)")
        #expect(plan.handOverNext == row.handOver, "\(row)")
        if row.stages.first == .fetchingHead {
            #expect(plan.jobs.first.map { $0.prefix == 512 * KiB && $0.tail == 64 * KiB } == true, "a head, not more")
        }
    }

    @Test func meteredTheHeadyReadyNextTrackIsNotHandedOverEarly() {
        let length: Int64 = 4_000_000
        var s = situation(position: .seconds(275), metered: true)
        s.window[0] = upcoming(2, TrackDownload(length: length, ranges: [0..<512 * KiB, length - 64 * KiB..<length]))
        s.following = s.window[0]
        #expect(!policy.plan(s).handOverNext, "its source would read ahead into it before it is needed")
        #expect(policy.plan(s).items.map(\.stage) == [.headReady, .waiting, .waiting])
        s.metered = false
        #expect(policy.plan(s).handOverNext, "unmetered, the downloaded current track hands over at once")
    }

    @Test func aShorterTriggerStaysInForceWhenMetered() {
        var settings = PreloadSettings()
        settings.trigger = .seconds(5)
        let short = PreloadPolicy(settings: settings)
        #expect(!short.plan(situation(position: .seconds(280), cachedTo: 9_999_000, metered: true)).triggered)
        #expect(short.plan(situation(position: .seconds(296), cachedTo: 9_999_000, metered: true)).triggered)
    }
}

@Suite("Player on a metered network, with a fake engine")
struct MeteredPlayerTests {
    @Test func switchingMeteredOnCancelsHeadJobsAtOnceAndTheSnapshotSaysSo() async {
        let engine = FakeEngine()
        let preloader = FakePreloader()
        preloader.set(url(1), TrackDownload(length: 10_000_000, ranges: [0..<10_000_000]))
        var settings = PreloadSettings()
        settings.checkInterval = .seconds(3600)
        let player = Player(engine: engine, retryDelay: .zero, preloader: preloader, preload: settings)
        await player.open((1...4).map { (url($0), Optional<String>.none) })
        engine.setPosition(.seconds(100))
        engine.send(.described(await player.state.queue[0].id, TrackTags(), duration: .seconds(300)))
        await player.refreshPreload()
        #expect(preloader.lastPlan?.jobs.count == 2, "unmetered: the downloaded current track triggers every head")

        await player.setMetered(true)
        #expect(preloader.lastPlan?.jobs.isEmpty == true, "metered with 200 s left: no job at all")
        #expect(await player.state.metered)
        await player.setMetered(false)
        #expect(preloader.lastPlan?.jobs.count == 2)
        #expect(await !player.state.metered)
    }
}
