import FoundationEssentials
import HLS
import Testing

/// The tags that describe segments: which of them applies to which segment.
@Suite("Media segment tags")
struct SegmentTagTests {
    @Test func byteRangesWithAndWithoutOffsetResolveToAbsoluteOffsets() throws {
        let playlist = try parseMedia(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:10
            #EXT-X-VERSION:4
            #EXTINF:10,
            #EXT-X-BYTERANGE:75232@0
            all.aac
            #EXTINF:10,
            #EXT-X-BYTERANGE:82112
            all.aac
            #EXTINF:10,
            #EXT-X-BYTERANGE:69864
            all.aac
            #EXTINF:10,
            #EXT-X-BYTERANGE:1000@500
            other.aac
            #EXTINF:10,
            #EXT-X-BYTERANGE:5000
            all.aac
            #EXTINF:10,
            whole.aac
            """)
        #expect(
            playlist.segments.map(\.byteRange) == [
                ByteRange(offset: 0, length: 75232), ByteRange(offset: 75232, length: 82112),
                ByteRange(offset: 157_344, length: 69864), ByteRange(offset: 500, length: 1000),
                // Continues all.aac's last sub-range, past other.aac's in between.
                ByteRange(offset: 227_208, length: 5000), nil,
            ])
        #expect(playlist.segments[1].byteRange?.httpRange == "bytes=75232-157343")
        #expect(playlist.segments[1].byteRange?.end == 157_344)
    }

    @Test func byteRangeWithoutOffsetAndNoEarlierRangeOfItsURIIsAnError() {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:10
            #EXTINF:10,
            #EXT-X-BYTERANGE:100@0
            a.aac
            #EXTINF:10,
            #EXT-X-BYTERANGE:100
            b.aac
            """
        #expect(parseError(text) == .byteRangeWithoutPrevious(line: 7))
    }

    @Test func eachSegmentCarriesTheKeyInEffect() throws {
        let playlist = try parseMedia(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:6
            #EXT-X-MEDIA-SEQUENCE:100
            #EXTINF:6,
            clear0.aac
            #EXT-X-KEY:METHOD=AES-128,URI="keys/k1.bin",IV=0x000102030405060708090a0b0c0d0e0f
            #EXTINF:6,
            enc1.aac
            #EXTINF:6,
            enc2.aac
            #EXT-X-KEY:METHOD=AES-128,URI="https://keys.example.org/k2"
            #EXTINF:6,
            enc3.aac
            #EXT-X-KEY:METHOD=NONE
            #EXTINF:6,
            clear4.aac
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="k3",KEYFORMAT="identity",KEYFORMATVERSIONS="1/2"
            #EXTINF:6,
            sample5.aac
            """)
        let k1 = EncryptionKey(
            method: .aes128, uri: url("https://media.example.com/live/radio/keys/k1.bin"), iv: Array(0...15))
        let k2 = EncryptionKey(method: .aes128, uri: url("https://keys.example.org/k2"))
        let k3 = EncryptionKey(
            method: .sampleAES, uri: url("https://media.example.com/live/radio/k3"), keyFormatVersions: [1, 2])
        #expect(playlist.segments.map(\.key) == [nil, k1, k1, k2, nil, k3])
        #expect(playlist.segments.map(\.keys.count) == [0, 1, 1, 1, 0, 1])
    }

    /// The IV: from the key's `IV` when given, else the media sequence number (RFC 8216 §5.2).
    @Test(arguments: [
        (
            "IV=0x9c7db8778570d05c3177c349fd9236aa", 7,
            [
                0x9C, 0x7D, 0xB8, 0x77, 0x85, 0x70, 0xD0, 0x5C,
                0x31, 0x77, 0xC3, 0x49, 0xFD, 0x92, 0x36, 0xAA,
            ] as [UInt8]
        ),
        ("IV=0X1", 7, [UInt8](repeating: 0, count: 15) + [1]),
        ("IV=0x0000000000000000000000000000000000ff", 7, [UInt8](repeating: 0, count: 15) + [0xFF]),
        ("", 7, [UInt8](repeating: 0, count: 15) + [7]),
        ("", 0x0102_0304_0506_0708, [UInt8](repeating: 0, count: 8) + [1, 2, 3, 4, 5, 6, 7, 8]),
    ])
    func initializationVectorComesFromTheTagElseTheSequenceNumber(ivAttribute: String, sequence: Int, iv: [UInt8])
        throws
    {
        let playlist = try parseMedia(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:6
            #EXT-X-MEDIA-SEQUENCE:\(sequence)
            #EXT-X-KEY:METHOD=AES-128,URI="key"\(ivAttribute.isEmpty ? "" : ",")\(ivAttribute)
            #EXTINF:6,
            s.aac
            """)
        #expect(playlist.segments.first?.initializationVector == iv)
    }

    @Test(arguments: ["IV=0xZZ", "IV=12", "IV=0x0100000000000000000000000000000000"])
    func unreadableOrOversizedIVIsAnError(ivAttribute: String) {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:6
            #EXT-X-KEY:METHOD=AES-128,URI="key",\(ivAttribute)
            #EXTINF:6,
            s.aac
            """
        #expect(parseError(text) == .invalidTagValue(line: 3, tag: "EXT-X-KEY"))
    }

    @Test func keyOfAnotherFormatIsKeptButTheIdentityOneIsPreferred() throws {
        let playlist = try parseMedia(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:6
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://drm",KEYFORMAT="com.apple.streamingkeydelivery"
            #EXTINF:6,
            drm-only.aac
            #EXT-X-KEY:METHOD=AES-128,URI="plain.key"
            #EXTINF:6,
            both.aac
            #EXT-X-KEY:METHOD=SAMPLE-AES-CTR,URI="skd://drm2",KEYFORMAT="com.apple.streamingkeydelivery"
            #EXTINF:6,
            replaced.aac
            """)
        let first = try #require(playlist.segments[0].key)
        #expect(first.keyFormat == "com.apple.streamingkeydelivery" && !first.isIdentityFormat)
        #expect(playlist.segments[1].key?.uri == url("https://media.example.com/live/radio/plain.key"))
        #expect(playlist.segments[1].keys.map(\.keyFormat) == ["com.apple.streamingkeydelivery", "identity"])
        #expect(playlist.segments[2].keys.map(\.method) == [.other("SAMPLE-AES-CTR"), .aes128])
    }

