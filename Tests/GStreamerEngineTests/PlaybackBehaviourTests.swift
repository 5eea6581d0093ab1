import ByteSourceAPI
import EngineAPI
import Fetcher
import Foundation
import MediaSource
import RangeCache
import TestSupport
import Testing

@testable import GStreamerEngine

/// An engine writing raw PCM to a file as fast as it can decode.
func pcmEngine(into output: URL, artDirectory: URL? = nil) throws -> (GStreamerEngine, EventRecorder) {
    try fileEngine(
        audioSink: "audioconvert ! \(pcmCaps) ! filesink sync=false location=\(output.path)", artDirectory: artDirectory
    )
}

extension GStreamerEngine {
    /// Whether the next track `id`'s source has opened (playbin can take it at about-to-finish,
    /// or it is known to be no media).
    func nextHasOpened(_ id: TrackID) -> Bool {
        shared.withLock { state in
            guard let next = state.lifecycle.next, next.track.id == id else { return false }
            return next.stage != .opening
        }
    }
}

/// Plays `first` with `next` prepared to follow it. Into a sink that does not keep time the
/// first track can be decoded through before the next one's source opens, which in real time
/// is long done: the first is loaded paused and plays once the next has opened.
func play(_ first: EngineTrack, thenGaplessly next: EngineTrack, in engine: GStreamerEngine) {
    engine.load(first, at: .zero, playing: false)
    engine.setNext(next)
    #expect(eventuallyBlocking { engine.nextHasOpened(next.id) }, "the next track's source never opened")
    engine.play()
}

/// Plays the FLAC fixture as track 1 with the WAV one queued as track 2, and waits until
/// playbin has taken track 2 for the gapless hand-over (about-to-finish).
func playFLACWithWAVQueued(_ engine: GStreamerEngine, _ recorder: EventRecorder) throws {
    let fixtures = try Fixtures.shared()
    engine.load(EngineTrack(id: TrackID(1), url: fixtures.fixture(.flac).url), at: .zero, playing: true)
    engine.setNext(EngineTrack(id: TrackID(2), url: fixtures.fixture(.wav).url))
    #expect(recorder.waitFor { $0 == .nextQueued(TrackID(2)) } != nil, "\(recorder.all)")
}

/// An engine playing local files into `audioSink`, with its events recorded; the files' bytes
/// reach it through an in-memory source, not the download engine.
func fileEngine(audioSink: String, artDirectory: URL? = nil) throws -> (GStreamerEngine, EventRecorder) {
    let engine = try GStreamerEngine(audioSink: audioSink, artDirectory: artDirectory) { url throws(MediaSourceError) in
        MemoryByteSource(file: url)
    }
    let recorder = EventRecorder()
    engine.setEventHandler { recorder.record($0) }
    return (engine, recorder)
}

/// Bytes of S16LE stereo PCM per millisecond at 44.1 kHz.
let pcmBytesPerMillisecond = 44_100.0 * 4 / 1000

func isEnd(_ event: EngineEvent) -> Bool {
    switch event {
    case .endOfTrack, .failed: true
    default: false
    }
}

/// The longest run of silent stereo frames (both channels below `threshold`) within
/// `window` bytes either side of byte `center` of S16LE stereo PCM, in milliseconds.
/// The fixtures are steady tones, which pass zero in at most one sample: any
/// longer silence at a junction is a gap a listener hears.
func longestSilence(in pcm: Data, around center: Int, window: Int, threshold: Int16 = 100) -> Double {
    let frameSize = 4
    let start = max(0, (center - window) / frameSize * frameSize)
    let end = min(pcm.count, center + window) / frameSize * frameSize
    var longest = 0
    var run = 0
    pcm.withUnsafeBytes { raw in
        for frame in stride(from: start, to: end, by: frameSize) {
            let left = raw.loadUnaligned(fromByteOffset: frame, as: Int16.self)
            let right = raw.loadUnaligned(fromByteOffset: frame + 2, as: Int16.self)
            if abs(Int(left)) < Int(threshold) && abs(Int(right)) < Int(threshold) {
                run += 1
                longest = max(longest, run)
            } else {
                run = 0
            }
        }
    }
    return Double(longest * frameSize) / pcmBytesPerMillisecond
}

