import FoundationEssentials
import HLS
import Testing

/// RFC 8216 §8's master playlist examples (8.4 to 8.9), each parsed into its whole expected
/// value. The RFC wraps long tags with `\` for print; here they are on one line, as served.
@Suite("RFC 8216 §8 master playlist examples")
struct RFCMasterExampleTests {
    struct Example: Sendable, CustomTestStringConvertible {
        let section: String
        let text: String
        let expected: MasterPlaylist
        /// The URIs `audioOnlyVariants` should list.
        let audioOnly: [String]
        var testDescription: String { "§\(section)" }
    }

    static let base = url("https://example.com/hls/master.m3u8")

    static func variant(
        _ uri: String, _ bandwidth: Int, average: Int? = nil, codecs: [String] = [], audio: String? = nil,
        video: String? = nil
    ) -> Variant {
        Variant(
            uri: url(uri), bandwidth: bandwidth, averageBandwidth: average, codecs: codecs, audioGroup: audio,
            videoGroup: video)
    }

    static func videoRendition(_ group: String, _ name: String, isDefault: Bool) -> Rendition {
        let path = "https://example.com/hls/\(group)/\(name.lowercased())/audio-video.m3u8"
        return Rendition(type: .video, groupID: group, name: name, isDefault: isDefault, uri: url(path))
    }

