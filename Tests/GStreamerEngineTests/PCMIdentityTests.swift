import ByteSourceAPI
import EngineAPI
import Fetcher
import Foundation
import GStreamerEngine
import MediaSource
import RangeCache
import Synchronization
import TestSupport
import Testing

/// Collects engine events and lets a test await one.
final class EventRecorder: Sendable {
    private let events = Mutex<[EngineEvent]>([])
    private let arrived = DispatchSemaphore(value: 0)

    func record(_ event: EngineEvent) {
        events.withLock { $0.append(event) }
        arrived.signal()
    }

    /// Waits until an event matching `predicate` has been recorded.
    func waitFor(timeout: Double = 30, _ predicate: (EngineEvent) -> Bool) -> EngineEvent? {
        let deadline = DispatchTime.now() + timeout
        while true {
            if let hit = events.withLock({ $0.first(where: predicate) }) { return hit }
            if arrived.wait(timeout: deadline) == .timedOut {
                return events.withLock { $0.first(where: predicate) }
            }
        }
    }

    var all: [EngineEvent] { events.withLock { $0 } }

    /// Waits until an event matching `predicate` has been recorded after the first `mark` events.
    func waitFor(after mark: Int, timeout: Double = 30, _ predicate: (EngineEvent) -> Bool) -> EngineEvent? {
        let deadline = DispatchTime.now() + timeout
        while true {
            if let hit = events.withLock({ $0.dropFirst(mark).first(where: predicate) }) { return hit }
            if arrived.wait(timeout: deadline) == .timedOut {
                return events.withLock { $0.dropFirst(mark).first(where: predicate) }
            }
        }
    }
}

/// The raw PCM format both decode paths write, so the bytes can be compared.
let pcmCaps = "audio/x-raw,format=S16LE,layout=interleaved"

/// Decodes `url` through the engine (playbin + appsrc fed by Spool's reader) into raw PCM.
func decodeThroughEngine(
    _ url: URL, source: @escaping GStreamerEngine.SourceFactory, into output: URL
) throws -> [EngineEvent] {
    let sink = "audioconvert ! \(pcmCaps) ! filesink sync=false location=\(output.path)"
    let engine = try GStreamerEngine(audioSink: sink, makeSource: source)
    defer { engine.shutdown() }
    let recorder = EventRecorder()
    engine.setEventHandler { recorder.record($0) }
    engine.load(EngineTrack(id: TrackID(1), url: url), at: .zero, playing: true)
    let end = recorder.waitFor {
        switch $0 {
        case .endOfTrack, .failed: true
        default: false
        }
    }
    #expect(end == .endOfTrack(TrackID(1)), "events: \(recorder.all)")
    return recorder.all
}

/// Decodes `file` the plain way, with GStreamer's own tools and no Spool code:
/// `gst-launch-1.0 filesrc ! decodebin ! audioconvert ! S16LE ! filesink`. At 1.0×
/// the engine (playbin, appsrc fed by Spool's reader, no rate filter) must write
/// exactly these bytes for every format: a filter that made decoders output float,
/// a lost or repeated read, or a wrong byte shows up as a difference. gst-launch is
/// given the engine's ranking changes (mpg123audiodec primary, faad above avdec_aac),
/// since two decoders of one format legitimately differ in their last bits.
func decodeWithFilesrc(_ file: URL, into output: URL, ranks: String = "mpg123audiodec:primary,faad:257") throws {
    var environment = ProcessInfo.processInfo.environment
    environment["GST_PLUGIN_FEATURE_RANK"] = ranks
    let result = try runCommand(
        "gst-launch-1.0",
        [
            "-q", "filesrc", "location=\(file.path)", "!", "decodebin", "!", "audioconvert", "!", pcmCaps, "!",
            "filesink", "location=\(output.path)",
        ], environment: environment)
    #expect(result.status == 0, "gst-launch failed: \(result.stderr)")
}

@Suite("Decoding through Spool's appsrc", .serialized)
struct PCMIdentityTests {
    static let fetcher = Fetcher(userAgent: "Spool/test")

    @Test(arguments: FixtureFormat.allCases)
    func fileReadsThroughAppsrcDecodeToTheSamePCMAsFilesrc(format: FixtureFormat) throws {
        let fixture = try Fixtures.shared().fixture(format)
        let dir = try TemporaryDirectory()
        let events = try decodeThroughEngine(
            fixture.url, source: { url throws(MediaSourceError) in FileByteSource(path: url.path) },
            into: dir.file("spool.raw"))
        try decodeWithFilesrc(fixture.url, into: dir.file("filesrc.raw"))
        let spool = try Data(contentsOf: dir.file("spool.raw"))
        let reference = try Data(contentsOf: dir.file("filesrc.raw"))
        #expect(spool.count > 100_000, "\(fixture): only \(spool.count) bytes of PCM")
        #expect(firstDifference(spool, reference) == nil, "\(fixture): \(describeDifference(spool, reference))")
        #expect(events.contains(.trackStarted(TrackID(1))))
    }