/// The largest difference between two S16 samples at the same place in `a` and `b`.
func maxSampleDifference(_ a: Data, _ b: Data) -> Int {
    let count = min(a.count, b.count) / 2
    var largest = 0
    a.withUnsafeBytes { a in
        b.withUnsafeBytes { b in
            for index in 0..<count {
                let x = Int(a.loadUnaligned(fromByteOffset: index * 2, as: Int16.self))
                let y = Int(b.loadUnaligned(fromByteOffset: index * 2, as: Int16.self))
                largest = max(largest, abs(x - y))
            }
        }
    }
    return largest
}

/// Polls the engine's position (there is no event for it) until it reaches `target`.
func waitForPosition(_ engine: GStreamerEngine, atLeast target: Duration, timeout: Duration = .seconds(10)) async
    -> Bool
{
    await eventually(timeout: Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18) {
        (engine.position()).map { $0 >= target } ?? false
    }
}

@Suite("Engine behaviour", .serialized)
struct PlaybackBehaviourTests {
    /// Plays `first` then `second` with the gapless hand-over and returns the gap a
    /// listener hears, in milliseconds: samples added between the tracks (the joined
    /// output against the two decoded alone) or silence at the junction, whichever is larger.
    func gapBetween(_ first: URL, _ second: URL) throws -> Double {
        let dir = try TemporaryDirectory()
        try decodeWithFilesrc(first, into: dir.file("a.raw"))
        try decodeWithFilesrc(second, into: dir.file("b.raw"))
        let (engine, recorder) = try pcmEngine(into: dir.file("joined.raw"))
        defer { engine.shutdown() }
        play(
            EngineTrack(id: TrackID(1), url: first), thenGaplessly: EngineTrack(id: TrackID(2), url: second), in: engine
        )
        #expect(recorder.waitFor { $0 == .trackStarted(TrackID(2)) } != nil, "no hand-over: \(recorder.all)")
        let end = recorder.waitFor(isEnd)
        #expect(end == .endOfTrack(TrackID(2)), "\(recorder.all)")
        #expect(!recorder.all.contains(.endOfTrack(TrackID(1))), "the first track must hand over, not end")
        // Decoding faster than real time, the track can end before the engine's follow-up
        // duration query (playbin answers it only once the new stream settles): await it.
        #expect(
            recorder.waitFor(timeout: 3) { if case .described(TrackID(2), _, _?) = $0 { true } else { false } } != nil,
            "the next track's length is reported: \(recorder.all.suffix(6))")
        let firstLength = try Data(contentsOf: dir.file("a.raw")).count
        let alone = firstLength + (try Data(contentsOf: dir.file("b.raw")).count)
        let joined = try Data(contentsOf: dir.file("joined.raw"))
        let added = Double(joined.count - alone) / pcmBytesPerMillisecond
        let silence = longestSilence(in: joined, around: firstLength, window: Int(200 * pcmBytesPerMillisecond))
        print(
            "gap \(first.lastPathComponent) → \(second.lastPathComponent): \(added) ms added, \(silence) ms of silence at the junction"
        )
        return max(abs(added), silence)
    }

    @Test func flacToFlacIsGapless() throws {
        let fixtures = try Fixtures.shared()
        let other = try #require(fixtures.withCover.first { $0.format == .flac })
        let gap = try gapBetween(fixtures.fixture(.flac).url, other.url)
        #expect(abs(gap) <= 5, "gap \(gap) ms")
    }

    @Test(arguments: [FixtureFormat.oggVorbis, .wav, .oggOpus, .m4aFaststart])
    func aTrackFollowedByItselfIsGapless(format: FixtureFormat) throws {
        let fixture = try Fixtures.shared().fixture(format)
        let gap = try gapBetween(fixture.url, fixture.url)
        // M4A too: faad drops the encoder's priming (23 ms of near silence at each junction otherwise).
        #expect(abs(gap) <= 5, "\(format) gap \(gap) ms")
    }

    @Test func lameTaggedMP3IsGapless() throws {
        let dir = try TemporaryDirectory()
        let fixtures = try Fixtures.shared()
        // LAME's own encoder writes the LAME tag (encoder delay and padding) that
        // lets the decoder trim the priming samples.
        let wav = fixtures.fixture(.wav)
        let encoded = try runCommand("lame", ["--quiet", "-V", "4", wav.url.path, dir.file("tone.mp3").path])
        #expect(encoded.status == 0, "\(encoded.stderr)")
        let gap = try gapBetween(dir.file("tone.mp3"), dir.file("tone.mp3"))
        #expect(gap <= 5, "LAME-tagged MP3 gap \(gap) ms")
    }

    @Test func metadataSwitchesWhenTheNextTrackStartsNotWhenQueued() throws {
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory()
        let (engine, recorder) = try pcmEngine(into: dir.file("out.raw"))
        defer { engine.shutdown() }
        play(
            EngineTrack(id: TrackID(1), url: fixtures.fixture(.flac).url),
            thenGaplessly: EngineTrack(id: TrackID(2), url: fixtures.fixture(.oggVorbis).url), in: engine)
        _ = recorder.waitFor(isEnd)
        let events = recorder.all
        let started = try #require(events.firstIndex(of: .trackStarted(TrackID(2))))
        let firstTagOfNext = events.firstIndex { if case .described(TrackID(2), _, _) = $0 { true } else { false } }
        // Tags of the next track are attributed to it (never to the playing one).
        #expect(firstTagOfNext != nil)
        let secondTitle = fixtures.fixture(.oggVorbis).title
        #expect(
            !events.contains {
                if case .described(TrackID(1), let tags, _) = $0 { tags.title == secondTitle } else { false }
            })
        #expect(events.firstIndex(of: .trackStarted(TrackID(1)))! < started)
    }

    @Test(arguments: [FixtureFormat.mp3CBR, .mp3VBR, .flac, .oggVorbis, .oggOpus, .m4aFaststart, .m4aMoovAtEnd, .wav])
    func seeksLandWithin50Milliseconds(format: FixtureFormat) throws {
        let fixture = try Fixtures.shared().fixture(format)
        let (engine, recorder) = try fileEngine(audioSink: "fakesink sync=false")
        defer { engine.shutdown() }
        engine.load(EngineTrack(id: TrackID(1), url: fixture.url), at: .milliseconds(1700), playing: false)
        guard case .seeked(_, let position)? = recorder.waitFor({ if case .seeked = $0 { true } else { false } }) else {
            Issue.record("\(format): no seek completed: \(recorder.all)")
            return
        }
        #expect(abs((position - .milliseconds(1700)) / .milliseconds(1)) <= 50, "\(format) landed at \(position)")
        // Seek again while paused, near the end.
        engine.seek(to: .milliseconds(3300))
        let second = recorder.waitFor {
            if case .seeked(_, let at) = $0 { at > .seconds(3) } else { false }
        }
        guard case .seeked(_, let near)? = second else {
            Issue.record("\(format): second seek did not complete: \(recorder.all)")
            return
        }
        #expect(abs((near - .milliseconds(3300)) / .milliseconds(1)) <= 50, "\(format) landed at \(near)")
    }

    @Test func aSeekAfterTheNextTrackWasQueuedStillWorks() throws {
        // A sink that keeps real time, so the seek lands while the first track still plays.
        let (engine, recorder) = try fileEngine(audioSink: "fakesink sync=true")
        defer { engine.shutdown() }
        try playFLACWithWAVQueued(engine, recorder)
        engine.seek(to: .milliseconds(2500))
        let seeked = recorder.waitFor { if case .seeked(TrackID(1), _) = $0 { true } else { false } }
        guard case .seeked(_, let position)? = seeked else {
            Issue.record("the seek in the first track did not complete: \(recorder.all)")
            return
        }
        #expect(abs((position - .milliseconds(2500)) / .milliseconds(1)) <= 50)
        #expect(recorder.waitFor { $0 == .trackStarted(TrackID(2)) } != nil, "\(recorder.all)")
        #expect(recorder.waitFor(isEnd) == .endOfTrack(TrackID(2)), "\(recorder.all)")
    }

    @Test func aNextTrackThatCannotOpenDoesNotStopTheCurrentOne() throws {
        let fixture = try Fixtures.shared().fixture(.flac)
        let dir = try TemporaryDirectory()
        let (engine, recorder) = try pcmEngine(into: dir.file("out.raw"))
        defer { engine.shutdown() }
        engine.load(EngineTrack(id: TrackID(1), url: fixture.url), at: .zero, playing: true)
        engine.setNext(EngineTrack(id: TrackID(2), url: dir.file("missing.flac")))
        #expect(recorder.waitFor(isEnd) == .endOfTrack(TrackID(1)), "\(recorder.all)")
        try decodeWithFilesrc(fixture.url, into: dir.file("reference.raw"))
        let played = try Data(contentsOf: dir.file("out.raw"))
        #expect(firstDifference(played, try Data(contentsOf: dir.file("reference.raw"))) == nil)
    }

    /// An origin that ignores Range sends the file only from its start: an Ogg file plays the
    /// same, from its first bytes. Its demuxer is not told the length (told it, it would wait
    /// for the download's end to read the duration there), so it cannot seek while it
    /// downloads (over 1 s here, so that the start comes first).
    @Test func anOggFromAnOriginIgnoringRangePlaysTheSameAndCannotSeekThere() throws {
        let fixture = try Fixtures.shared().fixture(.oggVorbis)
        let body = try Data(contentsOf: fixture.url)
        let origin = try FaultOrigin()
        origin.serve(
            OriginResource(body), at: "/t.ogg", faults: OriginFaults(bytesPerSecond: body.count, ignoresRange: true))
        let fetcher = Fetcher(userAgent: "Spool/test")
        let dir = try TemporaryDirectory()
        let sink = "audioconvert ! \(pcmCaps) ! filesink sync=false location=\(dir.file("out.raw").path)"
        let engine = try GStreamerEngine(audioSink: sink) { url throws(MediaSourceError) in
            HTTPByteSource(url: url, fetcher: fetcher)
        }
        defer { engine.shutdown() }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        engine.load(EngineTrack(id: TrackID(5), url: origin.url(for: "/t.ogg")), at: .zero, playing: true)
        #expect(recorder.waitFor(isEnd) == .endOfTrack(TrackID(5)), "\(recorder.all)")
        let seekable = recorder.all.compactMap { if case .seekable(_, let can) = $0 { can } else { nil } }
        #expect(seekable.first == false, "\(recorder.all)")
        try decodeWithFilesrc(fixture.url, into: dir.file("reference.raw"))
        let played = try Data(contentsOf: dir.file("out.raw"))
        #expect(firstDifference(played, try Data(contentsOf: dir.file("reference.raw"))) == nil)
    }

    @Test func aSeekNearTheEndStillReachesEndOfStream() throws {
        let fixture = try Fixtures.shared().fixture(.oggVorbis)
        let dir = try TemporaryDirectory()
        let (engine, recorder) = try pcmEngine(into: dir.file("out.raw"))
        defer { engine.shutdown() }
        engine.load(EngineTrack(id: TrackID(1), url: fixture.url), at: .milliseconds(3400), playing: true)
        #expect(recorder.waitFor(isEnd) == .endOfTrack(TrackID(1)))
    }

    @Test func doubleRateKeepsThePositionTrueAndHalvesTheOutput() throws {
        let fixture = try Fixtures.shared().fixture(.flac)
        let dir = try TemporaryDirectory()
        try decodeWithFilesrc(fixture.url, into: dir.file("normal.raw"))
        let (engine, recorder) = try pcmEngine(into: dir.file("fast.raw"))
        defer { engine.shutdown() }
        engine.setRate(2.0)
        engine.load(EngineTrack(id: TrackID(1), url: fixture.url), at: .zero, playing: true)
        #expect(recorder.waitFor(isEnd) == .endOfTrack(TrackID(1)), "\(recorder.all)")
        let normal = try Data(contentsOf: dir.file("normal.raw")).count
        let fast = try Data(contentsOf: dir.file("fast.raw")).count
        let ratio = Double(fast) / Double(normal)
        #expect(abs(ratio - 0.5) < 0.03, "2x output is \(ratio) of normal")
        #expect(engine.supportedRates.contains(0.5) && engine.supportedRates.contains(2.0))
    }

    /// Back to 1.0 after another rate, the engine decodes exactly as a plain
    /// gst-launch decode: scaletempo left the chain (MP3 decoders output S16 again,
    /// not float) and the rebuilt pipeline restarted at the same sample.
    @Test(arguments: [FixtureFormat.mp3CBR, .mp3VBR, .m4aFaststart])
    func backAt1xAfterAnotherRateTheOutputIsExactlyThePlainDecode(format: FixtureFormat) throws {
        let fixture = try Fixtures.shared().fixture(format)
        let dir = try TemporaryDirectory()
        try decodeWithFilesrc(fixture.url, into: dir.file("plain.raw"))
        let (engine, recorder) = try pcmEngine(into: dir.file("out.raw"))
        defer { engine.shutdown() }
        engine.setRate(1.5)
        engine.load(EngineTrack(id: TrackID(1), url: fixture.url), at: .zero, playing: false)
        #expect(recorder.waitFor { $0 == .stateChanged(.paused) } != nil, "\(recorder.all)")
        engine.setRate(1.0)
        engine.play()
        #expect(recorder.waitFor(isEnd) == .endOfTrack(TrackID(1)), "\(recorder.all)")
        let plain = try Data(contentsOf: dir.file("plain.raw"))
        let played = try Data(contentsOf: dir.file("out.raw"))
        #expect(plain.count > 100_000)
        // AAC too: faad outputs S16, so no float-to-S16 converter (whose dither state would
        // outlive the rebuild) is in the chain.
        #expect(firstDifference(played, plain) == nil, "\(format): \(describeDifference(played, plain))")
        #expect(!recorder.all.contains { if case .seeked = $0 { true } else { false } }, "\(recorder.all)")
    }

    /// Plays `url` in real time and changes the rate to 1.5 and back to 1.0 while it
    /// plays. Checks that the position never jumps, that audio runs at each rate,
    /// and that no seek, new start or pause is reported for the changes.
    func changeRateWhilePlaying(
        _ engine: GStreamerEngine, _ recorder: EventRecorder, _ url: URL, measuringThePace: Bool = true
    ) async throws {
        engine.load(EngineTrack(id: TrackID(1), url: url), at: .zero, playing: true)
        #expect(await waitForPosition(engine, atLeast: .milliseconds(400)), "\(recorder.all)")
        for rate in [1.5, 1.0] {
            var last = try #require(engine.position())
            var lastTime = ContinuousClock.now
            engine.setRate(rate)
            // The position follows the clock across the change: it never goes back, never
            // leaps; after the change it runs at the new rate.
            let start = ContinuousClock.now
            var samples: [(ContinuousClock.Instant, Duration)] = []
            while ContinuousClock.now - start < .milliseconds(700) {
                try await Task.sleep(for: .milliseconds(10))  // a sampling interval, not a wait for an event
                guard let now = engine.position() else { continue }
                let time = ContinuousClock.now
                #expect(now >= last - .milliseconds(20), "at \(rate)×: position went back from \(last) to \(now)")
                #expect(
                    now - last <= (time - lastTime) * 2 + .milliseconds(60), "at \(rate)×: leapt from \(last) to \(now)"
                )
                samples.append((time, now))
                (last, lastTime) = (now, time)
            }
            let settled = samples.drop { $0.0 - start < .milliseconds(250) }
            if measuringThePace, let first = settled.first, let end = settled.last, end.0 > first.0 {
                let measured = (end.1 - first.1) / (end.0 - first.0)
                #expect(abs(measured - rate) < 0.15, "playing at \(measured)× instead of \(rate)×")
            }
        }
        #expect(recorder.waitFor(isEnd) == .endOfTrack(TrackID(1)), "\(recorder.all)")
        let events = recorder.all
        #expect(
            !events.contains { if case .seeked = $0 { true } else { false } }, "a rate change is no seek: \(events)")
        #expect(events.filter { $0 == .trackStarted(TrackID(1)) }.count == 1, "\(events)")
        #expect(!events.contains(.stateChanged(.paused)), "\(events)")
    }

    @Test(arguments: [FixtureFormat.mp3CBR, .flac])
    func changingTheRateWhilePlayingKeepsThePositionTrueAndReportsNoSeek(format: FixtureFormat) async throws {
        let fixture = try Fixtures.shared().fixture(format)
        let (engine, recorder) = try fileEngine(audioSink: "fakesink sync=true")
        defer { engine.shutdown() }
        try await changeRateWhilePlaying(engine, recorder, fixture.url)
    }

    /// A rate change on a track in the cache rebuilds the pipeline from the open
    /// source: no request reaches the origin.
    @Test func aRateChangeOnACachedTrackFetchesNothing() async throws {
        let fixtures = try Fixtures.shared()
        let fixture = fixtures.fixture(.mp3VBR)
        let server = try NginxServer(serving: fixtures.directory)
        let cacheDirectory = try TemporaryDirectory(prefix: "spool-cache")
        let cache = try RangeCache(directory: cacheDirectory.url)
        defer { cache.close() }
        let fetcher = Fetcher(userAgent: "Spool/test")
        let cached: GStreamerEngine.SourceFactory = { url throws(MediaSourceError) in
            guard let entry = try? cache.entry(for: url) else { throw .unavailable("no cache entry") }
            return HTTPByteSource(url: url, entry: entry, fetcher: fetcher)
        }
        let url = server.url(for: fixture.fileName)
        // A first play fills the cache.
        let dir = try TemporaryDirectory()
        _ = try decodeThroughEngine(url, source: cached, into: dir.file("first.raw"))
        let downloaded = try await server.accessLog(atLeast: 1).count

        let engine = try GStreamerEngine(audioSink: "fakesink sync=true", makeSource: cached)
        defer { engine.shutdown() }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        try await changeRateWhilePlaying(engine, recorder, url, measuringThePace: false)
        #expect(server.accessLog().count == downloaded, "\(server.accessLog())")
    }

    /// A rate change in the last moments, after the next track was handed to playbin:
    /// the hand-over still happens (no seek, no second start, no end of the first track)
    /// and the next track plays at the new rate.
    @Test func aRateChangeAfterTheNextTrackWasQueuedStillHandsOver() throws {
        let (engine, recorder) = try fileEngine(audioSink: "fakesink sync=true")
        defer { engine.shutdown() }
        try playFLACWithWAVQueued(engine, recorder)
        engine.setRate(1.5)
        #expect(recorder.waitFor { $0 == .trackStarted(TrackID(2)) } != nil, "\(recorder.all)")
        let started = ContinuousClock.now
        #expect(recorder.waitFor(isEnd) == .endOfTrack(TrackID(2)), "\(recorder.all)")
        // 3.48 s of audio lasts about 2.3 s at 1.5×.
        let played = ContinuousClock.now - started
        #expect(played < .milliseconds(2900), "the next track took \(played) at 1.5×")
        let events = recorder.all
        #expect(!events.contains { if case .seeked = $0 { true } else { false } }, "\(events)")
        #expect(!events.contains(.endOfTrack(TrackID(1))), "the first track handed over, not ended: \(events)")
        #expect(events.filter { $0 == .trackStarted(TrackID(1)) }.count == 1, "\(events)")
    }

    @Test func tracksOfOtherFormatsPlayInTurnAtAnotherRate() throws {
        // At 1.5×, a FLAC after an Ogg track crashed a reused scaletempo (GStreamer 1.22).
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory()
        let (engine, recorder) = try pcmEngine(into: dir.file("out.raw"))
        defer { engine.shutdown() }
        engine.setRate(1.5)
        let order: [FixtureFormat] = [.flac, .oggVorbis, .flac, .oggOpus, .mp3CBR]
        for (index, format) in order.enumerated() {
            let id = TrackID(UInt64(index + 1))
            engine.load(EngineTrack(id: id, url: fixtures.fixture(format).url), at: .zero, playing: true)
            let end = recorder.waitFor {
                switch $0 {
                case .endOfTrack(id), .failed(id, _): true
                default: false
                }
            }
            #expect(end == .endOfTrack(id), "\(format)")
        }
        // And gaplessly across formats at that rate.
        play(
            EngineTrack(id: TrackID(10), url: fixtures.fixture(.flac).url),
            thenGaplessly: EngineTrack(id: TrackID(11), url: fixtures.fixture(.oggOpus).url), in: engine)
        #expect(recorder.waitFor { $0 == .trackStarted(TrackID(11)) } != nil)
        #expect(recorder.waitFor { $0 == .endOfTrack(TrackID(11)) } != nil, "\(recorder.all.suffix(5))")
    }

    @Test func embeddedCoverArtIsWrittenOnceByContentHash() throws {
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory()
        var arts: [URL] = []
        for fixture in fixtures.withCover {
            let (engine, recorder) = try pcmEngine(into: dir.file("out.raw"), artDirectory: dir.file("art"))
            engine.load(EngineTrack(id: TrackID(1), url: fixture.url), at: .zero, playing: true)
            _ = recorder.waitFor(isEnd)
            engine.shutdown()
            let art = recorder.all.compactMap { if case .described(_, let tags, _) = $0 { tags.artURL } else { nil } }
                .first
            arts.append(try #require(art, "\(fixture): no cover art"))
        }
        #expect(Set(arts).count == 1, "the same image is one file: \(arts)")
        #expect(try Data(contentsOf: arts[0]) == fixtures.coverPNG)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("art").path).count == 1)
    }

    @Test func aTruncatedAMissingAndANonAudioFileFailWithTheirKinds() throws {
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory()
        let whole = try Data(contentsOf: fixtures.fixture(.flac).url)
        try whole.prefix(100).write(to: dir.file("truncated.flac"))
        try Data("this is not audio at all\n".utf8).write(to: dir.file("notes.mp3"))
        // The kind says what the player does: each of these is skipped, not retried. The truncated
        // FLAC types as FLAC but its parser finds no frame, which baseparse calls a wrong type.
        let expected: [(String, FailureKind)] = [
            ("truncated.flac", .unsupported), ("notes.mp3", .unsupported), ("missing.mp3", .notFound),
        ]
        for (name, kind) in expected {
            let (engine, recorder) = try pcmEngine(into: dir.file("out.raw"))
            engine.load(EngineTrack(id: TrackID(9), url: dir.file(name)), at: .zero, playing: true)
            guard case .failed(TrackID(9), let error)? = recorder.waitFor(isEnd) else {
                Issue.record("\(name) did not fail: \(recorder.all)")
                engine.shutdown()
                continue
            }
            #expect(!error.message.isEmpty)
            #expect(error.kind == kind, "\(name): \(error)")
            engine.shutdown()
        }
    }

    @Test func anOriginThatDiesMidTrackFailsTheTrackWithoutHanging() throws {
        let fixture = try Fixtures.shared().fixture(.wav)
        let origin = try FaultOrigin()
        var faults = OriginFaults()
        faults.closeAfterBodyBytes = 100_000
        origin.serve(OriginResource(try Data(contentsOf: fixture.url)), at: "/t.wav", faults: faults)
        let fetcher = Fetcher(userAgent: "Spool/test")
        let engine = try GStreamerEngine(audioSink: "fakesink sync=false") { url throws(MediaSourceError) in
            HTTPByteSource(url: url, fetcher: fetcher)
        }
        defer { engine.shutdown() }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        // Every retry is cut at the same point, then the origin goes away.
        engine.load(EngineTrack(id: TrackID(4), url: origin.url(for: "/t.wav")), at: .zero, playing: true)
        _ = try origin.requests(atLeast: 1)
        origin.stop()
        let asked = Date()
        guard case .failed(TrackID(4), let error)? = recorder.waitFor(timeout: 60, isEnd) else {
            Issue.record("expected a failure: \(recorder.all)")
            return
        }
        #expect(error.message.contains("cannot reach the server"), "\(error.message)")
        // Not after the fetcher's retry budget: the listener hears of it while it matters.
        #expect(Date().timeIntervalSince(asked) < 10)
    }
}
