import ByteSourceAPI
import EngineAPI
import Foundation
import GStreamerEngine
import MediaSource
import Synchronization
import TestSupport
import Testing

/// A file read as if only its start and its second half had been downloaded yet: reads
/// elsewhere stay pending (the download has not got there), and ``holds(_:)`` says so, as
/// the http source does.
final class PartlyDownloadedSource: ByteSource {
    private let file: FileByteSource
    private let head: Int64
    private let tailStart: Int64
    let pendingReads = Mutex<[Int64]>([])

    init(path: String, head: Int64, tailStart: Int64) {
        file = FileByteSource(path: path)
        self.head = head
        self.tailStart = tailStart
    }

    func holds(_ range: Range<Int64>) -> Bool {
        range.upperBound <= head || range.lowerBound >= tailStart
    }

    func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        file.open(completion)
    }
    func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        let end = offset + Int64(maxLength)
        if end <= head || offset >= tailStart { return file.read(at: offset, maxLength: maxLength, wake: wake) }
        pendingReads.withLock { $0.append(offset) }
        return .pending
    }
    func cancelPendingReads() {}
    func close() { file.close() }
}

/// `seconds` of a 128 kbit/s CBR MP3 tone with Xing and ID3v2 headers, as the fixtures are made.
func longMP3(seconds: Int, in dir: TemporaryDirectory) throws -> URL {
    let file = dir.file("long-\(seconds).mp3")
    let made = try runCommand(
        "gst-launch-1.0",
        [
            "-q", "audiotestsrc", "wave=sine", "num-buffers=\(seconds * 44_100 / 1024)", "samplesperbuffer=1024", "!",
            "audio/x-raw,rate=44100,channels=2", "!", "audioconvert", "!", "lamemp3enc", "target=bitrate",
            "bitrate=128", "cbr=true", "!", "xingmux", "!", "id3v2mux", "!", "filesink", "location=\(file.path)",
        ])
    guard made.status == 0 else { throw RigError("could not make the MP3: \(made.stderr)") }
    return file
}

/// An engine that plays `source` as if it came over http, into a fake sink (in real time with
/// `sync`), and the recorder of its events.
func httpEngine(over source: ByteSource, sync: Bool) throws -> (GStreamerEngine, EventRecorder) {
    let engine = try GStreamerEngine(audioSink: "fakesink sync=\(sync)") { _ throws(MediaSourceError) in source }
    let recorder = EventRecorder()
    engine.setEventHandler { recorder.record($0) }
    return (engine, recorder)
}