    static let examples: [Example] = [
        Example(
            section: "8.4 master playlist",
            text: """
                #EXTM3U
                #EXT-X-STREAM-INF:BANDWIDTH=1280000,AVERAGE-BANDWIDTH=1000000
                http://example.com/low.m3u8
                #EXT-X-STREAM-INF:BANDWIDTH=2560000,AVERAGE-BANDWIDTH=2000000
                http://example.com/mid.m3u8
                #EXT-X-STREAM-INF:BANDWIDTH=7680000,AVERAGE-BANDWIDTH=6000000
                http://example.com/hi.m3u8
                #EXT-X-STREAM-INF:BANDWIDTH=65000,CODECS="mp4a.40.5"
                http://example.com/audio-only.m3u8
                """,
            expected: MasterPlaylist(
                url: base,
                variants: [
                    variant("http://example.com/low.m3u8", 1_280_000, average: 1_000_000),
                    variant("http://example.com/mid.m3u8", 2_560_000, average: 2_000_000),
                    variant("http://example.com/hi.m3u8", 7_680_000, average: 6_000_000),
                    variant("http://example.com/audio-only.m3u8", 65000, codecs: ["mp4a.40.5"]),
                ]),
            audioOnly: ["http://example.com/audio-only.m3u8"]),
        Example(
            section: "8.5 master playlist with I-frames (I-frame variants skipped)",
            text: """
                #EXTM3U
                #EXT-X-STREAM-INF:BANDWIDTH=1280000
                low/audio-video.m3u8
                #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=86000,URI="low/iframe.m3u8"
                #EXT-X-STREAM-INF:BANDWIDTH=2560000
                mid/audio-video.m3u8
                #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=150000,URI="mid/iframe.m3u8"
                #EXT-X-STREAM-INF:BANDWIDTH=7680000
                hi/audio-video.m3u8
                #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=550000,URI="hi/iframe.m3u8"
                #EXT-X-STREAM-INF:BANDWIDTH=65000,CODECS="mp4a.40.5"
                audio-only.m3u8
                """,
            expected: MasterPlaylist(
                url: base,
                variants: [
                    variant("https://example.com/hls/low/audio-video.m3u8", 1_280_000),
                    variant("https://example.com/hls/mid/audio-video.m3u8", 2_560_000),
                    variant("https://example.com/hls/hi/audio-video.m3u8", 7_680_000),
                    variant("https://example.com/hls/audio-only.m3u8", 65000, codecs: ["mp4a.40.5"]),
                ]),
            audioOnly: ["https://example.com/hls/audio-only.m3u8"]),
        Example(
            section: "8.6 master playlist with alternative audio",
            text: """
                #EXTM3U
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="English",DEFAULT=YES,AUTOSELECT=YES,LANGUAGE="en",URI="main/english-audio.m3u8"
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="Deutsch",DEFAULT=NO,AUTOSELECT=YES,LANGUAGE="de",URI="main/german-audio.m3u8"
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="Commentary",DEFAULT=NO,AUTOSELECT=NO,LANGUAGE="en",URI="commentary/audio-only.m3u8"
                #EXT-X-STREAM-INF:BANDWIDTH=1280000,CODECS="...",AUDIO="aac"
                low/video-only.m3u8
                #EXT-X-STREAM-INF:BANDWIDTH=2560000,CODECS="...",AUDIO="aac"
                mid/video-only.m3u8
                #EXT-X-STREAM-INF:BANDWIDTH=7680000,CODECS="...",AUDIO="aac"
                hi/video-only.m3u8
                #EXT-X-STREAM-INF:BANDWIDTH=65000,CODECS="mp4a.40.5",AUDIO="aac"
                main/english-audio.m3u8
                """,
            expected: MasterPlaylist(
                url: base,
                variants: [
                    variant("https://example.com/hls/low/video-only.m3u8", 1_280_000, codecs: ["..."], audio: "aac"),
                    variant("https://example.com/hls/mid/video-only.m3u8", 2_560_000, codecs: ["..."], audio: "aac"),
                    variant("https://example.com/hls/hi/video-only.m3u8", 7_680_000, codecs: ["..."], audio: "aac"),
                    variant(
                        "https://example.com/hls/main/english-audio.m3u8", 65000, codecs: ["mp4a.40.5"], audio: "aac"),
                ],
                renditions: [
                    Rendition(
                        type: .audio, groupID: "aac", name: "English", language: "en", isDefault: true,
                        autoselect: true, uri: url("https://example.com/hls/main/english-audio.m3u8")),
                    Rendition(
                        type: .audio, groupID: "aac", name: "Deutsch", language: "de", isDefault: false,
                        autoselect: true, uri: url("https://example.com/hls/main/german-audio.m3u8")),
                    Rendition(
                        type: .audio, groupID: "aac", name: "Commentary", language: "en", isDefault: false,
                        autoselect: false, uri: url("https://example.com/hls/commentary/audio-only.m3u8")),
                ]),
            audioOnly: ["https://example.com/hls/main/english-audio.m3u8"]),
        Example(
            section: "8.7 master playlist with alternative video",
            text: """
                #EXTM3U
                #EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="low",NAME="Main",DEFAULT=YES,URI="low/main/audio-video.m3u8"
                #EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="low",NAME="Centerfield",DEFAULT=NO,URI="low/centerfield/audio-video.m3u8"
                #EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="low",NAME="Dugout",DEFAULT=NO,URI="low/dugout/audio-video.m3u8"

                #EXT-X-STREAM-INF:BANDWIDTH=1280000,CODECS="...",VIDEO="low"
                low/main/audio-video.m3u8

                #EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="mid",NAME="Main",DEFAULT=YES,URI="mid/main/audio-video.m3u8"
                #EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="mid",NAME="Centerfield",DEFAULT=NO,URI="mid/centerfield/audio-video.m3u8"
                #EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="mid",NAME="Dugout",DEFAULT=NO,URI="mid/dugout/audio-video.m3u8"

                #EXT-X-STREAM-INF:BANDWIDTH=2560000,CODECS="...",VIDEO="mid"
                mid/main/audio-video.m3u8

                #EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="hi",NAME="Main",DEFAULT=YES,URI="hi/main/audio-video.m3u8"
                #EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="hi",NAME="Centerfield",DEFAULT=NO,URI="hi/centerfield/audio-video.m3u8"
                #EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="hi",NAME="Dugout",DEFAULT=NO,URI="hi/dugout/audio-video.m3u8"

                #EXT-X-STREAM-INF:BANDWIDTH=7680000,CODECS="...",VIDEO="hi"
                hi/main/audio-video.m3u8
                """,
            expected: MasterPlaylist(
                url: base,
                variants: [
                    variant(
                        "https://example.com/hls/low/main/audio-video.m3u8", 1_280_000, codecs: ["..."], video: "low"),
                    variant(
                        "https://example.com/hls/mid/main/audio-video.m3u8", 2_560_000, codecs: ["..."], video: "mid"),
                    variant(
                        "https://example.com/hls/hi/main/audio-video.m3u8", 7_680_000, codecs: ["..."], video: "hi"),
                ],
                renditions: ["low", "mid", "hi"].flatMap { group in
                    [
                        videoRendition(group, "Main", isDefault: true),
                        videoRendition(group, "Centerfield", isDefault: false),
                        videoRendition(group, "Dugout", isDefault: false),
                    ]
                }),
            audioOnly: []),
        Example(
            section: "8.8 session data (skipped), with one variant added to make it a playlist",
            text: """
                #EXTM3U
                #EXT-X-SESSION-DATA:DATA-ID="com.example.lyrics",URI="lyrics.json"

                #EXT-X-SESSION-DATA:DATA-ID="com.example.title",LANGUAGE="en",VALUE="This is an example"
                #EXT-X-SESSION-DATA:DATA-ID="com.example.title",LANGUAGE="es",VALUE="Este es un ejemplo"
                #EXT-X-STREAM-INF:BANDWIDTH=128000
                radio.m3u8
                """,
            expected: MasterPlaylist(url: base, variants: [variant("https://example.com/hls/radio.m3u8", 128_000)]),
            audioOnly: ["https://example.com/hls/radio.m3u8"]),
        Example(
            section: "8.9 CHARACTERISTICS with several characteristics (ignored), in a rendition",
            text: """
                #EXTM3U
                #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="Easy",CHARACTERISTICS="public.accessibility.transcribes-spoken-dialog,public.easy-to-read",URI="subs/easy.m3u8"
                #EXT-X-STREAM-INF:BANDWIDTH=96000,CODECS="mp4a.40.2,wvtt"
                audio.m3u8
                """,
            expected: MasterPlaylist(
                url: base,
                variants: [variant("https://example.com/hls/audio.m3u8", 96000, codecs: ["mp4a.40.2", "wvtt"])],
                renditions: [
                    Rendition(
                        type: .subtitles, groupID: "subs", name: "Easy",
                        uri: url("https://example.com/hls/subs/easy.m3u8"))
                ]),
            audioOnly: ["https://example.com/hls/audio.m3u8"]),
    ]

