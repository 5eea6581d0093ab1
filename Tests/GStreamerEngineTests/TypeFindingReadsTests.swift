import ByteSourceAPI
import EngineAPI
import Foundation
import GStreamerEngine
import MediaSource
import Synchronization
import TestSupport
import Testing

/// A file source that records every read asked of it. `remote`: it stands for a download
/// with nothing cached yet (it holds no byte before it is read).
final class ReadRecordingSource: ByteSource {
    private let file: FileByteSource
    private let remote: Bool
    let reads = Mutex<[(offset: Int64, length: Int)]>([])

    init(path: String, remote: Bool = false) {
        file = FileByteSource(path: path)
        self.remote = remote
    }

    func holds(_ range: Range<Int64>) -> Bool { !remote }

    func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        file.open(completion)
    }
    func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        reads.withLock { $0.append((offset, maxLength)) }
        return file.read(at: offset, maxLength: maxLength, wake: wake)
    }
    func cancelPendingReads() { file.cancelPendingReads() }
    func close() { file.close() }
}

/// The reads the engine asks of the file at `file`, played as a track at `url` (the file's own
/// by default; an http URL makes the engine treat it as a network track), until its duration
/// is known.
func readsUntilTheDuration(of file: URL, playedAs url: URL? = nil) throws -> [(offset: Int64, length: Int)] {
    let made = Mutex<ReadRecordingSource?>(nil)
    let engine = try GStreamerEngine(audioSink: "fakesink sync=false") { _ throws(MediaSourceError) in
        let source = ReadRecordingSource(path: file.path, remote: url.map { !$0.isFileURL } ?? false)
        made.withLock { $0 = source }
        return source
    }
    defer { engine.shutdown() }
    let recorder = EventRecorder()
    engine.setEventHandler { recorder.record($0) }
    engine.load(EngineTrack(id: TrackID(1), url: url ?? file), at: .zero, playing: true)
    #expect(recorder.waitFor { if case .described(_, _, _?) = $0 { true } else { false } } != nil, "\(recorder.all)")
    return try #require(made.withLock { $0 }).reads.withLock { $0 }
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
        let reads = try readsUntilTheDuration(of: fixture.url)
        // The type finders pull 4 KiB at a time (less only at the end of the file); the first
        // other pull is the demuxer's or parser's.
        let typeFinding = reads.prefix {
            $0.length == 4096 || ($0.length < 4096 && $0.offset + Int64($0.length) == size)
        }
        let far = typeFinding.filter { $0.offset >= 4096 && $0.offset < size - 128 }
        #expect(far.isEmpty, "type finding read far from the start: \(typeFinding.map { "\($0.offset)+\($0.length)" })")
    }
}

@Suite("How little GStreamer waits for before it starts", .serialized)
struct FirstBytesTests {
    /// The type-find helper pulls 4 KiB for a peek of a few bytes; waiting for all of them held
    /// a slow M4A with its `moov` last before its end was even asked for. With the first 1.5 KB
    /// and the `moov` here (and nothing between), it starts.
    @Test func anM4AWithItsMoovLastStartsFromItsHeaderAndItsMoov() throws {
        let fixture = try Fixtures.shared().fixture(.m4aMoovAtEnd)
        let data = try Data(contentsOf: fixture.url)
        let moov = try #require(data.range(of: Data("moov".utf8))).lowerBound - 4
        let size = Int64(data.count)
        try expectStart(of: fixture.url, size: size, arrived: [0..<1500, Int64(moov)..<size])
    }

    /// Plays `url` from a source of which only `arrived` (of `size` bytes) has come, and expects
    /// it to start.
    func expectStart(
        of url: URL, size: Int64, arrived: [Range<Int64>], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let engine = try GStreamerEngine(audioSink: "fakesink sync=false") { url throws(MediaSourceError) in
            ScriptedFileSource.partlyArrived(path: url.path, size: size, arrived: arrived)
        }
        defer { engine.shutdown() }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        engine.load(EngineTrack(id: TrackID(1), url: url), at: .zero, playing: true)
        let started = recorder.waitFor(timeout: 10) { if case .stateChanged(.playing) = $0 { true } else { false } }
        #expect(started != nil, "\(recorder.all)", sourceLocation: sourceLocation)
    }

    /// The ID3 type finders also claim the `ogg` extension and rank above Ogg's: hinted `ogg`,
    /// an Opus or Vorbis file was first probed for an ID3v1 tag in its last 128 bytes.
    @Test(arguments: [FixtureFormat.oggVorbis, .oggOpus])
    func anOggFileIsNotProbedForATagAtItsEnd(format: FixtureFormat) throws {
        let fixture = try Fixtures.shared().fixture(format)
        let size = Int64(try Data(contentsOf: fixture.url).count)
        let reads = try readsUntilTheDuration(of: fixture.url)
        #expect(!reads.contains { $0.offset == size - 128 }, "\(reads.map { "\($0.offset)+\($0.length)" })")
    }
}

extension FirstBytesTests {
    /// oggdemux reads an Ogg file's last 8500 bytes for its duration before the first audio;
    /// over the network that request is made at the open, beside the start's.
    @Test(arguments: [FixtureFormat.oggVorbis, .oggOpus])
    func anOggFileOverTheNetworkAsksForItsEndAtOnce(format: FixtureFormat) throws {
        let fixture = try Fixtures.shared().fixture(format)
        let size = Int64(try Data(contentsOf: fixture.url).count)
        let url = URL(string: "http://127.0.0.1:9/\(fixture.url.lastPathComponent)")!
        let reads = try readsUntilTheDuration(of: fixture.url, playedAs: url)
        #expect(
            reads.first.map { $0.offset == max(0, size - 8500) } == true, "\(reads.map { "\($0.offset)+\($0.length)" })"
        )
    }
}

extension FirstBytesTests {
    /// oggdemux reads 8500 bytes at a time; answered with what has arrived on its reads from
    /// the first byte, it starts once the header pages, the first audio page and the last
    /// 8500 bytes are here, not after two whole chunks from the start. (The Vorbis fixture is
    /// too short to leave a gap between the two.)
    @Test func anOggFileStartsFromItsFirstAudioPageAndItsEnd() throws {
        let fixture = try Fixtures.shared().fixture(.oggOpus)
        let data = try Data(contentsOf: fixture.url)
        let size = Int64(data.count)
        let firstAudio = try #require(Self.endOfFirstAudioPage(data))
        try #require(
            firstAudio < 8500 && firstAudio < size - 8500,
            "first audio page ends at \(firstAudio) of \(size): nothing to prove")
        try expectStart(of: fixture.url, size: size, arrived: [0..<firstAudio, (size - 8500)..<size])
    }

    /// The end of the first Ogg page with a granule position past 0: the first that holds audio.
    static func endOfFirstAudioPage(_ data: Data) -> Int64? {
        let bytes = [UInt8](data)
        var offset = 0
        while offset + 27 <= bytes.count, bytes[offset..<offset + 4].elementsEqual("OggS".utf8) {
            let segments = Int(bytes[offset + 26])
            guard offset + 27 + segments <= bytes.count else { return nil }
            let body = bytes[(offset + 27)..<(offset + 27 + segments)].reduce(0) { $0 + Int($1) }
            let granule = bytes[(offset + 6)..<(offset + 14)].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            offset += 27 + segments + body
            if granule != 0, granule != .max { return Int64(offset) }
        }
        return nil
    }
}
