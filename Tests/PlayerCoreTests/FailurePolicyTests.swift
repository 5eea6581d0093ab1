import EngineAPI
import Foundation
import PlayerCore
import Synchronization
import TestDoubles
import Testing

@Suite("What a failed track leads to")
struct FailurePolicyTests {
    let a = TrackID(1)
    let b = TrackID(2)
    let c = TrackID(3)
    var queue: Set<TrackID> { [a, b, c] }

    struct Row: Sendable, CustomTestStringConvertible {
        let failures: [(track: UInt64, kind: FailureKind, networkUp: Bool)]
        let expected: [FailurePolicy.Action]
        var testDescription: String {
            failures.map { "\($0.track):\($0.kind)\($0.networkUp ? "" : " offline")" }.joined(separator: ", ")
        }
    }

    static let rows: [Row] = [
        // A missing, unplayable or broken track is skipped at once.
        Row(failures: [(1, .notFound, true)], expected: [.skip]),
        Row(failures: [(1, .unsupported, true)], expected: [.skip]),
        Row(failures: [(1, .corrupt, true)], expected: [.skip]),
        // A transient failure is retried once, then skipped.
        Row(failures: [(1, .transient, true), (1, .transient, true)], expected: [.retry(after: .zero), .skip]),
        // A refused connection with the network up is the server's fault: retried once, then skipped.
        Row(failures: [(1, .unreachable, true), (1, .unreachable, true)], expected: [.retry(after: .zero), .skip]),
        // With the network down nothing is skipped, however often it fails.
        Row(
            failures: [(1, .unreachable, false), (1, .unreachable, false), (1, .unreachable, false)],
            expected: [.waitForNetwork, .waitForNetwork, .waitForNetwork]),
        // Every track given up on in one pass: stop, at the last one.
        Row(
            failures: [(1, .notFound, true), (2, .notFound, true), (3, .transient, true), (3, .transient, true)],
            expected: [.skip, .skip, .retry(after: .zero), .stop]),
        // A new version found just after the play began: started again at once; a second time in
        // a row is a failure that may pass.
        Row(failures: [(1, .newVersion, true), (1, .newVersion, true)], expected: [.restart, .skip]),
        Row(failures: [(1, .newVersion, true), (1, .transient, true)], expected: [.restart, .skip]),
        // A lost output is no track's fault, however often and whatever the network: nothing is
        // skipped, nothing retried, and the pass is not used up.
        Row(
            failures: [(1, .outputLost, true), (1, .outputLost, true), (2, .outputLost, false)],
            expected: [.pauseForOutput, .pauseForOutput, .pauseForOutput]),
        Row(
            failures: [(1, .outputLost, true), (1, .notFound, true), (2, .notFound, true)],
            expected: [.pauseForOutput, .skip, .skip]),
        // A track failing twice in a pass counts once: the others still get their turn.
        Row(
            failures: [(1, .notFound, true), (1, .notFound, true), (2, .notFound, true)],
            expected: [.skip, .skip, .skip]),
    ]

    @Test(arguments: rows)
    func decisions(row: Row) {
        var policy = FailurePolicy(retryDelay: .zero)
        let actions = row.failures.map {
            policy.failed(TrackID($0.track), kind: $0.kind, networkUp: $0.networkUp, queue: queue)
        }
        #expect(actions == row.expected)
    }

    @Test func aTrackThatPlaysStartsANewPass() {
        var policy = FailurePolicy(retryDelay: .zero)
        #expect(policy.failed(a, kind: .corrupt, networkUp: true, queue: queue) == .skip)
        #expect(policy.failed(b, kind: .corrupt, networkUp: true, queue: queue) == .skip)
        policy.reset()
        #expect(policy.failed(c, kind: .corrupt, networkUp: true, queue: queue) == .skip, "a and b count no more")
        // And a track that played may be retried again after a later cut.
        #expect(policy.failed(a, kind: .transient, networkUp: true, queue: queue) == .retry(after: .zero))
        policy.reset()
        #expect(policy.failed(a, kind: .transient, networkUp: true, queue: queue) == .retry(after: .zero))
    }
}

/// Whether the fake network is up, switched by a test; it counts how often it was asked.
final class NetworkSwitch: Sendable {
    private let state: Mutex<(up: Bool, checks: Int)>
    init(_ up: Bool) { state = Mutex((up, 0)) }
    var isUp: Bool {
        get {
            state.withLock {
                $0.checks += 1
                return $0.up
            }
        }
        set { state.withLock { $0.up = newValue } }
    }
    /// How often `isUp` was read.
    var checks: Int { state.withLock { $0.checks } }
}

