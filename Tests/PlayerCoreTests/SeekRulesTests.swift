import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

/// MPRIS's rules for `Seek` and `SetPosition`, decided by the player on the state of the moment.
@Suite("Seek and SetPosition rules")
struct SeekRulesTests {
    static let first = URL(fileURLWithPath: "/music/1.flac")
    static let second = URL(fileURLWithPath: "/music/2.flac")

    /// A player playing `urls` from the first, whose engine reported a 60 s length at 12 s.
    static func playing(_ urls: [URL], loop: LoopMode = .none) async -> (FakeEngine, Player, UpdateRecorder, TrackID) {
        let engine = FakeEngine()
        let player = Player(engine: engine, retryDelay: .zero)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.open(urls.map { ($0, nil) })
        await player.setLoop(loop)
        let id = await player.state.nowPlaying!.entry.id
        engine.send(.seekable(id, true))
        engine.send(.described(id, TrackTags(), duration: .seconds(60)))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.duration == .seconds(60) })
        engine.setPosition(.seconds(12))
        return (engine, player, recorder, id)
    }

    @Test func aSeekWithinTheTrackMovesFromWhereItIsHeard() async {
        let (engine, player, _, _) = await Self.playing([Self.first])
        #expect(await player.seek(by: .seconds(5)) == nil)
        #expect(engine.commands.last == .seek(.seconds(17)))
        #expect(await player.seek(by: .seconds(-60)) == nil)
        #expect(engine.commands.last == .seek(.zero), "not before the start")
    }

    @Test func aSeekPastTheEndActsLikeNext() async {
        let (engine, player, _, first) = await Self.playing([Self.first, Self.second])
        #expect(await player.seek(by: .seconds(50)) == nil)
        let now = await player.state.nowPlaying?.entry
        #expect(now?.url == Self.second && now?.id != first)
        #expect(!engine.commands.contains { if case .seek = $0 { true } else { false } })
    }

    @Test func aSeekPastTheEndOfTheLastTrackStops() async {
        let (engine, player, _, _) = await Self.playing([Self.first])
        #expect(await player.seek(by: .seconds(49)) == nil)
        #expect(await player.state.status == .stopped)
        #expect(engine.commands.last == .stop)
    }

    @Test func aSeekPastTheEndOfTheLastTrackWithLoopPlaylistGoesToTheFirst() async {
        let (engine, player, recorder, first) = await Self.playing([Self.first, Self.second], loop: .playlist)
        await player.next()
        let last = await player.state.nowPlaying!.entry.id
        #expect(last != first)
        engine.send(.described(last, TrackTags(), duration: .seconds(30)))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.duration == .seconds(30) })
        #expect(await player.seek(by: .seconds(3600)) == nil)
        #expect(await player.state.nowPlaying?.entry.id == first)
        #expect(await player.state.status == .playing)
    }

    /// A stale id, a negative position, a position past the end: each ignored, nothing sent.
    @Test(arguments: [(stale: true, micros: Int64(5_000_000)), (false, -1), (false, 61_000_000)])
    func aSetPositionTheSpecIgnoresSendsNothing(stale: Bool, micros: Int64) async {
        let (engine, player, _, id) = await Self.playing([Self.first])
        let before = engine.commands
        let target = stale ? TrackID(id.rawValue + 1000) : id
        #expect(await player.setPosition(of: target, to: .microseconds(micros)) == nil)
        #expect(engine.commands == before)
    }

    @Test func aSetPositionOfTheCurrentTrackSeeks() async {
        let (engine, player, _, id) = await Self.playing([Self.first])
        #expect(await player.setPosition(of: id, to: .seconds(30)) == nil)
        #expect(engine.commands.last == .seek(.seconds(30)))
    }
}
