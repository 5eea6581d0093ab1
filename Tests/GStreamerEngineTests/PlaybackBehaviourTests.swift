import EngineAPI
import Fetcher
import Foundation
import GStreamerEngine
import MediaSource
import Testing
import TestSupport

/// An engine writing raw PCM to a file as fast as it can decode.
func pcmEngine(into output: URL, artDirectory: URL? = nil) throws -> (GStreamerEngine, EventRecorder) {
    let sink = "audioconvert ! \(pcmCaps) ! filesink sync=false location=\(output.path)"
    let engine = try GStreamerEngine(audioSink: sink, artDirectory: artDirectory) { url throws(MediaSourceError) in
        FileByteSource(path: url.path)
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
        engine.load(EngineTrack(id: TrackID(1), url: first), at: .zero, playing: true)
        engine.setNext(EngineTrack(id: TrackID(2), url: second))
        #expect(recorder.waitFor { $0 == .trackStarted(TrackID(2)) } != nil, "no hand-over: \(recorder.all)")
        let end = recorder.waitFor(isEnd)
        #expect(end == .endOfTrack(TrackID(2)), "\(recorder.all)")
        #expect(!recorder.all.contains(.endOfTrack(TrackID(1))), "the first track must hand over, not end")
        #expect(recorder.all.contains { if case .duration(TrackID(2), _) = $0 { true } else { false } },
                "the next track's length is reported: \(recorder.all.suffix(6))")
        let firstLength = try Data(contentsOf: dir.file("a.raw")).count
        let alone = firstLength + (try Data(contentsOf: dir.file("b.raw")).count)
        let joined = try Data(contentsOf: dir.file("joined.raw"))
        let added = Double(joined.count - alone) / pcmBytesPerMillisecond
        let silence = longestSilence(in: joined, around: firstLength, window: Int(200 * pcmBytesPerMillisecond))
         print("gap \(first.lastPathComponent) → \(second.lastPathComponent): \(added) ms added, \(silence) ms of silence at the junction")
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
        if format == .m4aFaststart {
            #expect(abs(gap) <= 60, "M4A gap \(gap) ms")  // AAC priming is not trimmed from M4A by GStreamer 1.22
        } else {
            #expect(abs(gap) <= 5, "\(format) gap \(gap) ms")
        }
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
        engine.load(EngineTrack(id: TrackID(1), url: fixtures.fixture(.flac).url), at: .zero, playing: true)
        engine.setNext(EngineTrack(id: TrackID(2), url: fixtures.fixture(.oggVorbis).url))
        _ = recorder.waitFor(isEnd)
        let events = recorder.all
        let started = try #require(events.firstIndex(of: .trackStarted(TrackID(2))))
        let firstTagOfNext = events.firstIndex { if case .tags(TrackID(2), _) = $0 { true } else { false } }
        // Tags of the next track are attributed to it (never to the playing one).
        #expect(firstTagOfNext != nil)
        let secondTitle = fixtures.fixture(.oggVorbis).title
        #expect(!events.contains { if case .tags(TrackID(1), let tags) = $0 { tags.title == secondTitle } else { false } })
        #expect(events.firstIndex(of: .trackStarted(TrackID(1)))! < started)
    }

    @Test(arguments: [FixtureFormat.mp3CBR, .mp3VBR, .flac, .oggVorbis, .oggOpus, .m4aFaststart, .m4aMoovAtEnd, .wav])
    func seeksLandWithin50Milliseconds(format: FixtureFormat) throws {
        let fixture = try Fixtures.shared().fixture(format)
        let engine = try GStreamerEngine(audioSink: "fakesink sync=false") { url throws(MediaSourceError) in
            FileByteSource(path: url.path)
        }
        defer { engine.shutdown() }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
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
        let fixtures = try Fixtures.shared()
        // A sink that keeps real time, so the seek lands while the first track still plays.
        let engine = try GStreamerEngine(audioSink: "fakesink sync=true") { url throws(MediaSourceError) in
            FileByteSource(path: url.path)
        }
        defer { engine.shutdown() }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        engine.load(EngineTrack(id: TrackID(1), url: fixtures.fixture(.flac).url), at: .zero, playing: true)
        engine.setNext(EngineTrack(id: TrackID(2), url: fixtures.fixture(.wav).url))
        #expect(recorder.waitFor { $0 == .nextQueued(TrackID(2)) } != nil, "\(recorder.all)")
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

    @Test func anOriginIgnoringRangeMakesTheTrackUnseekableButPlayable() throws {
        let fixture = try Fixtures.shared().fixture(.oggVorbis)
        let origin = try FaultOrigin()
        origin.serve(OriginResource(try Data(contentsOf: fixture.url)), at: "/t.ogg", faults: OriginFaults(ignoresRange: true))
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
        #expect(recorder.all.contains(.seekable(TrackID(5), false)))
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
        engine.load(EngineTrack(id: TrackID(10), url: fixtures.fixture(.flac).url), at: .zero, playing: true)
        engine.setNext(EngineTrack(id: TrackID(11), url: fixtures.fixture(.oggOpus).url))
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
            let art = recorder.all.compactMap { if case .tags(_, let tags) = $0 { tags.artURL } else { nil } }.first
            arts.append(try #require(art, "\(fixture): no cover art"))
        }
        #expect(Set(arts).count == 1, "the same image is one file: \(arts)")
        #expect(try Data(contentsOf: arts[0]) == fixtures.coverPNG)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("art").path).count == 1)
    }

    @Test func aTruncatedFileAndANonAudioFileFailWithAMessage() throws {
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory()
        let whole = try Data(contentsOf: fixtures.fixture(.flac).url)
        try whole.prefix(100).write(to: dir.file("truncated.flac"))
        try Data("this is not audio at all\n".utf8).write(to: dir.file("notes.mp3"))
        for name in ["truncated.flac", "notes.mp3"] {
            let (engine, recorder) = try pcmEngine(into: dir.file("out.raw"))
            engine.load(EngineTrack(id: TrackID(9), url: dir.file(name)), at: .zero, playing: true)
            guard case .failed(TrackID(9), let error)? = recorder.waitFor(isEnd) else {
                Issue.record("\(name) did not fail: \(recorder.all)")
                engine.shutdown()
                continue
            }
            #expect(!error.message.isEmpty)
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
        guard case .failed(TrackID(4), let error)? = recorder.waitFor(timeout: 60, isEnd) else {
            Issue.record("expected a failure: \(recorder.all)")
            return
        }
        #expect(!error.message.isEmpty)
    }
}
