import EngineAPI
import Foundation
import GStreamerEngine
import TestSupport
import Testing

@Suite("A file with a video stream", .serialized)
struct VideoStreamTests {
    /// A video podcast (MPEG-4 video and AAC in Matroska): its audio plays to the end, as long as
    /// it is, and its video is left alone. Without a video sink of the engine's own, playbin
    /// readied candidate video sinks for the video decoder, and DirectFB's crashed the process.
    @Test func itsAudioPlaysAndItsVideoIsLeftAlone() throws {
        let dir = try TemporaryDirectory(prefix: "spool-video")
        let file = dir.file("podcast.mkv")
        let made = try runCommand(
            "gst-launch-1.0",
            [
                "-q", "-e", "videotestsrc", "num-buffers=50", "!", "video/x-raw,width=64,height=48,framerate=25/1", "!",
                "avenc_mpeg4", "!", "queue", "!", "matroskamux", "name=mux", "!", "filesink", "location=\(file.path)",
                "audiotestsrc", "num-buffers=86", "samplesperbuffer=1024", "!", "audio/x-raw,rate=44100,channels=2",
                "!", "avenc_aac", "!", "queue", "!", "mux.",
            ])
        try #require(made.status == 0, "gst-launch-1.0 could not make the file: \(made.stderr)")
        let (engine, recorder) = try pcmEngine(into: dir.file("out.raw"))
        defer { engine.shutdown() }
        engine.load(EngineTrack(id: TrackID(1), url: file), at: .zero, playing: true)
        let end = recorder.waitFor(timeout: 15) {
            switch $0 {
            case .endOfTrack, .failed: true
            default: false
            }
        }
        #expect(end == .endOfTrack(TrackID(1)), "\(recorder.all)")
        // 86 buffers of 1024 frames, 16-bit stereo: ~2 s of audio (the encoder may pad a little).
        let bytes = try Data(contentsOf: dir.file("out.raw")).count
        let seconds = Double(bytes) / (44_100 * 4)
        #expect(abs(seconds - 86 * 1024 / 44_100.0) < 0.1, "\(seconds) s of audio")
    }
}
