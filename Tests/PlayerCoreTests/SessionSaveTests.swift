import EngineAPI
import Foundation
import PlayerCore
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
}
