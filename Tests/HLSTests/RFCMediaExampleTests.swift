import FoundationEssentials
import HLS
import Testing

/// RFC 8216 §8's media playlist examples (8.1, 8.2, 8.3, 8.10), each parsed into its whole
/// expected value.
@Suite("RFC 8216 §8 media playlist examples")
struct RFCMediaExampleTests {
    struct Example: Sendable, CustomTestStringConvertible {
        let section: String
        let text: String
        let expected: MediaPlaylist
        var testDescription: String { "§\(section)" }
    }

    static let base = url("https://example.com/hls/index.m3u8")

    static let examples: [Example] = [
        Example(
            section: "8.1 simple media playlist",
            text: """
                #EXTM3U
                #EXT-X-TARGETDURATION:10
                #EXT-X-VERSION:3
                #EXTINF:9.009,
                http://media.example.com/first.ts
                #EXTINF:9.009,
                http://media.example.com/second.ts
                #EXTINF:3.003,
                http://media.example.com/third.ts
                #EXT-X-ENDLIST
                """,
            expected: MediaPlaylist(
                url: base, version: 3, targetDuration: .seconds(10), endList: true,
                segments: [
                    MediaSegment(
                        uri: url("http://media.example.com/first.ts"), duration: .milliseconds(9009),
                        mediaSequenceNumber: 0),
                    MediaSegment(
                        uri: url("http://media.example.com/second.ts"), duration: .milliseconds(9009),
                        mediaSequenceNumber: 1),
                    MediaSegment(
                        uri: url("http://media.example.com/third.ts"), duration: .milliseconds(3003),
                        mediaSequenceNumber: 2),
                ])),
        Example(
            section: "8.2 live media playlist using HTTPS",
            text: """
                #EXTM3U
                #EXT-X-VERSION:3
                #EXT-X-TARGETDURATION:8
                #EXT-X-MEDIA-SEQUENCE:2680

                #EXTINF:7.975,
                https://priv.example.com/fileSequence2680.ts
                #EXTINF:7.941,
                https://priv.example.com/fileSequence2681.ts
                #EXTINF:7.975,
                https://priv.example.com/fileSequence2682.ts
                """,
            expected: MediaPlaylist(
                url: base, version: 3, targetDuration: .seconds(8), mediaSequence: 2680,
                segments: [
                    MediaSegment(
                        uri: url("https://priv.example.com/fileSequence2680.ts"), duration: .milliseconds(7975),
                        mediaSequenceNumber: 2680),
                    MediaSegment(
                        uri: url("https://priv.example.com/fileSequence2681.ts"), duration: .milliseconds(7941),
                        mediaSequenceNumber: 2681),
                    MediaSegment(
                        uri: url("https://priv.example.com/fileSequence2682.ts"), duration: .milliseconds(7975),
                        mediaSequenceNumber: 2682),
                ])),
        Example(
            section: "8.3 playlist with encrypted media segments",
            text: """
                #EXTM3U
                #EXT-X-VERSION:3
                #EXT-X-MEDIA-SEQUENCE:7794
                #EXT-X-TARGETDURATION:15

                #EXT-X-KEY:METHOD=AES-128,URI="https://priv.example.com/key.php?r=52"

                #EXTINF:2.833,
                http://media.example.com/fileSequence52-A.ts
                #EXTINF:15.0,
                http://media.example.com/fileSequence52-B.ts
                #EXTINF:13.333,
                http://media.example.com/fileSequence52-C.ts

                #EXT-X-KEY:METHOD=AES-128,URI="https://priv.example.com/key.php?r=53"

                #EXTINF:15.0,
                http://media.example.com/fileSequence53-A.ts
                """,
            expected: MediaPlaylist(
                url: base, version: 3, targetDuration: .seconds(15), mediaSequence: 7794,
                segments: [
                    MediaSegment(
                        uri: url("http://media.example.com/fileSequence52-A.ts"), duration: .milliseconds(2833),
                        key: key52, mediaSequenceNumber: 7794),
                    MediaSegment(
                        uri: url("http://media.example.com/fileSequence52-B.ts"), duration: .seconds(15), key: key52,
                        mediaSequenceNumber: 7795),
                    MediaSegment(
                        uri: url("http://media.example.com/fileSequence52-C.ts"), duration: .milliseconds(13333),
                        key: key52, mediaSequenceNumber: 7796),
                    MediaSegment(
                        uri: url("http://media.example.com/fileSequence53-A.ts"), duration: .seconds(15), key: key53,
                        mediaSequenceNumber: 7797),
                ])),
        Example(
            section: "8.10 EXT-X-DATERANGE carrying SCTE-35 tags (ignored), in a playlist of 60 s",
            text: """
                #EXTM3U
                #EXT-X-TARGETDURATION:10
                #EXT-X-PROGRAM-DATE-TIME:2014-03-05T11:14:50Z
                #EXTINF:10,
                pre.ts
                #EXT-X-DATERANGE:ID="splice-6FFFFFF0",START-DATE="2014-03-05T11:15:00Z",PLANNED-DURATION=59.993,SCTE35-OUT=0xFC002F0000000000FF000014056FFFFFF000E011622DCAFF000052636200000000000A0008029896F50000008700000000
                #EXTINF:30,
                ad1.ts
                #EXTINF:29.993,
                ad2.ts
                #EXT-X-DATERANGE:ID="splice-6FFFFFF0",DURATION=59.993,SCTE35-IN=0xFC002A0000000000FF00000F056FFFFFF000401162802E6100000000000A0008029896F50000008700000000
                #EXT-X-ENDLIST
                """,
            expected: MediaPlaylist(
                url: base, targetDuration: .seconds(10), endList: true,
                segments: [
                    MediaSegment(
                        uri: url("https://example.com/hls/pre.ts"), duration: .seconds(10),
                        programDateTime: Date(timeIntervalSince1970: 1_394_018_090), mediaSequenceNumber: 0),
                    MediaSegment(
                        uri: url("https://example.com/hls/ad1.ts"), duration: .seconds(30), mediaSequenceNumber: 1),
                    MediaSegment(
                        uri: url("https://example.com/hls/ad2.ts"), duration: .milliseconds(29993),
                        mediaSequenceNumber: 2),
                ])),
    ]

