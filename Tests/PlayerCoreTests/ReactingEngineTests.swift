import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

@Suite("The player over a fake engine that answers as the GStreamer engine does")
struct ReactingEngineTests {
    let urls = (1...3).map { URL(string: "http://127.0.0.1:1/\($0).mp3")! }

    func makePlayer(_ engine: FakeEngine) async -> (Player, UpdateRecorder) {
        let player = Player(engine: engine, retryDelay: .zero, networkUp: { _ in true })
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        return (player, recorder)
    }

    @Test func aMidTrackFailureIsRetriedWhereTheEngineSaysItFailed() async {
        let engine = FakeEngine(reacting: true)
        let (player, recorder) = await makePlayer(engine)
        await player.open(urls[0])
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.duration != nil })
        engine.setPosition(.seconds(42))
        engine.fail("connection reset")
        #expect(await recorder.waitUntil { _ in engine.loads.count == 2 })
        #expect(engine.loads.last.map { [$0.1] } == [.seconds(42)], "\(engine.loads)")
        #expect(
            await recorder.waitUntil { _ in
                recorder.snapshots.last?.lastError == nil && recorder.snapshots.last?.status == .playing
            })
        #expect(engine.loadedTrack == engine.loads.last?.0)
    }

    /// A failed output (the sound server went away) is no track's fault: retrying or skipping
    /// would run through the queue in silence. The track pauses at its place, the listener is
    /// told, and Play loads it there again.
    @Test func aLostOutputPausesTheTrackAtItsPlaceAndPlayTriesAgain() async {
        let engine = FakeEngine(reacting: true)
        let (player, recorder) = await makePlayer(engine)
        await player.open([(urls[0], nil), (urls[1], nil)])
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.duration != nil })
        engine.setPosition(.seconds(42))
        engine.fail("Failed to connect: Connection refused", kind: .outputLost)
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.status == .paused })
        let paused = await player.state
        #expect(paused.nowPlaying?.entry.url == urls[0], "the queue did not move on")
        #expect(paused.lastError?.contains("the audio output failed") == true, "\(paused.lastError ?? "")")
        #expect(engine.loads.count == 1, "no retry while the output is gone: \(engine.loads)")

        await player.play()
        #expect(await recorder.waitUntil { _ in engine.loads.count == 2 })
        #expect(engine.loads.last?.1 == .seconds(42), "\(engine.loads)")
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.status == .playing })
    }

    @Test func aTrackThatCannotOpenIsSkippedForTheNextOne() async {
        let engine = FakeEngine(reacting: true)
        engine.failOpening(urls[0], with: EngineError("HTTP status 404", kind: .notFound))
        let (player, recorder) = await makePlayer(engine)
        await player.open([(urls[0], nil), (urls[1], nil)])
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.entry.url == urls[1] })
        #expect(engine.loads.count == 2)
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.duration != nil })
        #expect(await player.state.status == .playing)
    }

    @Test func theEndOfATrackHandsOverToThePreparedOneWithoutALoad() async {
        let engine = FakeEngine(reacting: true)
        let (player, recorder) = await makePlayer(engine)
        await player.open([(urls[0], nil), (urls[1], nil)])
        let second = await player.state.queue[1].id
        #expect(await recorder.waitUntil { _ in engine.commands.contains(.next(second)) })
        engine.endTrack()
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.entry.id == second })
        #expect(engine.loads.count == 1, "gapless: no load for the second track")
        #expect(engine.heardPosition()?.track == second)
    }

    @Test func stopForgetsTheTrackAndItsPosition() async {
        let engine = FakeEngine(reacting: true)
        let (player, _) = await makePlayer(engine)
        await player.open(urls[0])
        engine.setPosition(.seconds(5))
        await player.stop()
        #expect(engine.position() == nil)
        #expect(engine.loadedTrack == nil)
        #expect(player.position() == .zero)
    }
}
