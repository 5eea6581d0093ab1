import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

/// What a new current track shows from its first moment: what the queue already knows of it.
@Suite("NowPlaying from the first moment")
struct NowPlayingTests {
    @Test func aGaplessTrackShowsItsKnownTagsAndLengthFromItsFirstSnapshot() async throws {
        var tags = TrackTags()
        tags.title = "Two"
        tags.artists = ["Band"]
        let memory = TransientMemory()
        memory.save(
            SavedSession(
                entries: [
                    .init(url: URL(fileURLWithPath: "/music/1.flac"), title: nil),
                    .init(url: URL(fileURLWithPath: "/music/2.flac"), title: nil, tags: tags, duration: .seconds(42)),
                ],
                currentIndex: 0, position: .zero, loop: .none, shuffle: false, rate: 1, volume: 1))
        let engine = FakeEngine(trackLength: nil)
        let player = Player(engine: engine, memory: memory, retryDelay: .zero)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.restoreSession()
        await player.play()
        let ids = await player.state.queue.map(\.id)
        engine.send(.trackStarted(ids[0]))
        engine.send(.nextQueued(ids[1]))
        engine.send(.trackStarted(ids[1]))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.entry.id == ids[1] })
        let first = try #require(recorder.snapshots.first { $0.nowPlaying?.entry.id == ids[1] }?.nowPlaying)
        #expect(first.duration == .seconds(42), "no moment without its length")
        #expect(first.tags.title == "Two" && first.tags.artists == ["Band"])
    }
}
