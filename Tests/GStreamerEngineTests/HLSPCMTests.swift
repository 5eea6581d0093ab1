import ByteSourceAPI
import EngineAPI
import Foundation
import GStreamerEngine
import HLSSource
import MediaSource
import TestSupport
import Testing

/// An HLS presentation played through the engine must sound exactly like the same audio played
/// as one file: the segments' joins add no click, gap or repeat. Each format's segments are read
/// from local files through ``HLSByteSource``, decoded to PCM, and compared byte for byte with the
/// one file's PCM decoded the same way; a decoder reset at a join rewrites a frame's samples, a
/// lost or repeated segment changes the length, and either shows as a difference.
@Suite("HLS segments decode like one file", .serialized)
struct HLSPCMTests {
    /// Seconds of tone per presentation: three segments of the default four seconds, so two
    /// joins between full segments.
    static let seconds = 12

    @Test func mpegTSSegmentsDecodeToTheSamePCMAsTheirConcatenation() async throws {
        let dir = try TemporaryDirectory()
        let media = try await HLSMedia.make(in: dir.url, seconds: Self.seconds)
        // hlssink2 cuts one continuous transport stream: its segments end to end are that stream.
        let joined = dir.file("joined.ts")
        try Data(media.segments.map { try Data(contentsOf: dir.file($0)) }.joined()).write(to: joined)
        try await expectSamePCM(playlist: media.playlist, segments: media.segments, whole: joined, in: dir)
    }

    /// A radio's segments carry the song on air as timed ID3 in a metadata stream of their own:
    /// the demuxer offers a stream no decoder takes, and the audio must play on regardless.
    @Test func mpegTSSegmentsWithTimedID3DecodeToTheSamePCMAsWithout() async throws {
        let dir = try TemporaryDirectory()
        let media = try await HLSMedia.make(in: dir.url, seconds: Self.seconds)
        let joined = dir.file("joined.ts")
        try Data(media.segments.map { try Data(contentsOf: dir.file($0)) }.joined()).write(to: joined)
        for (number, name) in media.segments.enumerated() {
            let tag = TimedID3Writer.songTag(artist: "Artist \(number)", title: "Song \(number)")
            try TimedID3Writer.adding(tag, to: Data(contentsOf: dir.file(name))).write(to: dir.file(name))
        }
        try await expectSamePCM(playlist: media.playlist, segments: media.segments, whole: joined, in: dir)
    }

    @Test func packedAudioSegmentsDecodeToTheSamePCMAsTheWholeFile() async throws {
        let dir = try TemporaryDirectory()
        let media = try await HLSFormats.makePackedAudio(in: dir.url, seconds: Self.seconds)
        // Each segment says in its ID3 tag where it starts: frame-exact 90 kHz times of a
        // continuous stream.
        var samples = 0
        for name in media.segments {
            let segment = try Data(contentsOf: dir.file(name))
            #expect(HLSFormats.transportStreamTimestamp(of: segment) == UInt64(samples * 90_000 / 44_100), "\(name)")
            samples += try adtsFrameCount(segment.dropFirst(id3TagLength(segment))) * 1024
        }
        #expect(media.segments.count >= 3, "\(media.segments)")
        let (hls, reference) = try await decodeBothWays(playlist: media.playlist, whole: media.whole, in: dir)
        #expect(reference.count > 2_000_000, "only \(reference.count) bytes of PCM")
        // Each segment's leading ID3 tag is stripped by the source: passed on, aacparse would
        // take it for lost sync at every join and the decoder would flush (faad loses a frame,
        // 23 ms; avdec_aac restarts its overlap, a click).
        #expect(firstDifference(hls, reference) == nil, "\(describeDifference(hls, reference))")
    }