@Suite("The player on failures")
struct PlayerFailureTests {
    let urls = (1...4).map { URL(string: "http://127.0.0.1:1/\($0).mp3")! }

    /// The network check's period on the test clock.
    static let checkInterval: Duration = .seconds(1)

    func makePlayer(network: NetworkSwitch = NetworkSwitch(true), clock: TestClock = TestClock()) async -> (
        FakeEngine, Player, UpdateRecorder, TransientMemory
    ) {
        let engine = FakeEngine()
        let memory = TransientMemory()
        let player = Player(
            engine: engine, memory: memory, retryDelay: .zero, networkUp: { _ in network.isUp },
            networkCheckInterval: Self.checkInterval, clock: clock)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        return (engine, player, recorder, memory)
    }

    @Test func aRetryAfterAMidTrackFailureResumesWhereItFailed() async {
        let (engine, player, recorder, memory) = await makePlayer()
        await player.open(urls[0])
        let id = engine.loads[0].0
        engine.send(.described(id, TrackTags(), duration: .seconds(300)))
        engine.setPosition(.seconds(40))
        await player.saveNow()
        engine.setPosition(.seconds(42))
        engine.send(.failed(id, EngineError("connection reset", kind: .transient, position: .seconds(42))))
        #expect(await recorder.waitUntil { _ in engine.loads.count == 2 })
        #expect(engine.loads[1].0 == id && engine.loads[1].1 == .seconds(42), "\(engine.loads)")
        #expect(memory.position(forKey: urls[0].absoluteString)?.position == .seconds(40), "a failure saves nothing")
        #expect(memory.session()?.position == .seconds(42), "the session keeps the place, not 0:00")
    }

    @Test func aNewVersionStartsTheTrackAgainAtOnceWhereItsPlayBeganWithoutAnError() async {
        let (engine, player, recorder, memory) = await makePlayer()
        await player.open(urls[0])
        let id = engine.loads[0].0
        engine.send(.failed(id, EngineError("a new version", kind: .newVersion, position: .milliseconds(200))))
        #expect(await recorder.waitUntil { _ in engine.loads.count == 2 })
        #expect(engine.loads[1].0 == id && engine.loads[1].1 == .zero, "\(engine.loads)")
        #expect(await player.state.lastError == nil, "nothing failed for the listener")
        #expect(await player.state.status == .playing)
        // A resumed episode starts again at its resume position, not at 0:00 nor where it failed.
        memory.save(
            SavedPosition(
                key: urls[1].absoluteString, position: .seconds(600), duration: .seconds(3600), rate: 1, finished: false
            )
        )
        await player.open(urls[1])
        let resumed = engine.loads[2]
        #expect(resumed.1 > .seconds(590) && resumed.1 <= .seconds(600), "\(engine.loads)")
        engine.send(.failed(resumed.0, EngineError("a new version", kind: .newVersion, position: .seconds(601))))
        #expect(await recorder.waitUntil { _ in engine.loads.count == 4 })
        #expect(engine.loads[3].0 == resumed.0 && engine.loads[3].1 == resumed.1, "\(engine.loads)")
    }

