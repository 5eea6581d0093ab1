import ByteSourceAPI
import EngineAPI
import Foundation
import MediaSource
import TestSupport
import Testing

@testable import GStreamerEngine

/// `m4a` (an M4A with `moov` after `mdat`, as mp4mux writes it with faststart off) with an edit
/// list that skips `priming` samples of its first track, as ffmpeg, iTunes and fdkaac write one
/// for the encoder's priming. `moov` is last, so no chunk offset moves.
func withEditList(_ m4a: Data, priming: UInt32) throws -> Data {
    let bytes = [UInt8](m4a)
    func u32(_ at: Int) -> UInt32 { bytes[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
    func boxes(_ range: Range<Int>) -> [(start: Int, size: Int, type: String)] {
        var found: [(Int, Int, String)] = []
        var at = range.lowerBound
        while at + 8 <= range.upperBound {
            let size = Int(u32(at))
            guard size >= 8 else { break }
            found.append((at, size, String(decoding: bytes[at + 4..<at + 8], as: UTF8.self)))
            at += size
        }
        return found
    }
    func child(_ type: String, of box: (start: Int, size: Int, type: String)) throws -> (
        start: Int, size: Int, type: String
    ) {
        guard let found = boxes(box.start + 8..<box.start + box.size).first(where: { $0.type == type }) else {
            throw RigError("no \(type) in \(box.type)")
        }
        return found
    }
    guard let moov = boxes(0..<bytes.count).first(where: { $0.type == "moov" }) else { throw RigError("no moov") }
    guard
        boxes(0..<bytes.count).firstIndex(where: { $0.type == "mdat" })! < boxes(0..<bytes.count).firstIndex(where: {
            $0.type == "moov"
        })!
    else { throw RigError("moov must come after mdat") }
    let mvhd = try child("mvhd", of: moov)
    let trak = try child("trak", of: moov)
    let tkhd = try child("tkhd", of: trak)
    let mdhd = try child("mdhd", of: try child("mdia", of: trak))
    guard bytes[mvhd.start + 8] == 0, bytes[mdhd.start + 8] == 0 else { throw RigError("64-bit headers") }
    let movieScale = UInt64(u32(mvhd.start + 20))
    let movieDuration = UInt64(u32(mvhd.start + 24))
    let mediaScale = UInt64(u32(mdhd.start + 20))
    let shown = UInt32(movieDuration - UInt64(priming) * movieScale / mediaScale)
    func be(_ value: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
    // edts { elst: version 0, one entry: duration (movie scale), media time (media scale), rate 1.0 }
    let elst = be(28) + Array("elst".utf8) + be(0) + be(1) + be(shown) + be(priming) + be(0x0001_0000)
    let edts = be(36) + Array("edts".utf8) + elst
    var edited = bytes
    edited.insert(contentsOf: edts, at: tkhd.start + tkhd.size)
    for box in [moov, trak] {
        edited.replaceSubrange(box.start..<box.start + 4, with: be(UInt32(box.size + edts.count)))
    }
    return Data(edited)
}

@Suite("AAC decoding with faad", .serialized)
struct AACDecoderTests {
    /// faad (chosen over libav's avdec_aac for its memory) drops the first frame it decodes, and an
    /// edit list skips the priming too: Spool's decode must still hold exactly the samples libav's
    /// decoder gives for the edited file (which honours the edit list alone), at the same place.
    @Test func anEditListIsHonouredAsLibavHonoursIt() throws {
        let dir = try TemporaryDirectory()
        let edited = dir.file("edited.m4a")
        try withEditList(Data(contentsOf: Fixtures.shared().fixture(.m4aMoovAtEnd).url), priming: 1024).write(
            to: edited)
        let events = try decodeThroughEngine(
            edited, source: { url throws(MediaSourceError) in FileByteSource(path: url.path) },
            into: dir.file("spool.raw"))
        #expect(events.contains(.trackStarted(TrackID(1))))
        try decodeWithFilesrc(edited, into: dir.file("libav.raw"), ranks: "avdec_aac:300")
        let spool = try Data(contentsOf: dir.file("spool.raw"))
        let libav = try Data(contentsOf: dir.file("libav.raw"))
        let frames = (spool: spool.count / 4, libav: libav.count / 4)
        // The two decoders place the tone one sample apart (faad one early, against the tone
        // computed): the same audio within a couple of samples; a frame cut at the start would
        // shift it by 1024. Their last frames differ more (up to 679 measured, where the tone
        // stops dead), so the comparison ends a frame before the end.
        let compared = (frames.spool - 1024) * 4
        let (lag, difference) = (-2...2).map { lag in
            (
                lag,
                maxSampleDifference(
                    Data(spool.dropFirst(max(0, lag) * 4).prefix(compared)),
                    Data(libav.dropFirst(max(0, -lag) * 4).prefix(compared)))
            )
        }.min { $0.1 < $1.1 }!
        print(
            "edit list: \(frames.spool) frames through Spool (faad), \(frames.libav) through avdec_aac; aligned \(lag) frames apart, largest sample difference \(difference)"
        )
        #expect(libav.count > 100_000)
        #expect(abs(frames.spool - frames.libav) <= 2, "\(frames)")
        #expect(difference <= 128, "largest difference \(difference) at the best lag \(lag)")
    }

    /// Without an edit list (mp4mux writes none), faad's own drop of the first frame removes the
    /// priming: exactly the source's samples come out.
    @Test func withoutAnEditListExactlyTheSourceSamplesComeOut() throws {
        let dir = try TemporaryDirectory()
        _ = try decodeThroughEngine(
            Fixtures.shared().fixture(.m4aFaststart).url,
            source: { url throws(MediaSourceError) in FileByteSource(path: url.path) },
            into: dir.file("spool.raw"))
        let frames = try Data(contentsOf: dir.file("spool.raw")).count / 4
        #expect(frames == Fixtures.sampleCount, "\(frames) frames of \(Fixtures.sampleCount)")
    }
}

@Suite("faad's segment with an edit list")
struct FaadTimingTests {
    static let second: UInt = 1_000_000_000
    static let frame44k: UInt = 1024 * second / 44_100

    @Test func aSegmentWithoutAnEditListIsLeftAlone() {
        #expect(FaadTiming.shifted(start: 0, stop: 10 * Self.second, time: 0, rate: 44_100) == nil)
        // After a seek in a file without an edit list: start and stream time agree.
        #expect(FaadTiming.shifted(start: 5 * Self.second, stop: nil, time: 5 * Self.second, rate: 44_100) == nil)
        #expect(FaadTiming.shifted(start: Self.frame44k, stop: nil, time: 0, rate: 0) == nil)
    }

    @Test func anEditListOffsetMovesTheSegmentOneFrameEarlier() throws {
        // ffmpeg's 1024-sample priming at 44.1 kHz: the segment starts 23.2 ms into the media.
        let moved = try #require(
            FaadTiming.shifted(start: Self.frame44k, stop: 10 * Self.second + Self.frame44k, time: 0, rate: 44_100))
        #expect(moved.start == 0)
        #expect(moved.stop == 10 * Self.second)
        // After a seek: the same offset between start and stream time.
        let sought = try #require(
            FaadTiming.shifted(start: 5 * Self.second + Self.frame44k, stop: nil, time: 5 * Self.second, rate: 44_100))
        #expect(sought.start == 5 * Self.second && sought.stop == nil)
    }

    @Test func aLongerPrimingMovesByOneFrameOnly() throws {
        // Nero/iTunes write 2112 samples; faad drops one frame of 1024 only.
        let priming = 2112 * Self.second / 44_100
        let moved = try #require(FaadTiming.shifted(start: priming, stop: nil, time: 0, rate: 44_100))
        #expect(moved.start == priming - Self.frame44k)
        // A shorter offset than a frame moves by the offset.
        let short = try #require(FaadTiming.shifted(start: 1000, stop: 5000, time: 0, rate: 44_100))
        #expect(short.start == 0 && short.stop == 4000)
    }
}
