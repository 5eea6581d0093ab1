import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

/// A player on a fake engine (failed tracks retried at once), observed, with `url`
/// opened: the engine, the player, its updates and the track's id.
func openedPlayer(_ url: URL) async -> (FakeEngine, Player, UpdateRecorder, TrackID) {
    let engine = FakeEngine()
    let player = Player(engine: engine, retryDelay: .zero)
    let recorder = UpdateRecorder()
    await player.observe { recorder.record($0) }
    await player.open(url)
    let id = await player.state.nowPlaying!.entry.id
    return (engine, player, recorder, id)
}

@Suite("Player core with a fake engine")
struct PlayerTests {
    let url = URL(string: "http://127.0.0.1:1/a.mp3")!
    let second = URL(string: "file:///music/b.flac")!

    @Test func openLoadsAndPlaysTheTrack() async throws {
        let engine = FakeEngine()
        let player = Player(engine: engine)
        await player.open(url)
        let state = await player.state
        #expect(state.status == .playing)
        #expect(state.nowPlaying?.entry.url == url)
        #expect(state.hasTracks)
        guard case .load(_, let loaded, .zero, playing: true)? = engine.commands.first else {
            Issue.record("expected a load, got \(engine.commands)")
            return
        }
        #expect(loaded == url)
    }

    @Test func pauseThenPlayResumesWithoutReloading() async {
        let engine = FakeEngine()
        let player = Player(engine: engine)
        await player.open(url)
        await player.pause()
        #expect(await player.state.status == .paused)
        await player.play()
        #expect(await player.state.status == .playing)
        #expect(engine.commands.dropFirst() == [.pause, .play])  // after the load
    }

    @Test func stopThenPlayStartsTheTrackFromZero() async {
        let engine = FakeEngine()
        let player = Player(engine: engine)
        await player.open(url)
        await player.stop()
        #expect(await player.state.status == .stopped)
        await player.play()
        let loads = engine.commands.filter { if case .load = $0 { true } else { false } }
        #expect(loads.count == 2)
        #expect(engine.commands.contains(.stop))
        if case .load(_, _, let position, playing: true)? = loads.last {
            #expect(position == .zero)
        } else {
            Issue.record("expected a second load at zero: \(engine.commands)")
        }
    }

    @Test func playPauseToggles() async {
        let engine = FakeEngine()
        let player = Player(engine: engine)
        await player.open(url)
        await player.playPause()
        #expect(await player.state.status == .paused)
        await player.playPause()
        #expect(await player.state.status == .playing)
    }

    @Test func playWithAnEmptyQueueDoesNothing() async {
        let engine = FakeEngine()
        let player = Player(engine: engine)
        await player.play()
        #expect(await player.state.status == .stopped)
        #expect(await player.state.hasTracks == false)
        #expect(engine.commands.isEmpty)
    }

