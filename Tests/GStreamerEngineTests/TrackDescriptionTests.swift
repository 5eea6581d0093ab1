import EngineAPI
import GStreamerEngine
import TestSupport
import Testing

/// What the engine says of a track reaches the player whole: its title with its length.
@Suite("A track's description")
struct TrackDescriptionTests {
    @Test func aTracksTitleReachesThePlayerWithItsLength() throws {
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory()
        let (engine, recorder) = try pcmEngine(into: dir.file("out.raw"))
        defer { engine.shutdown() }
        let first = fixtures.fixture(.oggVorbis)
        let second = fixtures.fixture(.flac)
        play(
            EngineTrack(id: TrackID(1), url: first.url), thenGaplessly: EngineTrack(id: TrackID(2), url: second.url),
            in: engine)
        _ = recorder.waitFor(isEnd)
        // The first description of each track, the gapless one too, carries its title and length.
        for (id, fixture) in [(TrackID(1), first), (TrackID(2), second)] {
            let described = recorder.all.first { if case .described(id, _, _) = $0 { true } else { false } }
            guard case .described(_, let tags, let duration) = described else {
                Issue.record("\(id) was never described: \(recorder.all)")
                continue
            }
            #expect(tags.title == fixture.title)
            #expect(duration != nil, "\(id)'s title came without its length")
        }
    }
}
