import ByteSourceAPI
import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

/// What a new current track shows from its first moment: what the queue already knows of it.
@Suite("NowPlaying from the first moment")
struct NowPlayingTests {
    /// A player over a fake engine, playing a session of `entries` restored from memory from its
    /// first; with its update recorder and the queue's ids.
    func playing(_ entries: [SavedSession.Entry]) async -> (FakeEngine, Player, UpdateRecorder, [TrackID]) {
        let memory = TransientMemory()
        memory.save(
            SavedSession(
                entries: entries, currentIndex: 0, position: .zero, loop: .none, shuffle: false, rate: 1, volume: 1))
        let engine = FakeEngine(trackLength: nil)
        let player = Player(engine: engine, memory: memory, retryDelay: .zero)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.restoreSession()
        await player.play()
        return (engine, player, recorder, await player.state.queue.map(\.id))
    }

    @Test func aGaplessTrackShowsItsKnownTagsAndLengthFromItsFirstSnapshot() async throws {
        var tags = TrackTags()
        tags.title = "Two"
        tags.artists = ["Band"]
        let (engine, player, recorder, ids) = await playing([
            .init(url: URL(fileURLWithPath: "/music/1.flac"), title: nil),
            .init(url: URL(fileURLWithPath: "/music/2.flac"), title: nil, tags: tags, duration: .seconds(42)),
        ])
        engine.send(.trackStarted(ids[0]))
        engine.send(.nextQueued(ids[1]))
        engine.send(.trackStarted(ids[1]))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.entry.id == ids[1] })
        let first = try #require(recorder.snapshots.first { $0.nowPlaying?.entry.id == ids[1] }?.nowPlaying)
        #expect(first.duration == .seconds(42), "no moment without its length")
        #expect(first.tags.title == "Two" && first.tags.artists == ["Band"])
    }

    @Test func theVariantPlayedIsShownAndAPreparedTracksFromItsFirstMoment() async throws {
        let (engine, player, recorder, ids) = await playing([
            .init(url: URL(string: "http://h/one/master.m3u8")!, title: nil),
            .init(url: URL(string: "http://h/two/master.m3u8")!, title: nil),
        ])
        let low = StreamVariant(bitrate: 64_000, number: 1, count: 2)
        let high = StreamVariant(bitrate: 256_000, number: 2, count: 2)
        engine.send(.variant(ids[0], low))
        engine.send(.trackStarted(ids[0]))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.variant == low })
        engine.send(.variant(ids[0], high))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.variant == high })
        // The next track's variant, reported while it was prepared, shows once it starts.
        engine.send(.variant(ids[1], low))
        engine.send(.nextQueued(ids[1]))
        engine.send(.trackStarted(ids[1]))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.entry.id == ids[1] })
        let first = try #require(recorder.snapshots.first { $0.nowPlaying?.entry.id == ids[1] }?.nowPlaying)
        #expect(first.variant == low, "the prepared track's own variant, not the previous track's")
    }

    @Test func aLiveStreamShowsTheSongHeardWithItsStationAndNeverAStaleArtist() async throws {
        let engine = FakeEngine(trackLength: nil)
        let player = Player(engine: engine, memory: TransientMemory(), retryDelay: .zero)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        let url = try #require(URL(string: "http://radio.example/stream"))
        await player.add([(url, "My Station File")], play: true)
        let id = try #require(await player.state.queue.first?.id)
        engine.send(.seekable(id, false))
        engine.send(.liveStream(id, LiveStation(name: nil, genre: "Jazz")))
        engine.send(.trackStarted(id))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.live != nil })
        var now = try #require(recorder.snapshots.last?.nowPlaying)
        #expect(now.displayTitle == "My Station File", "before any song: the station's name")
        #expect(now.shownTags.album == "My Station File")
        #expect(now.shownTags.genres == ["Jazz"])

        engine.send(
            .streamTitle(id, StreamTitle(text: "Miles Davis - So What", artist: "Miles Davis", title: "So What")))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.live?.song != nil })
        now = try #require(recorder.snapshots.last?.nowPlaying)
        #expect(now.displayTitle == "So What")
        #expect(now.shownTags.artists == ["Miles Davis"])

        engine.send(.streamTitle(id, StreamTitle(text: "Station jingle", artist: nil, title: "Station jingle")))
        #expect(
            await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.live?.song?.title == "Station jingle" }
        )
        now = try #require(recorder.snapshots.last?.nowPlaying)
        #expect(now.shownTags.artists.isEmpty, "the previous song's artist is gone")
        #expect(now.shownTags.title == "Station jingle")

        engine.send(.streamTitle(id, StreamTitle(text: "", artist: nil, title: "")))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.live?.song == nil })
        #expect(recorder.snapshots.last?.nowPlaying?.displayTitle == "My Station File")
    }
}