    static let key52 = EncryptionKey(method: .aes128, uri: url("https://priv.example.com/key.php?r=52"))
    static let key53 = EncryptionKey(method: .aes128, uri: url("https://priv.example.com/key.php?r=53"))

    @Test(arguments: examples)
    func parsesToItsExpectedValue(_ example: Example) throws {
        let playlist = try parseMedia(example.text, url: Self.base)
        #expect(playlist == example.expected)
    }

    @Test func simplePlaylistIsOnDemandAndSumsItsDurations() throws {
        let playlist = try parseMedia(Self.examples[0].text, url: Self.base)
        #expect(playlist.totalDuration == .milliseconds(21021))
        #expect(!playlist.isLive)
        #expect(playlist.startPosition() == SegmentPosition(segmentIndex: 0, offset: .zero))
    }

    @Test func liveExampleIsShorterThanThreeTargetDurationsSoStartsAtItsFirstSegment() throws {
        let playlist = try parseMedia(Self.examples[1].text, url: Self.base)
        #expect(playlist.isLive)
        #expect(playlist.totalDuration == .milliseconds(23891))
        #expect(playlist.startPosition() == SegmentPosition(segmentIndex: 0, offset: .zero))
    }

    @Test func encryptedExampleUsesTheSequenceNumberAsIV() throws {
        let playlist = try parseMedia(Self.examples[2].text, url: Self.base)
        // 7794 = 0x1E72, as a 128-bit big-endian number.
        #expect(playlist.segments[0].initializationVector == [UInt8](repeating: 0, count: 14) + [0x1E, 0x72])
        #expect(playlist.segments[3].initializationVector == [UInt8](repeating: 0, count: 14) + [0x1E, 0x75])
        // 15.0 rounds to 15 and 13.333 to 13: none exceeds the target duration.
        #expect(playlist.segmentsExceedingTargetDuration.isEmpty)
    }

    @Test func dateRangeExampleExtrapolatesTheProgramDateTime() throws {
        let playlist = try parseMedia(Self.examples[3].text, url: Self.base)
        #expect(playlist.programDateTime(ofSegmentAt: 1) == Date(timeIntervalSince1970: 1_394_018_100))
        #expect(playlist.programDateTime(ofSegmentAt: 2) == Date(timeIntervalSince1970: 1_394_018_130))
        #expect(playlist.segmentsExceedingTargetDuration == [1, 2])
    }
}