    @Test func mapInEffectAppliesUntilReplaced() throws {
        let playlist = try parseMedia(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:4
            #EXTINF:4,
            before.m4s
            #EXT-X-MAP:URI="init.mp4",BYTERANGE="720@0"
            #EXTINF:4,
            a.m4s
            #EXTINF:4,
            b.m4s
            #EXT-X-DISCONTINUITY
            #EXT-X-KEY:METHOD=AES-128,URI="k"
            #EXT-X-MAP:URI="../other/init2.mp4",BYTERANGE="300"
            #EXTINF:4,
            c.m4s
            """)
        let first = MediaInitializationSection(
            uri: url("https://media.example.com/live/radio/init.mp4"), byteRange: ByteRange(offset: 0, length: 720))
        let second = MediaInitializationSection(
            uri: url("https://media.example.com/live/other/init2.mp4"), byteRange: ByteRange(offset: 0, length: 300),
            key: EncryptionKey(method: .aes128, uri: url("https://media.example.com/live/radio/k")))
        #expect(playlist.segments.map(\.map) == [nil, first, first, second])
    }

    @Test func discontinuitiesNumberTheTimelines() throws {
        let playlist = try parseMedia(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:6
            #EXT-X-MEDIA-SEQUENCE:40
            #EXT-X-DISCONTINUITY-SEQUENCE:3
            #EXTINF:6,
            a.aac
            #EXT-X-DISCONTINUITY
            #EXTINF:6,
            b.aac
            #EXTINF:6,
            c.aac
            #EXT-X-DISCONTINUITY
            #EXT-X-GAP
            #EXTINF:6,
            d.aac
            """)
        #expect(playlist.segments.map(\.discontinuity) == [false, true, false, true])
        #expect(playlist.segments.map(\.discontinuitySequenceNumber) == [3, 4, 4, 5])
        #expect(playlist.segments.map(\.mediaSequenceNumber) == [40, 41, 42, 43])
        #expect(playlist.segments.map(\.isGap) == [false, false, false, true])
    }

    @Test func titlesFollowTheFirstCommaOfEXTINF() throws {
        let playlist = try parseMedia(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:10
            #EXTINF:10,Artist - Title, with a comma
            a.aac
            #EXTINF:10,
            b.aac
            #EXTINF:10
            c.aac
            """)
        #expect(playlist.segments.map(\.title) == ["Artist - Title, with a comma", nil, nil])
        #expect(playlist.segments.map(\.duration) == [.seconds(10), .seconds(10), .seconds(10)])
    }
}
