import ByteSourceAPI
import EngineAPI
import Foundation
import GStreamerEngine
import HLSSource
import MediaSource
import TestSupport
import Testing

/// An HLS presentation of local segment files as the engine reads it: its source restarts at
/// the segment a seek or a start position needs.
private func hlsSource(_ url: URL) throws(MediaSourceError) -> any ByteSource {
    HLSByteSource(
        url: url,
        fetchPlaylist: { address, _ throws(MediaSourceError) in
            guard let data = try? Data(contentsOf: address) else { throw .gone(address.path) }
            return data
        },
        makeSource: { address, _ throws(MediaSourceError) in FileByteSource(path: address.path) })
}

/// An engine playing to a clocked fake sink (in real time) whose HLS tracks are read from local
/// files, and a recorder of its events.
private func playingEngine() throws -> (GStreamerEngine, EventRecorder) {
    let engine = try GStreamerEngine(audioSink: "fakesink sync=true") { url throws(MediaSourceError) in
        try hlsSource(url)
    }
    let recorder = EventRecorder()
    engine.setEventHandler { recorder.record($0) }
    return (engine, recorder)
}

/// Decodes `url` through the engine from `position` to its end into raw PCM (no clock: as fast
/// as it decodes), and answers the events. The wait for the end blocks a thread of its own,
/// not one of the test executor's few: an HLS source opens in a task, which a pool whose
/// threads all wait could not run.
func decodeAwaitingEnd(
    _ url: URL, from position: Duration = .zero, source: @escaping GStreamerEngine.SourceFactory, into output: URL
) async throws -> [EngineEvent] {
    let sink = "audioconvert ! \(pcmCaps) ! filesink sync=false location=\(output.path)"
    let engine = try GStreamerEngine(audioSink: sink, makeSource: source)
    defer { engine.shutdown() }
    let recorder = EventRecorder()
    engine.setEventHandler { recorder.record($0) }
    engine.load(EngineTrack(id: TrackID(1), url: url), at: position, playing: true)
    let end = await onOwnThread {
        recorder.waitFor {
            switch $0 {
            case .endOfTrack, .failed: true
            default: false
            }
        }
    }
    #expect(end == .endOfTrack(TrackID(1)), "events: \(recorder.all)")
    return recorder.all
}

/// Polls `engine`'s position until `predicate` holds (or `timeout` passes): a track's position
/// has no event of its own.
private func position(
    of engine: GStreamerEngine, timeout: Duration = .seconds(10), where predicate: (Duration) -> Bool
) async throws -> Duration? {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if let now = engine.position(), predicate(now) { return now }
        try await Task.sleep(for: .milliseconds(20))
    }
    return engine.position()
}

@Suite("Seeking in an HLS presentation", .serialized)
struct HLSSeekTests {
    /// 44.1 kHz stereo S16: bytes per second of the decoded tone.
    static let bytesPerSecond = 44_100 * 4

    /// Started mid-way (as a resume or a seek does), in each segment format, the stream restarts
    /// at the segment holding the target (after its initialization section) and plays from the
    /// target itself: the PCM is the whole presentation's from
    /// that sample on, not from the segment's start, and the position is the presentation's.
    @Test(arguments: ["ts", "packed", "fmp4"])
    func aStartMidwayPlaysExactlyFromTheTargetSample(format: String) async throws {
        let folder = try TemporaryDirectory(prefix: "spool-hls-seek")
        let playlist =
            switch format {
            case "packed": try await HLSFormats.makePackedAudio(in: folder.url, seconds: 20).playlist
            case "fmp4": try await HLSFormats.makeFragmentedMP4(in: folder.url, seconds: 20).playlist
            default: try await HLSMedia.make(in: folder.url, seconds: 20).playlist
            }
        let whole = folder.file("whole.raw")
        _ = try await decodeAwaitingEnd(playlist, source: hlsSource, into: whole)
        let reference = try Data(contentsOf: whole)
        #expect(reference.count > 19 * Self.bytesPerSecond)

        // 10.5 s: 2.5 s into the third 4-s segment, away from its start.
        let target = Duration.milliseconds(10_500)
        let partial = folder.file("partial.raw")
        let events = try await decodeAwaitingEnd(playlist, from: target, source: hlsSource, into: partial)
        let played = try Data(contentsOf: partial)
        // Where the played audio sits in the whole: the segment's place comes from the
        // playlist's durations (EXTINF), which may be a sample off the stream's own timestamps.
        let expectedStart = 10_500 * Self.bytesPerSecond / 1000
        let probe = played.dropFirst(Self.bytesPerSecond / 2).prefix(4096)
        let window = reference.dropFirst(expectedStart - Self.bytesPerSecond / 100 + Self.bytesPerSecond / 2)
            .prefix(Self.bytesPerSecond / 50 + probe.count)
        let found = try #require(window.firstRange(of: probe), "the played audio is not within 10 ms of the target")
        let start = found.lowerBound - Self.bytesPerSecond / 2
        #expect(abs(start - expectedStart) <= 2 * 4, "landed \((start - expectedStart) / 4) samples from the target")
        // It is the same audio, sample for sample, to the end: the decoder's cold start at the
        // segment lies before the target, clipped with the rest.
        let compared = played
        let same = reference.dropFirst(start).prefix(compared.count)
        #expect(compared.count - same.count <= 4, "\(compared.count - same.count) bytes more than the whole has")
        #expect(firstDifference(Data(compared.prefix(same.count)), Data(same)) == nil)
        #expect(events.contains(.seekable(TrackID(1), true)))
    }
}

