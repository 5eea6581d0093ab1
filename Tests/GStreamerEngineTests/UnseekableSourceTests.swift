import ByteSourceAPI
import EngineAPI
import Foundation
import GStreamerEngine
import TestSupport
import Testing

/// A source that can only be played from its start (an HLS presentation, for now): a load at a
/// place (a resume) starts it at 0, tells the player so, and says it cannot seek.
@Suite("A source that cannot seek")
struct UnseekableSourceTests {
    @Test func aLoadAtAPlaceStartsAtTheBeginningAndSaysSo() throws {
        let output = try TemporaryDirectory()
        let pcm = output.file("out.raw")
        let engine = try GStreamerEngine(
            audioSink: "audioconvert ! \(pcmCaps) ! filesink sync=false location=\(pcm.path)"
        ) { url throws(MediaSourceError) in MemoryByteSource(file: url, seekable: false) }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        defer { engine.shutdown() }
        let fixture = try Fixtures.shared().fixture(.flac)
        engine.load(EngineTrack(id: TrackID(1), url: fixture.url), at: .seconds(2), playing: true)
        #expect(recorder.waitFor { $0 == .seekable(TrackID(1), false) } != nil, "\(recorder.all)")
        #expect(recorder.waitFor { $0 == .seeked(TrackID(1), position: .zero) } != nil, "\(recorder.all)")
        #expect(recorder.waitFor { isEnd($0) } != nil, "\(recorder.all)")
        // All of it was decoded, from its first sample: not the 2 s asked for skipped.
        let decoded = Double((try Data(contentsOf: pcm)).count) / pcmBytesPerMillisecond / 1000
        let whole = fixture.duration
        #expect(abs(decoded - whole) < 0.1, "decoded \(decoded) s of \(whole) s")
    }
}
