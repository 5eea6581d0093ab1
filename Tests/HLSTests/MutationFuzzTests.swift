import FoundationEssentials
import HLS
import Testing

/// Random mutations of valid playlists never crash the parser, and whatever it answers holds
/// together: a parsed playlist keeps its invariants, an error names a line that exists.
@Suite("Mutation fuzz")
struct MutationFuzzTests {
    /// Valid playlists touching every tag the parser reads.
    static let seeds = [
        """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:6
        #EXT-X-MEDIA-SEQUENCE:2680
        #EXT-X-DISCONTINUITY-SEQUENCE:2
        #EXT-X-INDEPENDENT-SEGMENTS
        #EXT-X-START:TIME-OFFSET=-12.5,PRECISE=YES
        #EXT-X-KEY:METHOD=AES-128,URI="../keys/k1",IV=0x00112233445566778899aabbccddeeff
        #EXT-X-MAP:URI="init.mp4",BYTERANGE="720@0"
        #EXT-X-PROGRAM-DATE-TIME:2024-05-01T10:00:00.000Z
        #EXTINF:5.995,first
        #EXT-X-BYTERANGE:10000@720
        media.mp4
        #EXTINF:6.000,
        #EXT-X-BYTERANGE:10000
        media.mp4
        #EXT-X-DISCONTINUITY
        #EXT-X-KEY:METHOD=NONE
        #EXT-X-GAP
        #EXTINF:6,
        https://cdn.example.net/gap.aac
        #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://x",KEYFORMAT="com.example"
        #EXTINF:4.5,
        last.aac
        #EXT-X-ENDLIST
        """,
        """
        #EXTM3U
        #EXT-X-INDEPENDENT-SEGMENTS
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="English",DEFAULT=YES,AUTOSELECT=YES,LANGUAGE="en",URI="en.m3u8"
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="Deutsch",LANGUAGE="de",URI="de.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=1280000,AVERAGE-BANDWIDTH=1000000,CODECS="avc1.4d401f,mp4a.40.2",RESOLUTION=640x360,AUDIO="aac"
        low/video.m3u8
        #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=86000,URI="low/iframe.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=65000,CODECS="mp4a.40.5"
        audio-only.m3u8
        """,
    ]

    /// A deterministic generator (SplitMix64), so a failure replays.
    struct SplitMix64: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            return mixed ^ (mixed >> 31)
        }
    }

    static func mutate(_ text: String, using random: inout SplitMix64) -> [UInt8] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { Array($0.utf8) }
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let index = Int.random(in: 0..<lines.count, using: &random)
            switch Int.random(in: 0..<7, using: &random) {
            case 0: lines.remove(at: index)
            case 1: lines.insert(lines[index], at: index)
            case 2: lines.swapAt(index, Int.random(in: 0..<lines.count, using: &random))
            case 3: lines[index] = Array(lines[index].prefix(Int.random(in: 0...lines[index].count, using: &random)))
            case 4:
                let garbage = (0..<Int.random(in: 1...8, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
                lines[index].insert(contentsOf: garbage, at: Int.random(in: 0...lines[index].count, using: &random))
            case 5:
                // Structural characters in odd places: quotes, commas, @, colons, CR.
                let character = Array(#""@,:=\#r0x-."#.utf8).randomElement(using: &random) ?? UInt8(ascii: "\"")
                lines[index].insert(character, at: Int.random(in: 0...lines[index].count, using: &random))
            default: lines.shuffle(using: &random)
            }
            if lines.isEmpty { lines = [[]] }
        }
        return Array(lines.joined(separator: [UInt8(ascii: "\n")]))
    }

    @Test func twoThousandMutationsNeverCrashAndAnswerConsistently() {
        var random = SplitMix64(state: 8216)
        var parsed = 0
        var refused = 0
        for round in 0..<2000 {
            let seed = Self.seeds[round % Self.seeds.count]
            let bytes = Self.mutate(seed, using: &random)
            let lineCount = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).count
            switch HLSParser.parse(data: bytes, url: playlistURL) {
            case .success(.media(let playlist)):
                parsed += 1
                #expect(playlist.targetDuration > .zero)
                for (index, segment) in playlist.segments.enumerated() {
                    #expect(segment.mediaSequenceNumber == playlist.mediaSequence + index)
                    #expect(segment.duration >= .zero)
                    #expect(segment.uri.scheme != nil)
                    #expect(segment.initializationVector.count == 16)
                    if let range = segment.byteRange { #expect(range.offset >= 0 && range.length >= 0) }
                }
                _ = playlist.startPosition()
                _ = playlist.segmentPosition(at: playlist.totalDuration / 2)
            case .success(.master(let playlist)):
                parsed += 1
                #expect(!playlist.variants.isEmpty)
                #expect(playlist.variants.allSatisfy { $0.uri.scheme != nil && $0.bandwidth >= 0 })
                _ = playlist.chooseVariant(throughput: 100_000)
            case .failure(let error):
                refused += 1
                #expect(!error.description.isEmpty)
                if let line = error.line { #expect((1...lineCount).contains(line), "\(error)") }
            }
        }
        // The mutations must exercise both outcomes, or the test proves little.
        #expect(parsed > 100)
        #expect(refused > 100)
    }

    /// Not a timing test: it proves a 10,000-segment playlist parses whole (the parse takes a few
    /// milliseconds in a release build).
    @Test func tenThousandSegmentsParse() throws {
        let playlist = try livePlaylist(firstSequence: 1_000_000, count: 10000, segmentSeconds: 6)
        #expect(playlist.segments.count == 10000)
        #expect(playlist.segments.last?.mediaSequenceNumber == 1_009_999)
        #expect(playlist.totalDuration == .seconds(60000))
        #expect(playlist.startPosition() == SegmentPosition(segmentIndex: 9997, offset: .zero))
    }
}
