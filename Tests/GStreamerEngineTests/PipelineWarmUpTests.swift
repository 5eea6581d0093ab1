import EngineAPI
import Foundation
import MediaSource
import TestSupport
import Testing

@testable import GStreamerEngine

@Suite("The pipeline's warm-up at start")
struct PipelineWarmUpTests {
    /// The warm-up prerolls silence through playbin when the engine starts: it tells the player
    /// nothing, and the first track after it is started once and plays into the real output,
    /// not into the warm-up's own sink.
    @Test func theWarmUpEmitsNothingAndTheFirstTrackPlaysIntoTheOutput() throws {
        let dir = try TemporaryDirectory()
        let (engine, recorder) = try pcmEngine(into: dir.file("out.raw"))
        defer { engine.shutdown() }
        engine.control.sync {}  // the warm-up was queued first on the control queue
        #expect(recorder.all.isEmpty, "the warm-up emitted \(recorder.all)")

        let fixture = try Fixtures.shared().fixture(.mp3CBR)
        engine.load(EngineTrack(id: TrackID(1), url: fixture.url), at: .zero, playing: true)
        #expect(recorder.waitFor(isEnd) == .endOfTrack(TrackID(1)), "\(recorder.all)")
        #expect(recorder.all.filter { $0 == .trackStarted(TrackID(1)) }.count == 1, "\(recorder.all)")
        let pcm = try Data(contentsOf: dir.file("out.raw"))
        #expect(pcm.count > 100_000, "only \(pcm.count) bytes reached the output")
    }
}
