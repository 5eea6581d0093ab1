import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

@Suite("What the saved session says right after a command")
struct SessionSaveTests {
    let first = URL(string: "http://127.0.0.1:1/first.mp3")!
    let second = URL(string: "http://127.0.0.1:1/second.mp3")!

    /// Found by the kill -9 end-to-end test: a track change saved the old track's
    /// position (which the engine still reports until it has loaded the new one)
    /// as the new track's, so a crash then resumed the new track there.
    @Test func aTrackChangeSavesTheNewTracksStartNotTheOldPosition() async {
        let memory = TransientMemory()
        let engine = FakeEngine()
        let player = Player(engine: engine, memory: memory, retryDelay: .zero)
        await player.open([(first, nil), (second, nil)])
        engine.setPosition(.seconds(42))  // the first track, still playing in the engine
        await player.next()
        let saved = memory.session()
        #expect(saved?.currentIndex == 1)
        #expect(saved?.position == .zero)
        // The first track's own position is kept for it.
        #expect(memory.position(forKey: first.absoluteString)?.position == .seconds(42))
    }

    /// Volume is part of the session; set while paused it must survive a crash too.
    @Test func aVolumeChangeIsSavedAtOnce() async {
        let memory = TransientMemory()
        let player = Player(engine: FakeEngine(), memory: memory, retryDelay: .zero)
        await player.open([(first, nil)])
        await player.pause()
        await player.setVolume(0.3)
        #expect(memory.session()?.volume == 0.3)
    }

    /// At 2× a wall-clock interval of 4 s would lose 8 s of the track to a crash.
    @Test func theSaveIntervalBoundsMediaTimeAtAnyRate() {
        let policy = ResumePolicy()
        #expect(policy.saveInterval(atRate: 1) == policy.saveInterval)
        #expect(policy.saveInterval(atRate: 2) == policy.saveInterval / 2)
        #expect(policy.saveInterval(atRate: 0.5) == policy.saveInterval)
        #expect(policy.saveInterval(atRate: 2) * 2 <= .seconds(5))
    }
}