    @Test func tagsAndDurationOfTheCurrentTrackReachTheSnapshot() async {
        let (engine, player, recorder, id) = await openedPlayer(url)
        var tags = TrackTags()
        tags.title = "Tone"
        tags.artists = ["Spool"]
        engine.send(.described(id, tags, duration: .seconds(3)))
        engine.send(.described(TrackID(999), TrackTags(), duration: nil))  // another track's: ignored
        let arrived = await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.duration == .seconds(3) }
        #expect(arrived)
        let now = await player.state.nowPlaying
        #expect(now?.tags.title == "Tone")
        #expect(now?.displayTitle == "Tone")
        #expect(now?.tags.artists == ["Spool"])
    }

    @Test func endOfTheLastTrackStops() async {
        let (engine, player, recorder, id) = await openedPlayer(url)
        engine.send(.endOfTrack(id))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.status == .stopped })
        #expect(await player.state.nowPlaying?.entry.id == id, "the last track stays current for Play")
        #expect(engine.commands.last == .stop)
    }

    @Test func aFailedTrackIsRetriedOnceThenSkipped() async {
        let (engine, player, recorder, id) = await openedPlayer(url)
        engine.send(.failed(id, EngineError("connection reset")))
        #expect(await recorder.waitUntil { _ in engine.loads.count == 2 })
        #expect(await player.state.lastError?.contains("connection reset") == true)
        engine.send(.failed(id, EngineError("connection reset")))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.status == .stopped })
        #expect(engine.loads.count == 2)
    }

    @Test func seekedEventsAreForwarded() async {
        let (engine, player, recorder, id) = await openedPlayer(url)
        // Before the engine says whether the track can seek, the seek goes to it (a start position).
        #expect(await player.seek(to: .seconds(1)) == nil)
        #expect(engine.commands.contains(.seek(.seconds(1))))
        engine.send(.seekable(id, false))
        engine.send(.described(id, TrackTags(), duration: .seconds(5)))  // seen once the events before it were handled
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.duration == .seconds(5) })
        let refusal = await player.seek(to: .seconds(3))
        #expect(!engine.commands.contains(.seek(.seconds(3))), "not seekable once the engine says so")
        #expect(refusal?.contains("cannot seek") == true, "a refused seek says why: \(refusal ?? "nil")")
        engine.send(.seekable(id, true))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.seekable == true })
        #expect(await player.seek(to: .seconds(2)) == nil)
        #expect(engine.commands.last == .seek(.seconds(2)))
        engine.send(.seeked(id, position: .seconds(2)))
        #expect(await recorder.waitUntil { $0.contains(.seeked(.seconds(2))) })
    }

    @Test func trackIDsAreNeverReused() async {
        let engine = FakeEngine()
        let player = Player(engine: engine)
        await player.open(url)
        let first = await player.state.nowPlaying!.entry.id
        await player.open(url)
        let again = await player.state.nowPlaying!.entry.id
        #expect(first != again)
    }

    @Test func volumeIsClamped() async {
        let engine = FakeEngine()
        let player = Player(engine: engine)
        await player.setVolume(-0.5)
        #expect(await player.state.volume == 0)
        await player.setVolume(3)
        #expect(await player.state.volume == 1)
        #expect(engine.commands == [.volume(0), .volume(1)])
    }

    @Test func observersHearOnlyRealChanges() async {
        let engine = FakeEngine()
        let player = Player(engine: engine)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.open(url)
        let count = recorder.snapshots.count
        await player.play()  // already playing: no change
        await player.setVolume(1.0)  // unchanged
        #expect(recorder.snapshots.count == count)
    }

    @Test func theNextTrackIsPreparedAndTakesOverWhenItsAudioStarts() async {
        let engine = FakeEngine()
        let player = Player(engine: engine)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.open(url)
        await player.add([second])
        let state = await player.state
        #expect(state.canGoNext)
        guard case .next(let prepared?)? = engine.commands.last else {
            Issue.record("the next track was not prepared: \(engine.commands)")
            return
        }
        var tags = TrackTags()
        tags.title = "Second"
        engine.send(.described(prepared, tags, duration: nil))  // arrives before its audio starts
        #expect(
            await recorder.waitUntil { _ in recorder.snapshots.last?.queue.last?.title == "Second" },
            "the queue shows the title read ahead")
        engine.send(.trackStarted(prepared))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.entry.id == prepared })
        let now = await player.state
        #expect(now.nowPlaying?.entry.url == second)
        #expect(now.nowPlaying?.tags.title == "Second")
        #expect(now.status == .playing)
        #expect(!engine.commands.dropFirst().contains { if case .load = $0 { true } else { false } })
    }

    @Test func rateIsClampedAndZeroPauses() async {
        let engine = FakeEngine()
        let player = Player(engine: engine)
        await player.open(url)
        await player.setRate(5)
        #expect(await player.state.rate == 2.0)
        await player.setRate(0.1)
        #expect(await player.state.rate == 0.5)
        await player.setRate(0)
        #expect(await player.state.status == .paused)
        #expect(await player.state.rate == 0.5)
        #expect(await player.state.minimumRate == 0.5)
        #expect(await player.state.maximumRate == 2.0)
    }
}
