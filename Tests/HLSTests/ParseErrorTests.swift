import FoundationEssentials
import HLS
import Testing

/// Texts the parser refuses, and the error each gets.
@Suite("Parse errors")
struct ParseErrorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let text: String
        let error: HLSParseError
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "empty text", text: "", error: .missingHeader),
        Case(name: "blank lines only", text: "\n \r\n\t\n", error: .missingHeader),
        Case(name: "plain M3U", text: "a.mp3\nb.mp3\n", error: .missingHeader),
        Case(name: "header not first", text: "#EXT-X-VERSION:3\n#EXTM3U\n", error: .missingHeader),
        Case(name: "header misspelled", text: "#EXTM3UX\n#EXT-X-TARGETDURATION:6\n", error: .missingHeader),
        Case(name: "no target duration", text: "#EXTM3U\n#EXTINF:6,\na.aac\n", error: .missingTargetDuration),
        Case(name: "header only", text: "#EXTM3U\n", error: .missingTargetDuration),
        Case(
            name: "target duration not a number", text: "#EXTM3U\n#EXT-X-TARGETDURATION:ten\n",
            error: .invalidTargetDuration(line: 2)),
        Case(
            name: "target duration zero", text: "#EXTM3U\n#EXT-X-TARGETDURATION:0\n",
            error: .invalidTargetDuration(line: 2)),
        Case(
            name: "target duration negative", text: "#EXTM3U\n#EXT-X-TARGETDURATION:-6\n",
            error: .invalidTargetDuration(line: 2)),
        Case(
            name: "target duration empty", text: "#EXTM3U\n#EXT-X-TARGETDURATION\n",
            error: .invalidTargetDuration(line: 2)),
        Case(
            name: "EXTINF at the end", text: "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\n",
            error: .segmentWithoutURI(line: 3)),
        Case(
            name: "EXTINF followed by EXTINF",
            text: "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\n#EXTINF:6,\na.aac\n",
            error: .segmentWithoutURI(line: 3)),
        Case(
            name: "URI without EXTINF", text: "#EXTM3U\n#EXT-X-TARGETDURATION:6\na.aac\n",
            error: .segmentWithoutDuration(line: 3)),
        Case(
            name: "EXTINF unreadable", text: "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:six,\na.aac\n",
            error: .invalidTagValue(line: 3, tag: "EXTINF")),
        Case(
            name: "EXTINF negative", text: "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:-1,\na.aac\n",
            error: .invalidTagValue(line: 3, tag: "EXTINF")),
        Case(
            name: "media sequence unreadable", text: "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:x\n",
            error: .invalidTagValue(line: 3, tag: "EXT-X-MEDIA-SEQUENCE")),
        Case(
            name: "media sequence overflowing as segments are numbered",
            text: "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:9223372036854775807\n#EXTINF:6,\na\n",
            error: .invalidTagValue(line: 3, tag: "EXT-X-MEDIA-SEQUENCE")),
        Case(
            name: "byte range unreadable", text: "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-BYTERANGE:10@x\n",
            error: .invalidTagValue(line: 3, tag: "EXT-X-BYTERANGE")),
        Case(
            name: "key without method", text: "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-KEY:URI=\"k\"\n",
            error: .missingAttribute(line: 3, tag: "EXT-X-KEY", attribute: "METHOD")),
        Case(
            name: "key without URI", text: "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-KEY:METHOD=AES-128\n",
            error: .missingAttribute(line: 3, tag: "EXT-X-KEY", attribute: "URI")),
        Case(
            name: "map without URI", text: "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-MAP:BYTERANGE=\"1@0\"\n",
            error: .missingAttribute(line: 3, tag: "EXT-X-MAP", attribute: "URI")),
        Case(
            name: "segment URI not a URL", text: "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\nhttp://[::1\n",
            error: .invalidURI(line: 4)),
        Case(
            name: "master tag in a media playlist",
            text: "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n",
            error: .mixedPlaylistKinds(line: 3, tag: "EXT-X-STREAM-INF")),
        Case(
            name: "media tag in a master playlist",
            text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n#EXTINF:6,\na.aac\n",
            error: .mixedPlaylistKinds(line: 4, tag: "EXTINF")),
        Case(
            name: "master without variants", text: "#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"n\"\n",
            error: .noVariants),
        Case(
            name: "variant without bandwidth", text: "#EXTM3U\n#EXT-X-STREAM-INF:CODECS=\"mp4a.40.2\"\nv.m3u8\n",
            error: .variantWithoutBandwidth(line: 2)),
        Case(
            name: "variant with unreadable bandwidth", text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=fast\nv.m3u8\n",
            error: .variantWithoutBandwidth(line: 2)),
        Case(
            name: "variant at the end", text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n",
            error: .variantWithoutURI(line: 2)),
        Case(
            name: "variant followed by variant",
            text: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n#EXT-X-STREAM-INF:BANDWIDTH=2\nv.m3u8\n",
            error: .variantWithoutURI(line: 2)),
        Case(
            name: "rendition without group", text: "#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,NAME=\"n\"\n",
            error: .missingAttribute(line: 2, tag: "EXT-X-MEDIA", attribute: "GROUP-ID")),
    ]

    @Test(arguments: cases)
    func refusesWithItsError(_ test: Case) {
        #expect(parseError(test.text) == test.error)
    }

    @Test(arguments: cases)
    func errorsDescribeThemselvesWithTheirLine(_ test: Case) {
        let description = test.error.description
        #expect(!description.isEmpty)
        let line = test.error.line
        if let line { #expect(description.hasPrefix("line \(line): ")) }
    }

    /// RFC 8216 §4.3.3.1 says a rounded EXTINF MUST NOT exceed the target duration; servers break
    /// it and players play on, so it parses, and the playlist lists the offenders.
    @Test func segmentLongerThanTheTargetDurationIsAcceptedAndListed() throws {
        let playlist = try parseMedia(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:6
            #EXTINF:6.499,
            rounds-down.aac
            #EXTINF:6.5,
            rounds-up.aac
            #EXTINF:12,
            double.aac
            """)
        #expect(playlist.segments.count == 3)
        #expect(playlist.segmentsExceedingTargetDuration == [1, 2])
    }

    @Test func fractionalTargetDurationIsAccepted() throws {
        #expect(try parseMedia("#EXTM3U\n#EXT-X-TARGETDURATION:6.5\n").targetDuration == .milliseconds(6500))
    }
}
