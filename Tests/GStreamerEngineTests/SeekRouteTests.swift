import Basics
import ByteSourceAPI
import EngineAPI
import Foundation
import Testing

@testable import GStreamerEngine

/// The choice between a time seek and a byte seek, and the feeding mode, without GStreamer.
@Suite("Seek routes, feeding modes and the decoder loaded ahead")
struct SeekRouteTests {
    /// A parser's conversion for a 16 kB/s stream: byte = 16 000 × seconds.
    static func byte(_ time: Duration) -> Int64? { Int64(Double(time.components.seconds) * 16_000) }

    struct Row: Sendable, CustomTestStringConvertible {
        var target: Int
        var accurate = false
        var pushed = true
        /// Held bytes of the parsed stream.
        var held: Range<Int64>
        var converts = true
        var route: SeekRoute
        var testDescription: String { "to \(target) s, held \(held), pushed \(pushed), accurate \(accurate)" }
    }

    static let rows: [Row] = [
        // Every byte up to the target is here: the parser scans to the sample, a fast read.
        Row(target: 15, held: 0..<300_000, route: .time(accurate: true)),
        Row(target: 150, held: 0..<2_400_001, route: .time(accurate: true)),
        // Everything from 20 s before the target to it is here: the parser reads through it.
        Row(target: 40, held: 300_000..<700_000, route: .time(accurate: false)),
        // A gap between the play head and the target: straight to the target's byte.
        Row(target: 15, held: 0..<40_000, route: .bytes(240_000)),
        Row(target: 40, held: 0..<40_000, route: .bytes(640_000)),
        // The target's bytes are here but not the 20 s before it: the parse-through would wait.
        Row(target: 40, held: 600_000..<700_000, route: .bytes(640_000)),
        // Not pushed (pulled, or a local file), accurate, or a parser that cannot tell yet: time.
        Row(target: 15, pushed: false, held: 0..<1, route: .time(accurate: false)),
        Row(target: 15, accurate: true, held: 0..<1, route: .time(accurate: true)),
        Row(target: 15, held: 0..<1, converts: false, route: .time(accurate: false)),
    ]

    @Test(arguments: rows)
    func theRouteFollowsTheHeldBytes(row: Row) {
        let route = SeekRoute.choose(
            target: .seconds(row.target), accurate: row.accurate, pushed: row.pushed,
            byte: { row.converts ? Self.byte($0) : nil },
            holds: { row.held.lowerBound <= $0.lowerBound && $0.upperBound <= row.held.upperBound })
        #expect(route == row.route)
    }

    @Test(
        arguments: [
            ("http://o/a.mp3", nil, false), ("http://o/a.flac", nil, false), ("http://o/a", "audio/flac", false),
            ("http://o/a.ogg", nil, true), ("http://o/a.m4a", nil, true), ("http://o/a.wav", nil, true),
            ("file:///a.mp3", nil, true), ("file:///a.flac", nil, true),
        ] as [(String, String?, Bool)])
    func mp3AndFLACArePushedOverHTTP(url: String, contentType: String?, pulled: Bool) {
        let track = EngineTrack(id: TrackID(1), url: URL(string: url)!)
        #expect(FeedingMode.pulls(track, contentType: contentType) == pulled)
    }

    /// Only an Ogg file of known length from a source without random access (and not live) has
    /// a tail its demuxer would seek to before the first audio: the last 64 KiB.
    @Test(
        arguments: [
            ("oga", false, 1_000_000, false, 934_464..<1_000_000), ("oga", false, 10_000, false, 0..<10_000),
            ("oga", true, 1_000_000, false, nil), ("oga", false, nil, false, nil), ("oga", false, 1_000_000, true, nil),
            ("mp3", false, 1_000_000, false, nil), ("flac", false, 1_000_000, false, nil),
        ] as [(String, Bool, Int64?, Bool, Range<Int64>?)])
    func anOggWithoutRandomAccessHasATailSoughtBeforeItsStart(
        format: String, randomAccess: Bool, length: Int64?, live: Bool, tail: Range<Int64>?
    ) {
        let station = LiveStation()
        let info = ResourceInfo(length: length, randomAccess: randomAccess, live: live ? station : nil)
        #expect(FeedingMode.tailSoughtBeforeStart(format: format, info: info) == tail)
    }

    @Test func theLeadingID3v2TagIsMeasuredFromItsHeader() {
        // "ID3", v2.4, no flags, syncsafe size 0x00 0x00 0x02 0x01 = 257: 10 + 257 bytes.
        #expect(ID3v2.tagLength(Data([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 2, 1])) == 267)
        // A footer adds 10 more.
        #expect(ID3v2.tagLength(Data([0x49, 0x44, 0x33, 4, 0, 0x10, 0, 0, 2, 1])) == 277)
        #expect(ID3v2.tagLength(Data([0xFF, 0xFB, 0x90, 0x64, 0, 0, 0, 0, 0, 0])) == 0)
        #expect(ID3v2.tagLength(Data("fLaC".utf8)) == 0)
    }

    /// Opening an M4A loads the plugin of the decoder decodebin will take while the bytes travel:
    /// it must be the one decodebin takes, not some other. That is faad, ranked above libav's
    /// avdec_aac, which would map FFmpeg (about 30 MiB resident; the preload maps what it names).
    @Test func theDecoderLoadedAheadForAACIsTheOneDecodebinTakes() throws {
        let caps = try #require(TypeHint.slowDecoderCaps(forExtension: "mp4"))
        #expect(GStreamer.decoderName(for: caps) == "faad")
        #expect(TypeHint.slowDecoderCaps(forExtension: "flac") == nil)
    }
}
