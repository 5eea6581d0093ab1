import ByteSourceAPI
import EngineAPI
import Foundation
import GStreamerEngine
import MediaSource
import TestSupport
import Testing

@Suite("oggdemux answered a few bytes at a time", .serialized)
struct OggShortAnswersTests {
    /// Once oggdemux is in place every read of an Ogg file is answered with what has arrived,
    /// its search for the last page and a seek's bisection included: its page parser finds
    /// pages across any split. Answered 1–1500 bytes at a time, the file reports its whole
    /// duration (from the last page), lands a seek to the middle there, and plays to its end.
    @Test(arguments: [FixtureFormat.oggVorbis, .oggOpus])
    func anOggFileAnsweredAFewBytesAtATimeSeeksAndEnds(format: FixtureFormat) throws {
        let fixture = try Fixtures.shared().fixture(format)
        let size = Int64(try Data(contentsOf: fixture.url).count)
        let seed = UInt64.random(in: 0...UInt64(UInt32.max))
        let engine = try GStreamerEngine(audioSink: "fakesink sync=false") { url throws(MediaSourceError) in
            ScriptedFileSource.trickling(path: url.path, size: size, seed: seed)
        }
        defer { engine.shutdown() }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        let id = TrackID(1)
        engine.load(EngineTrack(id: id, url: fixture.url), at: .zero, playing: false)
        let prerolled = recorder.waitFor(timeout: 10) { $0 == .stateChanged(.paused) }
        try #require(prerolled != nil, "seed \(seed): \(recorder.all)")
        let duration = recorder.waitFor(timeout: 5) { if case .described(id, _, _?) = $0 { true } else { false } }
        guard case .described(_, _, let reported?) = duration else {
            Issue.record("seed \(seed): no duration: \(recorder.all)")
            return
        }
        #expect(
            abs(reported / .seconds(1) - fixture.duration) < 0.1, "seed \(seed): \(reported) of \(fixture.duration) s")
        let target = Duration.seconds(fixture.duration / 2)
        let mark = recorder.all.count
        engine.seek(to: target)
        let seeked = recorder.waitFor(after: mark, timeout: 10) { if case .seeked(id, _) = $0 { true } else { false } }
        guard case .seeked(_, let landed) = seeked else {
            Issue.record("seed \(seed): the seek never landed: \(recorder.all)")
            return
        }
        #expect(abs((landed - target) / .seconds(1)) < 0.1, "seed \(seed): landed at \(landed), asked \(target)")
        engine.play()
        let ended = recorder.waitFor(after: mark, timeout: 20) { $0 == .endOfTrack(id) }
        #expect(ended != nil, "seed \(seed): \(recorder.all)")
    }
}
