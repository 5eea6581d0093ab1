import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

@Suite("Resume positions and session restore")
struct ResumeAndSessionTests {
    let episode = URL(string: "http://127.0.0.1:1/episode.mp3?token=abc")!
    let other = URL(string: "http://127.0.0.1:1/other.mp3")!

    /// A player whose keys drop the query, as the cache key does for signed URLs.
    func makePlayer(_ engine: FakeEngine, _ memory: PlaybackMemory) -> Player {
        Player(engine: engine, memory: memory, retryDelay: .zero) { url in
            var parts = URLComponents(url: url, resolvingAgainstBaseURL: false)!
            parts.query = nil
            return parts.string!
        }
    }

    @Test func pausingSavesThePositionAndReopeningResumesRewound() async {
        let memory = TransientMemory()
        let engine = FakeEngine()
        let player = makePlayer(engine, memory)
        await player.open(episode)
        let id = await player.state.nowPlaying!.entry.id
        engine.send(.described(id, TrackTags(), duration: .seconds(600)))
        engine.setPosition(.seconds(125))
        await player.pause()
        #expect(memory.position(forKey: "http://127.0.0.1:1/episode.mp3")?.position == .seconds(125))

        // Another signed URL of the same file resumes at the saved place, 2 s earlier.
        await player.open(URL(string: "http://127.0.0.1:1/episode.mp3?token=rotated")!)
        #expect(engine.loads.last?.1 == .seconds(123))
    }

    @Test func positionsTooEarlyOrTooCloseToTheEndStartFromZero() async {
        let memory = TransientMemory()
        let key = "http://127.0.0.1:1/episode.mp3"
        let engine = FakeEngine()
        let player = makePlayer(engine, memory)
        memory.save(SavedPosition(key: key, position: .seconds(3), duration: .seconds(600), rate: 1, finished: false))
        await player.open(episode)
        #expect(engine.loads.last?.1 == .zero)
        memory.save(SavedPosition(key: key, position: .seconds(595), duration: .seconds(600), rate: 1, finished: false))
        await player.open(episode)
        #expect(engine.loads.last?.1 == .zero)
    }

    @Test func finishingATrackForgetsItsPositionAndNeverAppliesItToTheNext() async {
        let memory = TransientMemory()
        let engine = FakeEngine()
        let player = makePlayer(engine, memory)
        memory.save(
            SavedPosition(
                key: "http://127.0.0.1:1/episode.mp3", position: .seconds(60), duration: .seconds(600), rate: 1,
                finished: false))
        await player.open([(episode, nil), (other, nil)])
        #expect(engine.loads.last?.1 == .seconds(58))
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        let first = engine.loads.last!.0
        engine.send(.endOfTrack(first))
        #expect(await recorder.waitUntil { _ in engine.loads.count == 2 })
        #expect(engine.loads.last?.1 == .zero, "the next track starts at its own position")
        #expect(memory.position(forKey: "http://127.0.0.1:1/episode.mp3") == nil)
    }

    @Test func theSessionIsRestoredPausedAndPlayContinuesWhereItWas() async {
        let memory = TransientMemory()
        do {
            let engine = FakeEngine()
            let player = makePlayer(engine, memory)
            await player.open([(episode, "Episode"), (other, nil)])
            await player.next()
            await player.setLoop(.playlist)
            await player.setRate(1.5)
            await player.setVolume(0.4)
            let id = await player.state.nowPlaying!.entry.id
            var tags = TrackTags()
            tags.title = "Other"
            tags.artists = ["Someone"]
            tags.artURL = URL(fileURLWithPath: "/nonexistent/cover.png")
            engine.send(.described(id, tags, duration: .seconds(600)))
            for _ in 0..<10_000 where await player.state.nowPlaying?.duration == nil { await Task.yield() }
            engine.setPosition(.seconds(42))
            await player.shutdown()
        }
        let engine = FakeEngine()
        let player = makePlayer(engine, memory)
        await player.restoreSession()
        let state = await player.state
        #expect(state.status == .paused)
        #expect(state.queue.map(\.url) == [episode, other])
        #expect(state.queue.first?.title == "Episode")
        #expect(state.nowPlaying?.entry.url == other)
        #expect(state.loop == .playlist)
        #expect(state.rate == 1.5)
        #expect(state.volume == 0.4)
        // Named and measured before Play, and rewound as a track's own resume is.
        #expect(state.nowPlaying?.tags.title == "Other")
        #expect(state.nowPlaying?.tags.artists == ["Someone"])
        #expect(state.nowPlaying?.tags.artURL == nil, "art that is gone is not offered")
        #expect(state.nowPlaying?.duration == .seconds(600))
        #expect(player.position() == .seconds(42), "the place as saved, so restarts never drift")
        #expect(engine.loads.isEmpty, "nothing is loaded until Play")
        await player.play()
        #expect(engine.loads.last?.1 == .seconds(40), "Play rewinds as a track's own resume does")
        #expect(engine.loads.last?.2 == true)
        #expect(await player.state.status == .playing)
    }