@Suite("Seeking while an HLS presentation plays", .serialized)
struct HLSPlayingSeekTests {
    /// A listener's seeks, forward into segments never read and back into one already read,
    /// each land at the target (reported as Seeked there) and the position goes on from it.
    @Test func seeksForwardAndBackLandAtTheTargetAndPlayOn() async throws {
        let folder = try TemporaryDirectory(prefix: "spool-hls-seek")
        let (playlist, _) = try await HLSMedia.make(in: folder.url, seconds: 20)
        let (engine, recorder) = try playingEngine()
        defer { engine.shutdown() }
        let id = TrackID(1)
        engine.load(EngineTrack(id: id, url: playlist), at: .zero, playing: true)
        let started = try await position(of: engine) { $0 >= .milliseconds(300) }
        #expect(started.map { $0 >= .milliseconds(300) } == true, "never played: \(recorder.all)")

        for target in [Duration.milliseconds(15_200), .milliseconds(2_000)] {
            let mark = recorder.all.count
            let asked = ContinuousClock.now
            engine.seek(to: target)
            let seeked = await onOwnThread {
                recorder.waitFor(after: mark, timeout: 10) { if case .seeked(id, _) = $0 { true } else { false } }
            }
            guard case .seeked(_, let landed) = seeked else {
                Issue.record("no Seeked for \(target): \(recorder.all.dropFirst(mark))")
                continue
            }
            #expect(abs((landed - target) / .milliseconds(1)) < 50, "Seeked at \(landed) for \(target)")
            // It plays on from the target: no further than the time since the seek was asked (a
            // loaded machine may take its time to read it).
            let later = try await position(of: engine) { $0 >= target + .milliseconds(400) }
            let bound = target + (ContinuousClock.now - asked) + .milliseconds(100)
            #expect(
                later.map { $0 >= target + .milliseconds(400) && $0 < bound } == true,
                "after the seek to \(target): \(String(describing: later)), at most \(bound)")
        }
        #expect(!recorder.all.contains { if case .failed = $0 { true } else { false } })
    }

    /// A seek into the last second restarts at the last segment and plays that second: the
    /// track then ends, as it would have, with no failure.
    @Test func aSeekIntoTheLastSecondPlaysItAndEnds() async throws {
        let folder = try TemporaryDirectory(prefix: "spool-hls-seek")
        let (playlist, _) = try await HLSMedia.make(in: folder.url, seconds: 12)
        let text = try String(contentsOf: playlist, encoding: .utf8)
        let length = text.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }
            .compactMap { Double($0.dropFirst("#EXTINF:".count).split(separator: ",")[0]) }.reduce(0, +)
        let (engine, recorder) = try playingEngine()
        defer { engine.shutdown() }
        let id = TrackID(1)
        engine.load(EngineTrack(id: id, url: playlist), at: .zero, playing: true)
        _ = try await position(of: engine) { $0 >= .milliseconds(200) }
        let mark = recorder.all.count
        let target = Duration.milliseconds(Int((length - 0.4) * 1000))
        let asked = ContinuousClock.now
        engine.seek(to: target)
        let end = await onOwnThread {
            recorder.waitFor(after: mark, timeout: 10) {
                switch $0 {
                case .endOfTrack, .failed: true
                default: false
                }
            }
        }
        let took = ContinuousClock.now - asked
        #expect(end == .endOfTrack(id), "after a seek to \(target) of \(length) s: \(recorder.all.dropFirst(mark))")
        #expect(recorder.all.dropFirst(mark).contains { if case .seeked(id, _) = $0 { true } else { false } })
        #expect(took >= .milliseconds(300), "the last 0.4 s were played, not skipped: ended after \(took)")
    }
}

@Suite("The rate of an HLS presentation", .serialized)
struct HLSRateTests {
    /// A rate change restarts the stream where it is heard with the rate in its segment: the
    /// position then runs at that rate, and a seek keeps it.
    @Test func aRateChangeAndASeekAfterItPlayAtTheRate() async throws {
        let folder = try TemporaryDirectory(prefix: "spool-hls-rate")
        let (playlist, _) = try await HLSMedia.make(in: folder.url, seconds: 20)
        let (engine, recorder) = try playingEngine()
        defer { engine.shutdown() }
        engine.load(EngineTrack(id: TrackID(1), url: playlist), at: .zero, playing: true)
        let rate = 1.5
        func pace(over wall: Duration) async throws -> Double? {
            guard let from = engine.position() else { return nil }
            let started = ContinuousClock.now
            try await Task.sleep(for: wall)
            guard let to = engine.position() else { return nil }
            return (to - from) / (ContinuousClock.now - started)
        }
        let playing = try await position(of: engine) { $0 >= .milliseconds(300) } ?? .zero
        engine.setRate(rate)
        // The rate's restart reports nothing: 0.3 s of position past it is past its preroll.
        _ = try await position(of: engine) { $0 >= playing + .milliseconds(300) }
        let paced = try await pace(over: .seconds(1))
        #expect(paced.map { abs($0 - rate) < 0.15 } == true, "position ran at \(String(describing: paced))x")
        let mark = recorder.all.count
        engine.seek(to: .seconds(12))
        let seeked = await onOwnThread {
            recorder.waitFor(after: mark, timeout: 10) { if case .seeked = $0 { true } else { false } }
        }
        #expect(seeked != nil, "no Seeked: \(recorder.all.dropFirst(mark))")
        let afterSeek = try await pace(over: .seconds(1))
        #expect(afterSeek.map { abs($0 - rate) < 0.15 } == true, "after a seek: \(String(describing: afterSeek))x")
        #expect((engine.position() ?? .zero) > .seconds(12), "the seek landed")
    }
}
