import EngineAPI
import Foundation
import TestSupport
import Testing

@testable import GStreamerEngine

@Suite("An output that fails")
struct OutputFailureTests {
    /// An error from the output (its sink cannot open: here a file sink into a directory that
    /// does not exist; for a listener, a sound server that went away) is reported as the
    /// output's, not the track's: the player then keeps the track instead of skipping it.
    @Test func aSinkThatCannotOpenFailsTheTrackAsALostOutput() throws {
        let (engine, recorder) = try fileEngine(audioSink: "filesink location=/nonexistent-spool-dir/out.raw")
        defer { engine.shutdown() }
        let fixture = try Fixtures.shared().fixture(.flac)
        engine.load(EngineTrack(id: TrackID(1), url: fixture.url), at: .zero, playing: true)
        let failed = recorder.waitFor { if case .failed = $0 { true } else { false } }
        guard case .failed(let id, let error)? = failed else {
            Issue.record("no failure: \(recorder.all)")
            return
        }
        #expect(id == TrackID(1))
        #expect(error.kind == .outputLost, "\(error)")
    }

    /// The same file through a sink that works fails for the track's own reasons only: a
    /// missing file is the track's fault, not the output's.
    @Test func aMissingTrackIsStillTheTracksFault() throws {
        let dir = try TemporaryDirectory()
        let (engine, recorder) = try fileEngine(audioSink: "fakesink")
        defer { engine.shutdown() }
        engine.load(EngineTrack(id: TrackID(1), url: dir.file("missing.flac")), at: .zero, playing: true)
        let failed = recorder.waitFor { if case .failed = $0 { true } else { false } }
        guard case .failed(_, let error)? = failed else {
            Issue.record("no failure: \(recorder.all)")
            return
        }
        #expect(error.kind != .outputLost, "\(error)")
    }
}