@Suite("Playing and seeking a track still downloading", .serialized)
struct NetworkSeekTests {
    /// In random-access mode id3demux pulls the last 128 bytes (ID3v1) and mpegaudioparse
    /// pulls 64 KiB blocks before the first sample: an http MP3 waited for 64 KiB (1.4 s at
    /// 48 kB/s), a short one for its whole download. Pushed, it starts from what is there.
    @Test func anHTTPMP3StartsFromItsFirstKilobytes() throws {
        let dir = try TemporaryDirectory()
        let file = try longMP3(seconds: 60, in: dir)
        let size = Int64(try Data(contentsOf: file).count)
        let source = PartlyDownloadedSource(path: file.path, head: 32_768, tailStart: size)
        let (engine, recorder) = try httpEngine(over: source, sync: false)
        defer { engine.shutdown() }
        engine.load(
            EngineTrack(id: TrackID(1), url: URL(string: "http://spool.invalid/long.mp3")!), at: .zero, playing: false)
        #expect(
            recorder.waitFor(timeout: 5) { $0 == .stateChanged(.paused) } != nil,
            "not ready with the first 32 KiB; reads left waiting at \(source.pendingReads.withLock { $0 })")
    }

    /// An accurate seek made baseparse (mpegaudioparse) parse every frame from the last one it
    /// had indexed up to the target: a seek to 80 % of an http MP3 read the file from its start
    /// and landed only when the download reached 80 %. The reader must be asked for the bytes
    /// at the target at once.
    @Test func aFarSeekInAnHTTPTrackReadsAtTheTargetNotEverythingBeforeIt() throws {
        let dir = try TemporaryDirectory()
        let file = try longMP3(seconds: 60, in: dir)
        let size = Int64(try Data(contentsOf: file).count)
        let source = PartlyDownloadedSource(path: file.path, head: 200_000, tailStart: size / 2)
        let (engine, recorder) = try httpEngine(over: source, sync: false)
        defer { engine.shutdown() }
        engine.load(
            EngineTrack(id: TrackID(1), url: URL(string: "http://spool.invalid/long.mp3")!), at: .zero, playing: false)
        #expect(
            recorder.waitFor { if case .described(_, _, _?) = $0 { true } else { false } } != nil, "\(recorder.all)")
        #expect(recorder.waitFor { $0 == .stateChanged(.paused) } != nil, "\(recorder.all)")

        engine.seek(to: .seconds(48))
        let seeked = recorder.waitFor(timeout: 10) { if case .seeked = $0 { true } else { false } }
        guard case .seeked(TrackID(1), let position)? = seeked else {
            Issue.record("no seek landed; reads left waiting at \(source.pendingReads.withLock { $0 })")
            return
        }
        // A byte seek: the parser times it from the byte, within a frame of the target.
        #expect(abs((position - .seconds(48)) / .milliseconds(1)) <= 50, "landed at \(position)")
    }

    /// A rate change is a seek to the play head. After a far seek (through the seek table) an
    /// accurate one made baseparse parse up from its index near the start, through bytes not
    /// downloaded: playback stopped until the download got there.
    @Test func aRateChangeAfterAFarSeekInAnHTTPTrackGoesOnAtOnce() async throws {
        let dir = try TemporaryDirectory()
        let file = try longMP3(seconds: 60, in: dir)
        let size = Int64(try Data(contentsOf: file).count)
        let source = PartlyDownloadedSource(path: file.path, head: 200_000, tailStart: size / 2)
        let (engine, recorder) = try httpEngine(over: source, sync: true)
        defer { engine.shutdown() }
        engine.setRate(1.25)  // scaletempo from the start: the change below is a plain seek
        engine.load(
            EngineTrack(id: TrackID(1), url: URL(string: "http://spool.invalid/long.mp3")!), at: .zero, playing: true)
        #expect(recorder.waitFor { $0 == .stateChanged(.playing) } != nil, "\(recorder.all)")
        engine.seek(to: .seconds(48))
        #expect(
            recorder.waitFor(timeout: 10) { if case .seeked = $0 { true } else { false } } != nil, "\(recorder.all)")
        #expect(await waitForPosition(engine, atLeast: .milliseconds(48_300), timeout: .seconds(5)))
        engine.setRate(1.5)
        #expect(
            await waitForPosition(engine, atLeast: .milliseconds(49_500), timeout: .seconds(5)),
            "stuck at \(String(describing: engine.position())); reads waiting at \(source.pendingReads.withLock { $0 })"
        )
    }

    /// baseparse answers a seek up to 20 s past what it parsed by parsing every frame up to the
    /// target: a seek from the start to 15 s of an http MP3 read the file sequentially and landed
    /// only when the download got there. When those bytes are not here, the seek goes to the
    /// target's byte at once, and lands there.
    @Test func aNearSeekOverBytesNotHereReadsAtTheTarget() throws {
        let dir = try TemporaryDirectory()
        let file = try longMP3(seconds: 30, in: dir)
        let size = Int64(try Data(contentsOf: file).count)
        let source = PartlyDownloadedSource(path: file.path, head: 32_768, tailStart: size / 3)
        let (engine, recorder) = try httpEngine(over: source, sync: false)
        defer { engine.shutdown() }
        engine.load(
            EngineTrack(id: TrackID(1), url: URL(string: "http://spool.invalid/long.mp3")!), at: .zero, playing: false)
        #expect(recorder.waitFor { $0 == .stateChanged(.paused) } != nil, "\(recorder.all)")
        engine.seek(to: .seconds(15))
        let seeked = recorder.waitFor(timeout: 5) { if case .seeked = $0 { true } else { false } }
        guard case .seeked(_, let position) = seeked else {
            Issue.record("the seek did not land; reads left waiting at \(source.pendingReads.withLock { $0 })")
            return
        }
        // The parser times the segment from the byte its seek table gave: within a frame (26 ms).
        let error = position > .seconds(15) ? position - .seconds(15) : .seconds(15) - position
        #expect(error < .milliseconds(30), "landed at \(position)")
    }

    /// A seek in a track whose bytes are all here lands on the sample, as in a local file. Sent
    /// as a plain time seek, mpegaudioparse placed it with the Xing table, whose 256 steps put
    /// a 3-minute MP3's seek up to half a second early or late. The track: 120 s of silence,
    /// then a tone; the seek goes a quarter of a second before the tone.
    @Test func aSeekInACompleteHTTPTrackLandsOnTheSample() throws {
        let file = try NetworkMedia.silenceThenTone(.mp3CBR, silent: 120, sounding: 2)
        let dir = try TemporaryDirectory()
        let output = dir.file("out.raw")
        let engine = try GStreamerEngine(
            audioSink: "audioconvert ! \(pcmCaps) ! filesink sync=false location=\(output.path)"
        ) { _ throws(MediaSourceError) in FileByteSource(path: file.path) }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        defer { engine.shutdown() }
        engine.load(
            EngineTrack(id: TrackID(1), url: URL(string: "http://spool.invalid/marked.mp3")!), at: .zero, playing: false
        )
        #expect(recorder.waitFor { $0 == .stateChanged(.paused) } != nil, "\(recorder.all)")
        engine.seek(to: .milliseconds(119_750))
        #expect(recorder.waitFor { if case .seeked = $0 { true } else { false } } != nil, "\(recorder.all)")
        engine.play()
        #expect(recorder.waitFor(isEnd) == .endOfTrack(TrackID(1)), "\(recorder.all)")

        // S16LE stereo at 44.1 kHz: the silence before the first sample of the tone is where it landed.
        let pcm = try Data(contentsOf: output)
        let firstSound = pcm.withUnsafeBytes { raw -> Int? in
            let samples = raw.bindMemory(to: Int16.self)
            return samples.firstIndex { abs(Int($0)) > 64 }
        }
        let silence = Double(try #require(firstSound) / 2) / 44_100
        #expect(abs(silence - 0.25) <= 0.03, "landed \(String(format: "%.3f", 0.25 - silence)) s from the target")
    }
}