    @Test func fragmentedMP4SegmentsDecodeToTheSamePCMAsTheWholeFile() async throws {
        let dir = try TemporaryDirectory()
        let media = try await HLSFormats.makeFragmentedMP4(in: dir.url, seconds: Self.seconds)
        // Every fragment carries its decode time (tfdt), which is what lets a demuxer time a
        // stream joined mid-way; the segments' times are the whole file's.
        let wholeTimes = try HLSFormats.fragmentDecodeTimes(in: Data(contentsOf: media.whole))
        let segmentTimes = try media.segments.flatMap {
            try HLSFormats.fragmentDecodeTimes(in: Data(contentsOf: dir.file($0)))
        }
        #expect(!wholeTimes.contains(nil) && wholeTimes.first == 0, "\(wholeTimes)")
        #expect(segmentTimes == wholeTimes)
        try await expectSamePCM(playlist: media.playlist, segments: media.segments, whole: media.whole, in: dir)
    }

    /// A variant switch in fragmented MP4 splices the new variant's initialization section in
    /// before its segments (a new `EXT-X-MAP` mid-stream, as a switch lays out the parts): the
    /// decoder takes the new section and plays on, losing and repeating nothing (the two
    /// variants' encodings differ, so the length and the absence of silence are what is
    /// compared).
    @Test func aNewInitializationSectionMidStreamPlaysOnWithNothingLost() async throws {
        let dir = try TemporaryDirectory()
        var made: [HLSFormats.Presentation] = []
        for (name, bitrate) in [("low", 64_000), ("high", 192_000)] {
            let folder = dir.file(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            made.append(try await HLSFormats.makeFragmentedMP4(in: folder, seconds: Self.seconds, bitrate: bitrate))
        }
        let (low, high) = (made[0], made[1])
        #expect(low.segments.count >= 3 && low.segments == high.segments, "\(low.segments) \(high.segments)")
        let text = { (url: URL) in try String(contentsOf: url, encoding: .utf8) }
        // The low variant's map and first segment, then the high variant's map and the rest.
        let lowLines = try text(low.playlist).split(separator: "\n")
        let highLines = try text(high.playlist).split(separator: "\n")
        let header = lowLines.prefix { !$0.hasPrefix("#EXT-X-MAP") && !$0.hasPrefix("#EXTINF") }
        let entries = { (lines: [Substring]) in
            zip(lines.indices, lines).filter { $0.1.hasPrefix("#EXTINF") }.map { "\(lines[$0.0])\n\(lines[$0.0 + 1])" }
        }
        let spliced =
            header.joined(separator: "\n") + "\n#EXT-X-MAP:URI=\"low/init.mp4\"\n"
            + entries(Array(lowLines)).prefix(1).map { $0.replacingOccurrences(of: "\nseg", with: "\nlow/seg") }
            .joined(separator: "\n")
            + "\n#EXT-X-MAP:URI=\"high/init.mp4\"\n"
            + entries(Array(highLines)).dropFirst().map { $0.replacingOccurrences(of: "\nseg", with: "\nhigh/seg") }
            .joined(separator: "\n") + "\n#EXT-X-ENDLIST\n"
        let playlist = dir.file("switch.m3u8")
        try Data(spliced.utf8).write(to: playlist)
        _ = try await decodeAwaitingEnd(playlist, source: Self.localSource, into: dir.file("switch.raw"))
        _ = try await decodeAwaitingEnd(low.whole, source: Self.localSource, into: dir.file("low.raw"))
        let switched = try Data(contentsOf: dir.file("switch.raw"))
        let reference = try Data(contentsOf: dir.file("low.raw"))
        // 44.1 kHz stereo 16-bit: 4 bytes a frame; within one AAC frame (1024 samples) of the whole.
        #expect(abs(switched.count - reference.count) <= 1024 * 4, "\(switched.count) vs \(reference.count) bytes")
        #expect(longestSilence(switched) < 4410 * 4, "a silence of \(longestSilence(switched) / 4) frames")
    }

    /// The comparison catches a join that loses audio: the same fragmented-MP4 presentation with
    /// its second segment left out of the playlist decodes to different, shorter PCM.
    @Test func aSegmentLeftOutShowsAsADifference() async throws {
        let dir = try TemporaryDirectory()
        let media = try await HLSFormats.makeFragmentedMP4(in: dir.url, seconds: Self.seconds)
        let text = try String(contentsOf: media.playlist, encoding: .utf8)
        // The segment's URI line and the #EXTINF line before it.
        let cut = text.replacingOccurrences(
            of: #"#EXTINF:[0-9.]+,\n\#(media.segments[1])\n"#, with: "", options: .regularExpression)
        #expect(cut.count < text.count)
        try Data(cut.utf8).write(to: media.playlist)
        let (hls, whole) = try await decodeBothWays(playlist: media.playlist, whole: media.whole, in: dir)
        #expect(firstDifference(hls, whole) != nil)
        // A segment is about four seconds: 44,100 frames of 4 bytes each per second.
        #expect(whole.count - hls.count > 3 * 44_100 * 4, "\(hls.count) vs \(whole.count) bytes")
    }

    /// Decodes the presentation at `playlist` and the one file `whole` through the engine and
    /// expects the same PCM.
    private func expectSamePCM(playlist: URL, segments: [String], whole: URL, in dir: TemporaryDirectory) async throws {
        #expect(segments.count >= 3, "\(segments)")
        let (hls, reference) = try await decodeBothWays(playlist: playlist, whole: whole, in: dir)
        #expect(reference.count > 2_000_000, "only \(reference.count) bytes of PCM from \(whole.lastPathComponent)")
        #expect(firstDifference(hls, reference) == nil, "\(describeDifference(hls, reference))")
    }

    /// The PCM of the HLS presentation at `playlist` and of the file `whole`, each decoded
    /// through the engine.
    private func decodeBothWays(playlist: URL, whole: URL, in dir: TemporaryDirectory) async throws -> (Data, Data) {
        _ = try await decodeAwaitingEnd(playlist, source: Self.localSource, into: dir.file("hls.raw"))
        _ = try await decodeAwaitingEnd(whole, source: Self.localSource, into: dir.file("whole.raw"))
        return (try Data(contentsOf: dir.file("hls.raw")), try Data(contentsOf: dir.file("whole.raw")))
    }

    /// A playlist plays through ``HLSByteSource`` with each segment a ``FileByteSource``; any
    /// other file is one ``FileByteSource``.
    static let localSource: GStreamerEngine.SourceFactory = { url throws(MediaSourceError) in
        guard url.pathExtension == "m3u8" else { return FileByteSource(path: url.path) }
        return HLSByteSource(
            url: url,
            fetchPlaylist: { address, _ throws(MediaSourceError) in
                guard let data = FileManager.default.contents(atPath: address.path) else {
                    throw .gone(address.path)
                }
                return data
            },
            makeSource: { segment, _ throws(MediaSourceError) in FileByteSource(path: segment.path) })
    }
}

/// The length of the ID3v2 tag `data` starts with (header and body; no footer is written).
private func id3TagLength(_ data: Data) -> Int {
    let bytes = [UInt8](data.prefix(10))
    guard bytes.count == 10, bytes[0..<3] == [0x49, 0x44, 0x33] else { return 0 }
    return 10 + bytes[6..<10].reduce(0) { $0 << 7 | Int($1 & 0x7F) }
}

/// How many ADTS frames `data` holds, end to end.
private func adtsFrameCount(_ data: Data) throws -> Int {
    let bytes = [UInt8](data)
    var offset = 0
    var count = 0
    while offset < bytes.count {
        guard offset + 7 <= bytes.count, bytes[offset] == 0xFF, bytes[offset + 1] & 0xF0 == 0xF0 else {
            throw RigError("no ADTS frame at byte \(offset)")
        }
        offset += Int(bytes[offset + 3] & 0x03) << 11 | Int(bytes[offset + 4]) << 3 | Int(bytes[offset + 5]) >> 5
        count += 1
    }
    return count
}

/// The longest run of zero bytes in `pcm`: a silence the tone never has.
private func longestSilence(_ pcm: Data) -> Int {
    var longest = 0
    var run = 0
    for byte in pcm {
        run = byte == 0 ? run + 1 : 0
        longest = max(longest, run)
    }
    return longest
}
