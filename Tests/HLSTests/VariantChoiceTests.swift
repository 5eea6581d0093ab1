import HLS
import Testing

/// Which variants are audio, and which one to play for a throughput.
@Suite("Variant choice")
struct VariantChoiceTests {
    /// Audio-only variants of 32, 64, 128 (listed twice) and 256 kbit/s, and one with video.
    static let master = """
        #EXTM3U
        #EXT-X-STREAM-INF:BANDWIDTH=128000,CODECS="mp4a.40.2"
        aac-128.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=32000,CODECS="mp4a.40.5"
        he-32.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS="avc1.4d401f,mp4a.40.2",RESOLUTION=1280x720
        video.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=256000,CODECS="flac"
        flac-256.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="opus"
        opus-64.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=128000,CODECS="mp4a.40.34"
        mp3-128.m3u8
        """

    /// Throughput and ceiling in bit/s → the chosen variant's file (nil: none).
    @Test(
        arguments: [
            (nil, nil, "he-32.m3u8"),  // unknown throughput: the lowest
            (10000, nil, "he-32.m3u8"),  // nothing fits: the lowest
            (0, nil, "he-32.m3u8"),
            (80000, nil, "opus-64.m3u8"),  // 80 % is 64 000: fits exactly
            (79999, nil, "he-32.m3u8"),  // 80 % is 63 999.2: 64 000 no longer fits
            (160000, nil, "aac-128.m3u8"),  // 128 000 twice: the first listed
            (1_000_000, nil, "flac-256.m3u8"),  // the video variant is never a candidate
            (1_000_000, 128_000, "aac-128.m3u8"),  // the ceiling caps a good link
            (nil, 128_000, "he-32.m3u8"),
            (1_000_000, 31999, nil),  // every variant exceeds the ceiling
            (Int.max, nil, "flac-256.m3u8"),  // no overflow on absurd throughput
        ] as [(Int?, Int?, String?)])
    func choosesTheHighestBandwidthWithinEightyPercentOfThroughput(
        throughput: Int?, ceiling: Int?, chosen: String?
    ) throws {
        let playlist = try parseMaster(Self.master)
        #expect(playlist.chooseVariant(throughput: throughput, ceiling: ceiling)?.uri.lastPathComponent == chosen)
    }

    @Test func audioOnlyVariantsExcludeVideo() throws {
        let playlist = try parseMaster(Self.master)
        #expect(
            playlist.audioOnlyVariants.map(\.uri.lastPathComponent) == [
                "aac-128.m3u8", "he-32.m3u8", "flac-256.m3u8", "opus-64.m3u8", "mp3-128.m3u8",
            ])
    }

    /// `CODECS`, `RESOLUTION` and `VIDEO` → what the variant carries.
    @Test(arguments: [
        (#"CODECS="mp4a.40.2""#, Variant.MediaKind.audioOnly),
        (#"CODECS="mp4a.40.2,ec-3,ac-3,Opus,fLaC,mp3""#, .audioOnly),
        (#"CODECS="mp4a.40.2,stpp.ttml.im1t""#, .audioOnly),
        (#"CODECS="avc1.640028,mp4a.40.2""#, .video),
        (#"CODECS="hvc1.2.4.L123.B0""#, .video),
        (#"CODECS="mp4a.40.2",RESOLUTION=416x234"#, .video),
        (#"CODECS="mp4a.40.2",VIDEO="v""#, .video),
        ("", .undeclared),
        (#"CODECS="mp4a.40.2,mystery""#, .undeclared),
        (#"CODECS="...""#, .undeclared),
    ])
    func mediaKindReadsTheAttributes(attributes: String, kind: Variant.MediaKind) throws {
        let separator = attributes.isEmpty ? "" : ","
        let playlist = try parseMaster("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\(separator)\(attributes)\nv.m3u8\n")
        #expect(playlist.variants.first?.mediaKind == kind)
    }

    @Test func undeclaredVariantsCountAsAudioOnlyWhenNothingIsDeclared() throws {
        let playlist = try parseMaster(
            """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=96000
            low.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360
            video.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=192000
            high.m3u8
            """)
        #expect(playlist.audioOnlyVariants.map(\.uri.lastPathComponent) == ["low.m3u8", "high.m3u8"])
        #expect(playlist.chooseVariant(throughput: 10_000_000)?.uri.lastPathComponent == "high.m3u8")
    }

    @Test func variantAttributes() throws {
        let playlist = try parseMaster(
            """
            #EXTM3U
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-VERSION:6
            #EXT-X-START:TIME-OFFSET=-30
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="Stereo",CHANNELS="2",AUTOSELECT=YES,URI="a.m3u8"
            #EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc",NAME="CC1",INSTREAM-ID="CC1"
            #EXT-X-MEDIA:TYPE=METADATA,GROUP-ID="m",NAME="Future type, skipped"
            #EXT-X-STREAM-INF:BANDWIDTH=500000,AVERAGE-BANDWIDTH=400000,CODECS=" mp4a.40.2 , avc1.42e01e ",RESOLUTION=640x360,FRAME-RATE=25.000,AUDIO="aud"
            v.m3u8
            """)
        let variant = try #require(playlist.variants.first)
        #expect(variant.bandwidth == 500_000 && variant.averageBandwidth == 400_000)
        #expect(variant.codecs == ["mp4a.40.2", "avc1.42e01e"])
        #expect(variant.resolution == Resolution(width: 640, height: 360))
        #expect(variant.frameRate == 25)
        #expect(variant.audioGroup == "aud" && variant.videoGroup == nil)
        #expect(playlist.renditions.map(\.type) == [.audio, .closedCaptions])
        #expect(playlist.renditions.first?.channels == "2")
        // Not DEFAULT, but AUTOSELECT: still the group's rendition to play.
        #expect(playlist.audioRendition(for: variant)?.name == "Stereo")
        #expect(playlist.independentSegments && playlist.version == 6)
        #expect(playlist.start == StartPoint(timeOffset: .seconds(-30)))
    }
}
