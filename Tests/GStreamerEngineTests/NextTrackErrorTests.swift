import EngineAPI
import Foundation
import GStreamerEngine
import TestSupport
import Testing

/// An error of the track prepared for the gapless hand-over belongs to it, never to the one
/// playing: the playing track plays to its end.
@Suite("Errors of the next track")
struct NextTrackErrorTests {
    enum Breakage: String, CaseIterable, Sendable {
        /// Text named `.mp3`: caught by its first bytes before playbin is given it.
        case textNamedMP3
        /// An M4A whose header promises what its body does not hold: it breaks in playbin.
        case truncatedM4A
    }

    @Test(arguments: Breakage.allCases)
    func aBrokenNextTrackLetsThePlayingOneEndAndIsBlamedAlone(breakage: Breakage) throws {
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory()
        let junk: URL
        switch breakage {
        case .textNamedMP3:
            junk = dir.file("junk.mp3")
            try Data(repeating: 0x41, count: 64 * 1024).write(to: junk)
        case .truncatedM4A:
            junk = dir.file("junk.m4a")
            let whole = try Data(contentsOf: fixtures.fixture(.m4aMoovAtEnd).url)
            try whole.prefix(whole.count / 3).write(to: junk)
        }
        let output = dir.file("out.raw")
        let (engine, recorder) = try pcmEngine(into: output)
        defer { engine.shutdown() }
        let first = fixtures.fixture(.flac)
        play(
            EngineTrack(id: TrackID(1), url: first.url), thenGaplessly: EngineTrack(id: TrackID(2), url: junk),
            in: engine)
        let end = recorder.waitFor(isEnd)
        // Let anything that follows the end arrive too.
        _ = recorder.waitFor(timeout: 1) { if case .failed(TrackID(2), _) = $0 { true } else { false } }
        let events = recorder.all
        print("events after a broken next track: \(events.filter { if case .described = $0 { false } else { true } })")
        #expect(end == .endOfTrack(TrackID(1)), "the playing track ends normally: \(String(describing: end))")
        #expect(
            !events.contains { if case .failed(TrackID(1), _) = $0 { true } else { false } },
            "never blamed on the playing track")
        #expect(!events.contains(.trackStarted(TrackID(2))))
        if breakage == .textNamedMP3 {
            // (A rebuild reopens the file sink, so only an unbroken run can be counted.)
            let played = try Data(contentsOf: output).count / 4
            #expect(
                played == Fixtures.sampleCount,
                "the first track's samples all played: \(played) of \(Fixtures.sampleCount)")
        }
    }
}

@Suite("A truncated file fails, never hangs")
struct TruncatedFileTests {
    @Test func aTruncatedM4AWithItsIndexMissingFailsEveryTime() throws {
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory()
        let broken = dir.file("broken.m4a")
        let whole = try Data(contentsOf: fixtures.fixture(.m4aMoovAtEnd).url)
        try whole.prefix(whole.count / 3).write(to: broken)
        let (engine, recorder) = try pcmEngine(into: dir.file("out.raw"))
        defer { engine.shutdown() }
        for attempt in 1...12 {
            let id = TrackID(UInt64(attempt))
            engine.load(EngineTrack(id: id, url: broken), at: .zero, playing: true)
            let end = recorder.waitFor(timeout: 10) { if case .failed(id, _) = $0 { true } else { false } }
            #expect(end != nil, "attempt \(attempt): no failure within 10 s")
            if end == nil { break }
        }
    }
}