    @Test(arguments: examples)
    func parsesToItsExpectedValue(_ example: Example) throws {
        let playlist = try parseMaster(example.text, url: Self.base)
        #expect(playlist == example.expected)
    }

    @Test(arguments: examples)
    func listsItsAudioOnlyVariants(_ example: Example) throws {
        let playlist = try parseMaster(example.text, url: Self.base)
        #expect(playlist.audioOnlyVariants.map(\.uri.absoluteString) == example.audioOnly)
    }

    @Test func alternativeAudioVariantsTakeTheirDefaultRendition() throws {
        let playlist = try parseMaster(Self.examples[2].text, url: Self.base)
        let english = url("https://example.com/hls/main/english-audio.m3u8")
        #expect(playlist.variants.map { playlist.audioRendition(for: $0)?.uri } == Array(repeating: english, count: 4))
        #expect(
            playlist.renditions(ofType: .audio, inGroup: "aac").map(\.name) == ["English", "Deutsch", "Commentary"])
        #expect(playlist.renditions(ofType: .video, inGroup: "aac").isEmpty)
    }

    @Test func alternativeVideoVariantsAreVideoAndHaveNoAudioRendition() throws {
        let playlist = try parseMaster(Self.examples[3].text, url: Self.base)
        #expect(playlist.variants.allSatisfy { $0.mediaKind == .video })
        #expect(playlist.variants.allSatisfy { playlist.audioRendition(for: $0) == nil })
        // No audio-only variant: the choice falls back to every variant, the lowest without a measurement.
        #expect(playlist.chooseVariant(throughput: nil)?.bandwidth == 1_280_000)
    }

    @Test func sessionDataAloneIsAMasterPlaylistWithoutVariants() {
        let text = """
            #EXTM3U
            #EXT-X-SESSION-DATA:DATA-ID="com.example.lyrics",URI="lyrics.json"
            """
        #expect(parseError(text) == .noVariants)
    }
}