    /// Over http through the range cache, as the daemon plays: the first play
    /// downloads while it decodes, the replay reads only the cache. Both write
    /// exactly the plain decode's PCM.
    @Test(arguments: FixtureFormat.allCases)
    func httpReadsThroughTheCacheDecodeToTheSamePCMAsFilesrc(format: FixtureFormat) async throws {
        let fixtures = try Fixtures.shared()
        let fixture = fixtures.fixture(format)
        let server = try NginxServer(serving: fixtures.directory)
        let dir = try TemporaryDirectory()
        let cacheDirectory = try TemporaryDirectory(prefix: "spool-cache")
        let cache = try RangeCache(directory: cacheDirectory.url)
        defer { cache.close() }
        let fetcher = Self.fetcher
        let cached: GStreamerEngine.SourceFactory = { url throws(MediaSourceError) in
            guard let entry = try? cache.entry(for: url) else { throw .unavailable("no cache entry") }
            return HTTPByteSource(url: url, entry: entry, fetcher: fetcher)
        }
        try decodeWithFilesrc(fixture.url, into: dir.file("filesrc.raw"))
        let reference = try Data(contentsOf: dir.file("filesrc.raw"))
        #expect(reference.count > 100_000)

        let events = try decodeThroughEngine(
            server.url(for: fixture.fileName), source: cached, into: dir.file("first.raw"))
        let first = try Data(contentsOf: dir.file("first.raw"))
        #expect(
            firstDifference(first, reference) == nil, "\(fixture), first play: \(describeDifference(first, reference))")
        // Tags travel with the bytes.
        let tags = events.compactMap { if case .described(_, let tags, _) = $0 { tags } else { nil } }
            .reduce(TrackTags()) { $0.merging($1) }
        #expect(tags.title == fixture.title, "\(fixture): \(tags)")
        let downloaded = try await server.accessLog(atLeast: 1)

        _ = try decodeThroughEngine(server.url(for: fixture.fileName), source: cached, into: dir.file("replay.raw"))
        let replay = try Data(contentsOf: dir.file("replay.raw"))
        #expect(
            firstDifference(replay, reference) == nil, "\(fixture), replay: \(describeDifference(replay, reference))")
        #expect(server.accessLog().count == downloaded.count, "the replay came from the cache: \(server.accessLog())")
    }

    @Test func seekingLandsOnTheRequestedPosition() throws {
        let fixture = try Fixtures.shared().fixture(.flac)
        let engine = try GStreamerEngine(audioSink: "fakesink sync=false") { url throws(MediaSourceError) in
            FileByteSource(path: url.path)
        }
        defer { engine.shutdown() }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        engine.load(EngineTrack(id: TrackID(7), url: fixture.url), at: .seconds(1), playing: false)
        let seeked = recorder.waitFor { if case .seeked = $0 { true } else { false } }
        guard case .seeked(TrackID(7), let position)? = seeked else {
            Issue.record("no seek completed: \(recorder.all)")
            return
        }
        #expect(abs((position - .seconds(1)) / .milliseconds(1)) <= 50, "landed at \(position)")
        #expect(engine.position().map { abs(($0 - .seconds(1)) / .milliseconds(1)) <= 50 } == true)
    }

    @Test func aMissingFileFailsWithAClearError() throws {
        let engine = try GStreamerEngine(audioSink: "fakesink") { url throws(MediaSourceError) in
            FileByteSource(path: url.path)
        }
        defer { engine.shutdown() }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        engine.load(
            EngineTrack(id: TrackID(3), url: URL(fileURLWithPath: "/nonexistent/x.mp3")), at: .zero, playing: true)
        guard case .failed(TrackID(3), let error)? = recorder.waitFor({ if case .failed = $0 { true } else { false } })
        else {
            Issue.record("expected a failure: \(recorder.all)")
            return
        }
        #expect(error.message.contains("/nonexistent/x.mp3"))
    }

    @Test func aBadSinkDescriptionIsRefused() {
        #expect(throws: EngineError.self) {
            _ = try GStreamerEngine(audioSink: "nosuchsink-xyz") { _ throws(MediaSourceError) in throw .closed }
        }
    }
}
