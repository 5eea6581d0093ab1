import HLS
import Testing

/// Time → segment for seeking, and where playback starts (RFC 8216 §6.3.3, §4.3.5.2).
@Suite("Seeking and the start position")
struct SeekAndStartTests {
    /// Segments of 4 s, 6 s, 2.5 s and 6 s: starts at 0, 4, 10, 12.5; ends at 18.5.
    static let text = """
        #EXTM3U
        #EXT-X-TARGETDURATION:6
        #EXTINF:4,
        a.aac
        #EXTINF:6,
        b.aac
        #EXTINF:2.5,
        c.aac
        #EXTINF:6,
        d.aac
        #EXT-X-ENDLIST
        """

    @Test(
        arguments: [
            (Duration.zero, SegmentPosition(segmentIndex: 0, offset: .zero)),
            (.milliseconds(3999), SegmentPosition(segmentIndex: 0, offset: .milliseconds(3999))),
            (.seconds(4), SegmentPosition(segmentIndex: 1, offset: .zero)),
            (.seconds(7), SegmentPosition(segmentIndex: 1, offset: .seconds(3))),
            (.seconds(10), SegmentPosition(segmentIndex: 2, offset: .zero)),
            (.seconds(12), SegmentPosition(segmentIndex: 2, offset: .seconds(2))),
            (.milliseconds(12500), SegmentPosition(segmentIndex: 3, offset: .zero)),
            (.milliseconds(18499), SegmentPosition(segmentIndex: 3, offset: .milliseconds(5999))),
            (.milliseconds(18500), nil),
            (.seconds(60), nil),
            (.seconds(-3), SegmentPosition(segmentIndex: 0, offset: .zero)),
        ] as [(Duration, SegmentPosition?)])
    func segmentPositionFindsTheSegmentAndTheOffsetInIt(time: Duration, expected: SegmentPosition?) throws {
        let playlist = try parseMedia(Self.text)
        #expect(playlist.segmentPosition(at: time) == expected)
    }

    @Test func startTimesAddUpThePreviousSegments() throws {
        let playlist = try parseMedia(Self.text)
        #expect(
            (0...4).map { playlist.startTime(ofSegmentAt: $0) } == [
                .zero, .seconds(4), .seconds(10), .milliseconds(12500), .milliseconds(18500),
            ])
        #expect(playlist.totalDuration == .milliseconds(18500))
        let empty = try parseMedia("#EXTM3U\n#EXT-X-TARGETDURATION:6\n")
        #expect(empty.segmentPosition(at: .zero) == nil && empty.startPosition() == nil)
    }

    struct StartCase: Sendable, CustomTestStringConvertible {
        let name: String
        let segmentCount: Int
        let endList: Bool
        let startTag: String
        let expected: SegmentPosition
        var testDescription: String { name }
    }

    /// Playlists of 6 s segments with a 6 s target duration: three target durations is 18 s.
    @Test(arguments: [
        StartCase(
            name: "long live: the last segment starting 18 s or more before the end", segmentCount: 10,
            endList: false, startTag: "", expected: SegmentPosition(segmentIndex: 7, offset: .zero)),
        StartCase(
            name: "live of exactly three target durations", segmentCount: 3, endList: false, startTag: "",
            expected: SegmentPosition(segmentIndex: 0, offset: .zero)),
        StartCase(
            name: "short live: the first segment", segmentCount: 2, endList: false, startTag: "",
            expected: SegmentPosition(segmentIndex: 0, offset: .zero)),
        StartCase(
            name: "on demand: the first segment", segmentCount: 10, endList: true, startTag: "",
            expected: SegmentPosition(segmentIndex: 0, offset: .zero)),
        StartCase(
            name: "positive offset, imprecise: its segment's start", segmentCount: 10, endList: false,
            startTag: "#EXT-X-START:TIME-OFFSET=15", expected: SegmentPosition(segmentIndex: 2, offset: .zero)),
        StartCase(
            name: "positive offset, precise", segmentCount: 10, endList: true,
            startTag: "#EXT-X-START:TIME-OFFSET=15.5,PRECISE=YES",
            expected: SegmentPosition(segmentIndex: 2, offset: .milliseconds(3500))),
        StartCase(
            name: "negative offset counts from the end", segmentCount: 10, endList: false,
            startTag: "#EXT-X-START:TIME-OFFSET=-25", expected: SegmentPosition(segmentIndex: 5, offset: .zero)),
        StartCase(
            name: "negative offset, precise", segmentCount: 10, endList: false,
            startTag: "#EXT-X-START:TIME-OFFSET=-25,PRECISE=YES",
            expected: SegmentPosition(segmentIndex: 5, offset: .seconds(5))),
        StartCase(
            name: "negative offset beyond the start means the start", segmentCount: 3, endList: false,
            startTag: "#EXT-X-START:TIME-OFFSET=-100,PRECISE=YES",
            expected: SegmentPosition(segmentIndex: 0, offset: .zero)),
        StartCase(
            name: "positive offset beyond the end means the last segment", segmentCount: 3, endList: true,
            startTag: "#EXT-X-START:TIME-OFFSET=100", expected: SegmentPosition(segmentIndex: 2, offset: .zero)),
        StartCase(
            name: "unreadable offset: the tag is ignored", segmentCount: 10, endList: false,
            startTag: "#EXT-X-START:TIME-OFFSET=soon", expected: SegmentPosition(segmentIndex: 7, offset: .zero)),
    ])
    func startPosition(_ test: StartCase) throws {
        let playlist = try parseMedia(
            livePlaylistText(
                firstSequence: 500, count: test.segmentCount, endList: test.endList, extraHeader: test.startTag))
        #expect(playlist.startPosition() == test.expected)
    }

    @Test func liveStartCountsRealDurationsNotSegments() throws {
        // 2 s segments under a 6 s target: 18 s from the end is nine segments back.
        let playlist = try livePlaylist(firstSequence: 0, count: 20, segmentSeconds: 2, targetDuration: 6)
        #expect(playlist.startPosition() == SegmentPosition(segmentIndex: 11, offset: .zero))
    }
}
