import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

/// MPRIS transport rules that depend on the state earlier calls left.
@Suite("Transport rules after earlier calls")
struct TransportRulesTests {
    static let first = URL(fileURLWithPath: "/music/1.flac")
    static let second = URL(fileURLWithPath: "/music/2.flac")

    @Test func openUriWhilePausedPlaysTheNewTrack() async {
        let engine = FakeEngine()
        let player = Player(engine: engine, retryDelay: .zero)
        await player.open(Self.first)
        await player.pause()
        #expect(await player.state.status == .paused)
        await player.open(Self.second)
        #expect(await player.state.status == .playing)
        guard case .load(_, Self.second, .zero, playing: true)? = engine.commands.last else {
            Issue.record("expected a playing load of the new track, got \(engine.commands)")
            return
        }
    }

    @Test func nextAtTheLastTrackWithLoopOffChangesNothingAndPlaylistLoopWraps() async {
        let engine = FakeEngine()
        let player = Player(engine: engine, retryDelay: .zero)
        await player.open([(Self.first, nil), (Self.second, nil)])
        await player.next()
        let last = await player.state.nowPlaying?.entry.id
        let loads = engine.loads.count
        await player.next()
        #expect(await player.state.nowPlaying?.entry.id == last, "no next track: Next does nothing (CanGoNext false)")
        #expect(engine.loads.count == loads)
        #expect(await player.state.canGoNext == false)
        await player.setLoop(.playlist)
        #expect(await player.state.canGoNext == true)
        await player.next()
        #expect(await player.state.nowPlaying?.entry.url == Self.first)
    }
}
