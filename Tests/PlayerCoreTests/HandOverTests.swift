import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

/// The queue changes after the engine committed to the next track (about-to-finish): the
/// player's queue wins, and the right track is loaded at the boundary.
@Suite("Queue edits after the engine committed to the next track")
struct HandOverTests {
    let urls = (1...4).map { URL(string: "file:///music/\($0).flac")! }

    /// A player on a fake engine playing 1 of [1, 2, 3] with 2 committed as the next track.
    func committed(_ count: Int = 3) async -> (FakeEngine, Player, UpdateRecorder, [TrackID]) {
        let engine = FakeEngine()
        let player = Player(engine: engine, retryDelay: .zero)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.open(urls.prefix(count).map { ($0, nil) })
        let ids = await player.state.queue.map(\.id)
        engine.send(.trackStarted(ids[0]))
        #expect(engine.commands.last == .next(ids[1]))
        engine.send(.nextQueued(ids[1]))
        await handled(engine, recorder, ids[0])
        return (engine, player, recorder, ids)
    }

    /// Waits until the engine's events so far are handled: events arrive in order, so once a
    /// duration sent now is seen, everything sent before it was handled.
    func handled(_ engine: FakeEngine, _ recorder: UpdateRecorder, _ current: TrackID) async {
        let marker = Duration.milliseconds(Int64.random(in: 1_000_000...2_000_000))
        engine.send(.described(current, TrackTags(), duration: marker))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.duration == marker })
    }

    func current(_ player: Player) async -> URL? { await player.state.nowPlaying?.entry.url }

    @Test func withoutAnEditTheCommittedTrackIsHandedOverWithoutALoad() async {
        let (engine, player, recorder, ids) = await committed()
        engine.send(.trackStarted(ids[1]))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.entry.id == ids[1] })
        #expect(engine.loads.count == 1)
        #expect(await current(player) == urls[1])
    }

    @Test func playNextAfterTheCommitLoadsTheInsertedTrackAtTheBoundary() async {
        let (engine, player, recorder, ids) = await committed()
        let inserted = await player.add([(urls[3], nil)], after: ids[0])
        engine.send(.trackStarted(ids[1]))  // the engine goes on with what it committed to
        #expect(await recorder.waitUntil { _ in engine.loads.count == 2 })
        #expect(engine.loads.last?.0 == inserted.first)
        #expect(await current(player) == urls[3])
        #expect(
            !recorder.snapshots.contains { $0.nowPlaying?.entry.id == ids[1] },
            "Metadata never named the committed track")
        // And the committed one still comes after it.
        engine.send(.endOfTrack(inserted[0]))
        #expect(await recorder.waitUntil { _ in engine.loads.count == 3 })
        #expect(engine.loads.last?.0 == ids[1])
    }

    @Test func removingTheCommittedTrackLoadsTheOneAfterIt() async {
        let (engine, player, recorder, ids) = await committed()
        await player.remove(ids[1])
        engine.send(.trackStarted(ids[1]))
        #expect(await recorder.waitUntil { _ in engine.loads.count == 2 })
        #expect(engine.loads.last?.0 == ids[2])
        #expect(await current(player) == urls[2])
        #expect(await player.state.queue.map(\.id) == [ids[0], ids[2]])
    }

    @Test func clearingTheQueueAfterTheCommitStopsAtOnce() async {
        let (engine, player, recorder, ids) = await committed()
        await player.clear()
        engine.send(.trackStarted(ids[1]))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.status == .stopped })
        #expect(engine.loads.count == 1)
        #expect(await player.state.nowPlaying == nil)
    }

    @Test func turningLoopTrackOnAfterTheCommitRepeatsTheCurrentTrack() async {
        let (engine, player, recorder, ids) = await committed()
        await player.setLoop(.track)
        engine.send(.trackStarted(ids[1]))
        #expect(await recorder.waitUntil { _ in engine.loads.count == 2 })
        #expect(engine.loads.last?.0 == ids[0] && engine.loads.last?.1 == .zero)
        #expect(await current(player) == urls[0])
        #expect(recorder.all.contains(.seeked(.zero)))
    }

    @Test func turningLoopTrackOffAfterItsRestartWasCommittedMovesOn() async {
        let engine = FakeEngine()
        let player = Player(engine: engine, retryDelay: .zero)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.setLoop(.track)
        await player.open(urls.prefix(2).map { ($0, nil) })
        let ids = await player.state.queue.map(\.id)
        #expect(engine.commands.last == .next(ids[0]))
        engine.send(.nextQueued(ids[0]))
        await handled(engine, recorder, ids[0])
        await player.setLoop(.none)
        engine.send(.trackStarted(ids[0]))  // the restart the engine had committed to
        #expect(await recorder.waitUntil { _ in engine.loads.count == 2 })
        #expect(engine.loads.last?.0 == ids[1])
        #expect(await current(player) == urls[1])
    }
}