    @Test func theSavedPlaceSurvivesAFailureWhileTheListenerHasPaused() async {
        let (engine, player, recorder, memory) = await makePlayer()
        await player.open(urls[0])
        let id = engine.loads[0].0
        engine.setPosition(.seconds(42))
        await player.pause()
        engine.send(.failed(id, EngineError("connection reset", kind: .transient, position: .seconds(42))))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.lastError != nil })
        await player.saveNow()  // the periodic save, after the engine forgot the track
        #expect(memory.session()?.position == .seconds(42))
        #expect(player.position() == .seconds(42))
        await player.play()
        #expect(engine.loads.last?.1 == .seconds(42), "Play continues where it failed")
    }

    @Test func badTracksAreSkippedAndTheGoodOnePlays() async {
        let (engine, player, recorder, _) = await makePlayer()
        await player.open(urls.map { ($0, nil) })
        let ids = engine.loads.map(\.0)
        engine.send(.failed(ids[0], EngineError("HTTP status 404", kind: .notFound)))
        #expect(await recorder.waitUntil { _ in engine.loads.count == 2 })
        #expect(engine.loads[1].0 != ids[0], "a missing track is not retried")
        engine.send(.failed(engine.loads[1].0, EngineError("refused", kind: .unreachable)))
        #expect(await recorder.waitUntil { _ in engine.loads.count == 3 })
        #expect(engine.loads[2].0 == engine.loads[1].0, "a refused connection is retried once")
        engine.send(.failed(engine.loads[2].0, EngineError("refused", kind: .unreachable)))
        #expect(await recorder.waitUntil { _ in engine.loads.count == 4 })
        engine.send(.failed(engine.loads[3].0, EngineError("not audio", kind: .unsupported)))
        #expect(await recorder.waitUntil { _ in engine.loads.count == 5 })
        let good = engine.loads[4].0
        engine.send(.trackStarted(good))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.lastError == nil })
        #expect(await player.state.status == .playing)
        #expect(await player.state.nowPlaying?.entry.url == urls[3])
    }

    @Test func aQueueWhoseEveryTrackFailsStopsAfterOnePass() async {
        let (engine, player, recorder, _) = await makePlayer()
        await player.setLoop(.playlist)
        await player.open(urls.map { ($0, nil) })
        for _ in 0..<4 {
            let loadsBefore = engine.loads.count
            engine.send(.failed(engine.loads.last!.0, EngineError("not audio", kind: .unsupported)))
            #expect(
                await recorder.waitUntil { _ in
                    engine.loads.count == loadsBefore + 1 || recorder.snapshots.last?.status == .stopped
                })
        }
        #expect(await player.state.status == .stopped)
        #expect(Set(engine.loads.map(\.0)).count == 4, "every track was tried once, even with loop on")
        #expect(await player.state.lastError?.contains("no track of the queue could be played") == true)
    }

    @Test func withTheNetworkDownTheTrackWaitsInsteadOfSkipping() async throws {
        let network = NetworkSwitch(false)
        let clock = TestClock()
        let (engine, player, recorder, _) = await makePlayer(network: network, clock: clock)
        await player.open(urls.map { ($0, nil) })
        let id = engine.loads[0].0
        engine.send(.failed(id, EngineError("no route", kind: .unreachable, position: .seconds(7))))
        #expect(
            await recorder.waitUntil { _ in
                recorder.snapshots.last?.lastError?.contains("waiting for the network") == true
            })
        #expect(await player.state.buffering)
        #expect(await player.state.nowPlaying?.entry.id == id, "no skipping through the queue offline")
        #expect(engine.loads.count == 1)
        // Another timer (the periodic save) sleeps beside the network check: the check is told
        // by when it is due, one interval on.
        for _ in 0..<3 {
            #expect(await clock.waitForSleeper(dueAt: clock.now.advanced(by: Self.checkInterval)), "the check is armed")
            let checks = network.checks
            clock.advance(by: Self.checkInterval)
            #expect(await recorder.waitUntil { _ in network.checks > checks }, "still offline: it checks again")
        }
        #expect(engine.loads.count == 1)
        network.isUp = true
        #expect(await clock.waitForSleeper(dueAt: clock.now.advanced(by: Self.checkInterval)))
        clock.advance(by: Self.checkInterval)
        #expect(await recorder.waitUntil { _ in engine.loads.count == 2 })
        #expect(
            engine.loads.last?.0 == id && engine.loads.last?.1 == .seconds(7), "back online: the same track, same place"
        )
    }

    @Test func pausingWhileWaitingForTheNetworkCancelsTheAutomaticRetry() async throws {
        let network = NetworkSwitch(false)
        let clock = TestClock()
        let (engine, player, recorder, _) = await makePlayer(network: network, clock: clock)
        await player.open(urls[0])
        engine.send(.failed(engine.loads[0].0, EngineError("no route", kind: .unreachable, position: .seconds(7))))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.buffering == true })
        #expect(await clock.waitForSleepers(), "the network check is armed")
        await player.pause()
        #expect(clock.sleepers == 0, "the pause ended the wait for the network")
        network.isUp = true
        clock.advance(by: Self.checkInterval * 20)  // twenty periods of the network check: nothing may load
        #expect(engine.loads.count == 1, "a listener who paused is not overruled")
        await player.play()
        #expect(engine.loads.last?.1 == .seconds(7))
    }
}
