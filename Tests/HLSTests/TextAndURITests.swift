import FoundationEssentials
import HLS
import Testing

/// Line endings, byte order marks, whitespace, dates and URI resolution.
@Suite("Playlist text and URIs")
struct TextAndURITests {
    static let lines = [
        "#EXTM3U", "#EXT-X-TARGETDURATION:10", "#EXTINF:9.5,Title", "a.aac", "#EXTINF:10,", "b.aac", "#EXT-X-ENDLIST",
    ]

    /// Spellings of one two-segment playlist, by name.
    static var spellings: [(String, String)] {
        let lf: String = lines.joined(separator: "\n")
        let crlf: String = lines.joined(separator: "\r\n")
        let commented: String = lines.joined(separator: "\n\n# a comment\n   \n")
        let padded: [String] = lines.map { " \t\($0)  " }
        var mixed = ""
        for (index, line) in lines.enumerated() { mixed += line + (index % 2 == 0 ? "\r\n" : "\n") }
        return [
            ("LF", lf), ("CRLF", crlf + "\r\n"), ("BOM and CRLF", "\u{FEFF}" + crlf),
            ("BOM and LF", "\u{FEFF}" + lf + "\n"), ("blank lines and comments", "\n\n" + commented + "\n\n"),
            ("surrounding whitespace", padded.joined(separator: "\r\n")), ("mixed endings", mixed),
        ]
    }

    /// Every spelling is the same two-segment playlist.
    @Test(arguments: spellings)
    func equivalentSpellingsParseAlike(name: String, text: String) throws {
        let playlist = try parseMedia(text)
        #expect(playlist.segments.map(\.uri.lastPathComponent) == ["a.aac", "b.aac"])
        #expect(playlist.segments.map(\.duration) == [.milliseconds(9500), .seconds(10)])
        #expect(playlist.segments.first?.title == "Title")
        #expect(playlist.endList)
    }

    @Test func bytesMustBeUTF8() {
        let valid = Array(Self.lines.joined(separator: "\n").utf8)
        #expect((try? HLSParser.parse(data: valid, url: playlistURL).get())?.media?.segments.count == 2)
        #expect(HLSParser.parse(data: valid + [0xFF, 0xFE], url: playlistURL) == .failure(.notUTF8))
    }

    /// Segment URIs against `https://media.example.com/live/radio/index.m3u8`.
    @Test(arguments: [
        ("seg.aac", "https://media.example.com/live/radio/seg.aac"),
        ("sub/seg.aac?token=a%20b", "https://media.example.com/live/radio/sub/seg.aac?token=a%20b"),
        ("../seg.aac", "https://media.example.com/live/seg.aac"),
        ("../../up/seg.aac", "https://media.example.com/up/seg.aac"),
        ("/root/seg.aac", "https://media.example.com/root/seg.aac"),
        ("//cdn.example.net/seg.aac", "https://cdn.example.net/seg.aac"),
        ("http://other.example.org/x/seg.aac", "http://other.example.org/x/seg.aac"),
        ("https://other.example.org/seg.aac#t=1", "https://other.example.org/seg.aac#t=1"),
    ])
    func segmentURIsResolveAgainstThePlaylistURL(written: String, resolved: String) throws {
        let playlist = try parseMedia("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\n\(written)\n")
        #expect(playlist.segments.first?.uri.absoluteString == resolved)
    }

    @Test func variantAndRenditionURIsResolveAgainstTheMasterURL() throws {
        let master = try parseMaster(
            """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="Main",URI="../audio/main.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=64000
            64k/index.m3u8
            """, url: url("https://radio.example.com/streams/station/master.m3u8"))
        #expect(master.variants.first?.uri.absoluteString == "https://radio.example.com/streams/station/64k/index.m3u8")
        #expect(master.renditions.first?.uri?.absoluteString == "https://radio.example.com/streams/audio/main.m3u8")
    }

    /// `EXT-X-PROGRAM-DATE-TIME` spellings, as seconds since 1970 (nil: ignored, the parse succeeds).
    @Test(
        arguments: [
            ("2010-02-19T14:54:23.031+08:00", 1_266_562_463.031),
            ("2010-02-19T06:54:23.031Z", 1_266_562_463.031),
            ("2010-02-19T06:54:23Z", 1_266_562_463),
            ("2010-02-19T01:54:23-0500", 1_266_562_463),
            ("2010-02-19T06:54:23", 1_266_562_463),
            ("2000-02-29T23:59:59.5+00", 951_868_799.5),
            ("1970-01-01T00:00:00Z", 0),
            ("2010-02-19", nil),
            ("2010-13-19T06:54:23Z", nil),
            ("2010-02-19T06:54:23Zjunk", nil),
            ("yesterday", nil),
        ] as [(String, Double?)])
    func programDateTimeReadsISO8601(written: String, secondsSince1970: Double?) throws {
        let playlist = try parseMedia(
            "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-PROGRAM-DATE-TIME:\(written)\n#EXTINF:6,\na.aac\n")
        let date = playlist.segments.first?.programDateTime?.timeIntervalSince1970
        if let secondsSince1970 {
            #expect(abs((date ?? .infinity) - secondsSince1970) < 0.000_5)
        } else {
            #expect(date == nil)
        }
    }

    @Test func programDateTimeExtrapolatesWithinATimelineOnly() throws {
        let playlist = try parseMedia(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:10
            #EXTINF:10,
            a.aac
            #EXTINF:10,
            b.aac
            #EXT-X-PROGRAM-DATE-TIME:2010-02-19T06:54:20Z
            #EXTINF:10,
            c.aac
            #EXTINF:10,
            d.aac
            #EXT-X-DISCONTINUITY
            #EXTINF:10,
            e.aac
            """)
        let dated = 1_266_562_460.0
        #expect(
            (0..<5).map { playlist.programDateTime(ofSegmentAt: $0)?.timeIntervalSince1970 } == [
                dated - 20, dated - 10, dated, dated + 10, nil,
            ])
        #expect(playlist.programDateTime(ofSegmentAt: 5) == nil)
    }

    @Test func unknownTagsAttributesAndCommentsAreIgnored() throws {
        let playlist = try parseMedia(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:6
            #EXT-X-SOMETHING-NEW:FOO=1
            #EXT-X-START:TIME-OFFSET=-12,PRECISE=YES,FUTURE="x,y"
            #EXT-X-PLAYLIST-TYPE:SOMETIMES
            #EXTINF:6,
            # not a tag
            #EXTX-ODD
            a.aac
            """)
        #expect(playlist.segments.count == 1)
        #expect(playlist.start == StartPoint(timeOffset: .seconds(-12), precise: true))
        #expect(playlist.playlistType == nil)
    }

    @Test func headerTagsOfAMediaPlaylist() throws {
        let playlist = try parseMedia(
            """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-TARGETDURATION:6
            #EXT-X-PLAYLIST-TYPE:EVENT
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-I-FRAMES-ONLY
            #EXTINF:6,
            a.aac
            """)
        #expect(playlist.version == 7)
        #expect(playlist.playlistType == .event)
        #expect(playlist.independentSegments && playlist.iFramesOnly)
        #expect(playlist.isLive)
        let vod = try parseMedia("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-PLAYLIST-TYPE:VOD\n")
        #expect(vod.playlistType == .vod && !vod.isLive && vod.segments.isEmpty)
    }
}
