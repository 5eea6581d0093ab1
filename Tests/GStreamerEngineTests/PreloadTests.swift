import ByteSourceAPI
import EngineAPI
import Fetcher
import Foundation
import GStreamerEngine
import MediaSource
import RangeCache
import TestSupport
import Testing

@Suite("Preloading the next track over a slow network", .serialized)
struct PreloadTests {
    @Test func theNextTrackIsFetchedBeforeTheCurrentEndsAndFollowsWithoutAGap() throws {
        let fixtures = try Fixtures.shared()
        let first = fixtures.fixture(.flac)
        let second = try #require(fixtures.withCover.first { $0.format == .flac })
        let origin = try FaultOrigin()
        let faults = OriginFaults(bytesPerSecond: 400_000)  // a slow link: seconds per track
        origin.serve(OriginResource(try Data(contentsOf: first.url)), at: "/1.flac", faults: faults)
        origin.serve(OriginResource(try Data(contentsOf: second.url)), at: "/2.flac", faults: faults)
        let cacheDirectory = try TemporaryDirectory(prefix: "spool-cache")
        let cache = try RangeCache(directory: cacheDirectory.url)
        defer { cache.close() }
        let fetcher = Fetcher(userAgent: "Spool/test")
        let dir = try TemporaryDirectory()
        // In real time, as a listener hears it: decoding as fast as the bytes arrive, a pushed track
        // ended with its download, before the next track's source (which yields to it) had opened.
        let sink = "audioconvert ! \(pcmCaps) ! filesink sync=true location=\(dir.file("joined.raw").path)"
        let engine = try GStreamerEngine(audioSink: sink) { url throws(MediaSourceError) in
            guard let entry = try? cache.entry(for: url) else { throw .unavailable("no cache entry") }
            return HTTPByteSource(url: url, entry: entry, fetcher: fetcher)
        }
        defer { engine.shutdown() }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        engine.load(EngineTrack(id: TrackID(1), url: origin.url(for: "/1.flac")), at: .zero, playing: true)
        engine.setNext(EngineTrack(id: TrackID(2), url: origin.url(for: "/2.flac")))

        // The hand-over needs the next track's source open: it was fetched before the first ended.
        #expect(recorder.waitFor(timeout: 60) { $0 == .nextQueued(TrackID(2)) } != nil, "\(recorder.all)")
        #expect(recorder.waitFor(timeout: 60, isEnd) == .endOfTrack(TrackID(2)), "\(recorder.all)")
        #expect(!recorder.all.contains(.endOfTrack(TrackID(1))), "the first track handed over instead of ending")

        try decodeWithFilesrc(first.url, into: dir.file("a.raw"))
        try decodeWithFilesrc(second.url, into: dir.file("b.raw"))
        let joined = try Data(contentsOf: dir.file("joined.raw"))
        let a = try Data(contentsOf: dir.file("a.raw"))
        let b = try Data(contentsOf: dir.file("b.raw"))
        #expect(firstDifference(joined, a + b) == nil, "the output is exactly both tracks, back to back")
        // Each byte crossed the network once.
        let sent = origin.requests().reduce(0) { $0 + $1.bodyBytesSent }
        let sizes = try Data(contentsOf: first.url).count + Data(contentsOf: second.url).count
        #expect(
            sent == sizes,
            "sent \(sent) for \(sizes): \(origin.requests().map { "\($0.path) \($0.range ?? "-") \($0.bodyBytesSent)" })"
        )
    }

    @Test func aSeekIntoBytesNotYetDownloadedReportsBufferingUntilTheyArrive() throws {
        // 20 s of WAV over a slow origin that answers every request after 0.6 s.
        let dir = try TemporaryDirectory()
        let made = try runCommand(
            "gst-launch-1.0",
            [
                "-q", "audiotestsrc", "num-buffers=\(20 * 44_100 / 1024)", "!", "audioconvert", "!", "wavenc", "!",
                "filesink", "location=\(dir.file("long.wav").path)",
            ])
        #expect(made.status == 0)
        let origin = try FaultOrigin()
        origin.serve(
            OriginResource(try Data(contentsOf: dir.file("long.wav"))), at: "/long.wav",
            faults: OriginFaults(firstByteLatency: 0.6, bytesPerSecond: 400_000))
        let cacheDirectory = try TemporaryDirectory(prefix: "spool-cache")
        let cache = try RangeCache(directory: cacheDirectory.url)
        defer { cache.close() }
        let fetcher = Fetcher(userAgent: "Spool/test")
        let engine = try GStreamerEngine(audioSink: "fakesink sync=true") { url throws(MediaSourceError) in
            guard let entry = try? cache.entry(for: url) else { throw .unavailable("no cache entry") }
            return HTTPByteSource(url: url, entry: entry, fetcher: fetcher)
        }
        defer { engine.shutdown() }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        engine.load(EngineTrack(id: TrackID(1), url: origin.url(for: "/long.wav")), at: .zero, playing: true)
        #expect(recorder.waitFor { $0 == .stateChanged(.playing) } != nil)
        engine.seek(to: .seconds(15))
        #expect(recorder.waitFor { $0 == .buffering(TrackID(1), true) } != nil, "\(recorder.all)")
        #expect(recorder.waitFor { if case .seeked(TrackID(1), _) = $0 { true } else { false } } != nil)
        #expect(recorder.waitFor { $0 == .buffering(TrackID(1), false) } != nil, "\(recorder.all)")
        let events = recorder.all
        #expect(
            events.firstIndex(of: .buffering(TrackID(1), true))! < events.firstIndex(of: .buffering(TrackID(1), false))!
        )
    }
}
