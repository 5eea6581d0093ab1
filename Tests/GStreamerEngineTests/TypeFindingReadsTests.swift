import EngineAPI
import Foundation
import GStreamerEngine
import MediaSource
import Synchronization
import Testing
import TestSupport

/// A file source that records every read asked of it.
final class ReadRecordingSource: ByteSource {
    private let file: FileByteSource
    let reads = Mutex<[(offset: Int64, length: Int)]>([])

    init(path: String) { file = FileByteSource(path: path) }

    func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) { file.open(completion) }
    func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        reads.withLock { $0.append((offset, maxLength)) }
        return file.read(at: offset, maxLength: maxLength, wake: wake)
    }
    func cancelPendingReads() { file.cancelPendingReads() }
    func close() { file.close() }
}

@Suite("What GStreamer reads before it knows the format", .serialized)
struct TypeFindingReadsTests {
    /// In random-access mode every pull of the type finders waits for the network. Finders
    /// tried before the format's own read far: MXF's scans the first 64 KiB (also inside
    /// id3demux, which types the audio after an ID3v2 tag with no hint), MP3's probes the
    /// middle, APE's and ID3v1's the end. With the track's extension on the appsrc URI the
    /// format's finder goes first, and MXF's comes last: what remains is the start, the
    /// ID3v1/APE probes of the last bytes (id3demux reads the end for its tags anyway).
    @Test(arguments: [FixtureFormat.flac, .oggVorbis, .oggOpus, .mp3CBR, .mp3VBR, .m4aFaststart, .wav])
    func typeFindingReadsOnlyTheStartAndTheID3v1Tail(format: FixtureFormat) throws {
        let fixture = try Fixtures.shared().fixture(format)
        let size = Int64(try Data(contentsOf: fixture.url).count)
        let made = Mutex<ReadRecordingSource?>(nil)
        let engine = try GStreamerEngine(audioSink: "fakesink sync=false") { url throws(MediaSourceError) in
            let source = ReadRecordingSource(path: url.path)
            made.withLock { $0 = source }
            return source
        }
        defer { engine.shutdown() }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        engine.load(EngineTrack(id: TrackID(1), url: fixture.url), at: .zero, playing: true)
        #expect(recorder.waitFor { if case .duration = $0 { true } else { false } } != nil, "\(recorder.all)")
        let reads = try #require(made.withLock { $0 }).reads.withLock { $0 }
        // The type finders pull 4 KiB at a time (less only at the end of the file); the first
        // other pull is the demuxer's or parser's.
        let typeFinding = reads.prefix { $0.length == 4096 || ($0.length < 4096 && $0.offset + Int64($0.length) == size) }
        let far = typeFinding.filter { $0.offset >= 4096 && $0.offset < size - 128 }
        #expect(far.isEmpty, "type finding read far from the start: \(typeFinding.map { "\($0.offset)+\($0.length)" })")
    }
}