    @Test func previousRestartsAfterThreeSecondsAndGoesBackBefore() async {
        let engine = FakeEngine()
        let player = makePlayer(engine, TransientMemory())
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.open([(episode, nil), (other, nil)])
        await player.next()
        let second = engine.loads.last!.0
        engine.send(.seekable(second, true))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.seekable == true })
        engine.setPosition(.seconds(10))
        await player.previous()
        #expect(engine.commands.last == .seek(.zero))
        engine.setPosition(.seconds(1))
        await player.previous()
        #expect(await player.state.nowPlaying?.entry.url == episode)
    }

    @Test func tenRapidNextCallsLandOnTheRightTrack() async {
        let engine = FakeEngine()
        let player = makePlayer(engine, TransientMemory())
        let items = (1...20).map { (URL(string: "http://127.0.0.1:1/\($0).mp3")!, Optional<String>.none) }
        await player.open(items)
        for _ in 0..<10 { await player.next() }
        #expect(await player.state.nowPlaying?.entry.url == items[10].0)
        #expect(engine.loads.last?.0 == (await player.state.nowPlaying?.entry.id))
    }

    @Test func loopTrackRestartsGaplesslyAndSignalsASeekToZero() async {
        let engine = FakeEngine()
        let player = makePlayer(engine, TransientMemory())
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.open(episode)
        await player.setLoop(.track)
        let id = engine.loads.last!.0
        #expect(engine.commands.last == .next(id), "the track is queued behind itself")
        engine.send(.nextQueued(id))
        engine.send(.trackStarted(id))
        #expect(await recorder.waitUntil { $0.contains(.seeked(.zero)) })
        #expect(engine.loads.count == 1, "no reload")
    }

    @Test func aStaleNextQueuedAfterNextKeepsTheResumePositionAndSignalsNoSeek() async {
        let memory = TransientMemory()
        memory.save(
            SavedPosition(
                key: "http://127.0.0.1:1/other.mp3", position: .seconds(60), duration: .seconds(600), rate: 1,
                finished: false))
        let engine = FakeEngine()
        let player = makePlayer(engine, memory)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.open([(episode, nil), (other, nil)])
        let second = await player.state.queue[1].id
        #expect(engine.commands.contains(.next(second)), "prepared for the hand-over")
        await player.next()  // the listener is quicker than the engine's about-to-finish
        #expect(engine.loads.last?.0 == second && engine.loads.last?.1 == .seconds(58))
        engine.send(.nextQueued(second))  // sent before the engine saw the load
        engine.send(.trackStarted(second))
        engine.send(.described(second, TrackTags(), duration: .seconds(600)))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.duration == .seconds(600) })
        #expect(!recorder.all.contains(.seeked(.zero)), "no spurious Seeked(0)")
        #expect(memory.position(forKey: "http://127.0.0.1:1/other.mp3")?.position == .seconds(60), "its place is kept")
    }

    @Test func nextAtTheEndOfTheQueueDoesNothing() async {
        let engine = FakeEngine()
        let player = makePlayer(engine, TransientMemory())
        await player.open(episode)
        #expect(await player.state.canGoNext == false)
        let before = engine.commands
        await player.next()
        #expect(await player.state.status == .playing, "CanGoNext is false: Next has no effect")
        #expect(engine.commands == before)
    }

    @Test func aSeekWhileStoppedSetsWherePlayStarts() async {
        let engine = FakeEngine()
        let player = makePlayer(engine, TransientMemory())
        await player.open(episode)
        await player.stop()
        #expect(await player.seek(to: .seconds(15)) == nil)
        #expect(player.position() == .seconds(15), "Position shows where Play will start")
        await player.play()
        #expect(engine.loads.last?.1 == .seconds(15))
        // Stop forgets it again: Play after Stop starts from the beginning.
        await player.stop()
        await player.play()
        #expect(engine.loads.last?.1 == .zero)
    }
}
