import Fetcher
import TestSupport
import Testing

// MARK: Helpers

/// A piece a stripper emitted; neighbouring audio parts are joined, so any two chunkings of
/// one body compare equal.
private enum Emitted: Equatable {
    case audio(count: Int)
    case metadata(ICYMetadata)
}

/// Everything a stripper emitted for one body.
private struct Stripped: Equatable {
    /// The audio bytes, copied out of the chunks.
    var audio: [UInt8] = []
    /// The pieces in the order they came.
    var layout: [Emitted] = []
    var audioBytes: Int64 = 0
    /// Whether an audio part was empty, which a stripper never needs to emit.
    var emittedEmptyAudio = false

    var metadata: [ICYMetadata] { layout.compactMap { if case .metadata(let found) = $0 { found } else { nil } } }

    mutating func appendAudio(_ bytes: some Collection<UInt8>) {
        audio.append(contentsOf: bytes)
        if case .audio(let count) = layout.last {
            layout[layout.count - 1] = .audio(count: count + bytes.count)
        } else {
            layout.append(.audio(count: bytes.count))
        }
        audioBytes += Int64(bytes.count)
    }
}

/// A metadata block as sent, and what it should parse to.
private struct Block {
    var bytes: [UInt8]
    var metadata: ICYMetadata?

    /// A block of length zero: no metadata this time.
    static let empty = Block(bytes: [], metadata: nil)

    static func title(_ title: String, url: String? = nil) -> Block {
        let urlField = url.map { "StreamUrl='\($0)';" } ?? ""
        return Block(
            bytes: Array("StreamTitle='\(title)';\(urlField)".utf8),
            metadata: ICYMetadata(streamTitle: title, streamURL: url))
    }
}

/// A body as a server sends it: `audio` cut after every `metaInterval` bytes by the next of
/// `blocks` (length zero once they run out), and what a stripper should emit for it.
private struct ICYBody {
    var bytes: [UInt8] = []
    var expected = Stripped()

    init(audio: [UInt8], metaInterval: Int, blocks: [Block]) {
        var blocks = blocks[...]
        var offset = 0
        while offset < audio.count {
            let end = min(audio.count, offset + metaInterval)
            bytes += audio[offset..<end]
            expected.appendAudio(audio[offset..<end])
            guard end - offset == metaInterval else { break }
            offset = end
            let block = blocks.popFirst() ?? .empty
            precondition(block.bytes.count <= 255 * 16, "a block holds at most 4080 bytes")
            let sixteens = (block.bytes.count + 15) / 16
            bytes.append(UInt8(sixteens))
            bytes += block.bytes + [UInt8](repeating: 0, count: sixteens * 16 - block.bytes.count)
            if let metadata = block.metadata { expected.layout.append(.metadata(metadata)) }
        }
    }
}

/// Feeds `chunks` of `body` to a new stripper and records what it emits.
private func strip(_ body: [UInt8], metaInterval: Int, chunks: [Range<Int>]) -> Stripped {
    var stripper = ICYStripper(metaInterval: metaInterval)
    var result = Stripped()
    body.withUnsafeBytes { all in
        for chunk in chunks {
            stripper.feed(UnsafeRawBufferPointer(rebasing: all[chunk])) { piece in
                switch piece {
                case .audio(let bytes):
                    result.emittedEmptyAudio = result.emittedEmptyAudio || bytes.isEmpty
                    result.appendAudio(bytes)
                case .metadata(let metadata):
                    result.layout.append(.metadata(metadata))
                }
            }
        }
    }
    result.audioBytes = stripper.audioBytes
    return result
}

/// The body in chunks of random sizes from 0 to `maxSize`.
private func randomChunks(of count: Int, maxSize: Int, seed: UInt64) -> [Range<Int>] {
    var generator = SeededGenerator(seed: seed)
    var chunks: [Range<Int>] = []
    var start = 0
    while start < count {
        let end = min(count, start + generator.next(below: maxSize + 1))
        chunks.append(start..<end)
        start = end
    }
    return chunks
}

/// The whole body, then one byte at a time, then random sizes from three seeds.
private func chunkings(of count: Int, maxSize: Int) -> [(String, [Range<Int>])] {
    [("whole", [0..<count]), ("bytes", (0..<count).map { $0..<$0 + 1 })]
        + (1...3).map { seed in ("seed \(seed)", randomChunks(of: count, maxSize: maxSize, seed: seed)) }
}

private func randomBytes(_ count: Int, _ generator: inout SeededGenerator) -> [UInt8] {
    (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
}

// MARK: Stripper

@Suite("ICY metadata stripping")
struct ICYStripperTests {
    @Test(arguments: [1, 2, 16, 1000, 16000])
    func everyChunkingEmitsTheOriginalAudioAndTheSameMetadata(metaInterval: Int) {
        var generator = SeededGenerator(seed: UInt64(metaInterval))
        let audio = randomBytes(metaInterval * 5 + metaInterval / 2 + 3, &generator)
        let blocks: [Block] = [.title("One"), .empty, .title("Two", url: "http://x/two"), .empty, .title("")]
        let body = ICYBody(audio: audio, metaInterval: metaInterval, blocks: blocks)
        #expect(body.expected.audio == audio)
        #expect(body.expected.metadata.map(\.streamTitle) == ["One", "Two", ""])
        for (name, chunks) in chunkings(of: body.bytes.count, maxSize: 2 * metaInterval + 40) {
            let stripped = strip(body.bytes, metaInterval: metaInterval, chunks: chunks)
            #expect(stripped == body.expected, "\(name)")
            #expect(stripped.audioBytes == Int64(audio.count), "\(name)")
        }
    }

    /// Every pair of cut points: each byte, length bytes included, lands at a chunk's start,
    /// end and middle, and empty chunks are fed too.
    @Test func everySplitIntoThreeChunksEmitsTheSame() {
        let audio = Array(UInt8(100)..<UInt8(122))
        let body = ICYBody(
            audio: audio, metaInterval: 5, blocks: [.title("Hi"), .empty, .title("Yo", url: "u"), .title("Last")])
        let count = body.bytes.count
        var mismatches: [String] = []
        for first in 0...count {
            for second in first...count {
                let chunks = [0..<first, first..<second, second..<count]
                if strip(body.bytes, metaInterval: 5, chunks: chunks) != body.expected {
                    mismatches.append("cut at \(first) and \(second)")
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) mismatches, first: \(mismatches.prefix(3))")
        #expect(body.expected.metadata.map(\.streamTitle) == ["Hi", "Yo", "Last"])
    }

    @Test func blocksOfLengthZeroEmitNothing() {
        let audio = Array(UInt8(0)..<UInt8(30))
        let body = ICYBody(audio: audio, metaInterval: 3, blocks: [])
        #expect(body.bytes.count == 30 + 10)
        let stripped = strip(body.bytes, metaInterval: 3, chunks: [0..<body.bytes.count])
        #expect(stripped.layout == [.audio(count: 30)])
        #expect(stripped.audio == audio)
        #expect(stripped.audioBytes == 30)
    }

    @Test func aBlockOfTheLargestSize4080BytesIsParsedWhole() {
        let title = "Artist - " + String(repeating: "x", count: 4080 - "StreamTitle='Artist - ';".utf8.count)
        let block = Block.title(title)
        #expect(block.bytes.count == 4080)
        let audio = Array(repeating: UInt8(7), count: 2500)
        let body = ICYBody(audio: audio, metaInterval: 1000, blocks: [block, block])
        #expect(body.bytes[1000] == 255)
        for (name, chunks) in chunkings(of: body.bytes.count, maxSize: 3000) {
            let stripped = strip(body.bytes, metaInterval: 1000, chunks: chunks)
            #expect(stripped.metadata == [block.metadata, block.metadata].compactMap { $0 }, "\(name)")
            #expect(stripped.audio == audio, "\(name)")
        }
    }

    /// The body ends: before a length byte, after it, inside a block, right after it, inside audio.
    @Test(arguments: [(8, [8, 0]), (9, [8, 0]), (19, [8, 0]), (40, [8, 0]), (41, [8, 1]), (44, [11, 1])])
    func aBodyThatEndsInsideABlockKeepsItsAudioAndNeverEmitsTheBlock(end: Int, expected: [Int]) {
        let (audioCount, metadataCount) = (expected[0], expected[1])
        let audio = Array(UInt8(1)...UInt8(20))
        // "StreamTitle='First';" is 20 bytes: a block of 32 after the length byte at offset 8.
        let body = ICYBody(audio: audio, metaInterval: 8, blocks: [.title("First"), .title("Second")])
        for (name, chunks) in chunkings(of: end, maxSize: 10) {
            let stripped = strip(body.bytes, metaInterval: 8, chunks: chunks)
            #expect(stripped.audio == Array(audio.prefix(audioCount)), "\(name)")
            #expect(stripped.audioBytes == Int64(audioCount), "\(name)")
            #expect(stripped.metadata.map(\.streamTitle) == Array(["First"].prefix(metadataCount)), "\(name)")
        }
    }

    @Test func manyIntervalsInOneChunkComeOutInStreamOrder() {
        let audio = (0..<200).map { UInt8($0) }
        let blocks = (0..<200).map { $0.isMultiple(of: 2) ? Block.title("\($0)") : .empty }
        let body = ICYBody(audio: audio, metaInterval: 1, blocks: blocks)
        let stripped = strip(body.bytes, metaInterval: 1, chunks: [0..<body.bytes.count])
        #expect(
            Array(stripped.layout.prefix(4)) == [
                .audio(count: 1), .metadata(ICYMetadata(streamTitle: "0", streamURL: nil)), .audio(count: 2),
                .metadata(ICYMetadata(streamTitle: "2", streamURL: nil)),
            ])
        #expect(stripped.metadata.count == 100)
        #expect(stripped.audio == audio)
        #expect(stripped.emittedEmptyAudio == false)
    }

    /// Random audio and random blocks (quotes, semicolons and non-ASCII text in titles, some as
    /// large as a block may be), fed in random chunks: the audio and the fields come back exactly.
    @Test(arguments: Array(1...40) as [UInt64])
    func randomBodiesAreReconstructed(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        let intervals = [1, 2, 3, 16, 100, 8192, 1 + generator.next(below: 500)]
        let metaInterval = intervals[generator.next(below: intervals.count)]
        let audio = randomBytes(generator.next(below: metaInterval * 12 + 50), &generator)
        let blocks = (0..<14).map { _ in randomBlock(&generator) }
        let body = ICYBody(audio: audio, metaInterval: metaInterval, blocks: blocks)
        let chunks = randomChunks(of: body.bytes.count, maxSize: 3 * metaInterval + 100, seed: seed)
        let stripped = strip(body.bytes, metaInterval: metaInterval, chunks: chunks)
        #expect(stripped.audio == audio)
        #expect(stripped.audioBytes == Int64(audio.count))
        let sent = blocks.prefix(audio.count / metaInterval).compactMap(\.metadata)
        #expect(stripped.metadata == sent)
        #expect(stripped == body.expected)
    }

    private func randomBlock(_ generator: inout SeededGenerator) -> Block {
        guard generator.next(below: 3) != 0 else { return .empty }
        let alphabet = Array("abcXYZ019 '; -\"é日ß")
        // Up to 3900 bytes, as the largest block holds 4080 with both fields.
        let maxBytes = generator.next(below: generator.next(below: 8) == 0 ? 3900 : 60)
        var title = ""
        while true {
            let next = alphabet[generator.next(below: alphabet.count)]
            guard title.utf8.count + next.utf8.count <= maxBytes else { break }
            title.append(next)
        }
        // Values come back trimmed.
        while title.hasPrefix(" ") { title.removeFirst() }
        while title.hasSuffix(" ") { title.removeLast() }
        let url = generator.next(below: 2) == 0 ? nil : "http://radio.example/\(generator.next(below: 1000))"
        return .title(title, url: url)
    }
}

// MARK: Parser

/// A raw block and the fields it should parse to.
struct ICYParseCase: Sendable, CustomTestStringConvertible {
    let testDescription: String
    let block: [UInt8]
    let expected: ICYMetadata?

    init(_ name: String, _ block: [UInt8], title: String?, url: String? = nil) {
        testDescription = name
        self.block = block
        expected = title == nil && url == nil ? nil : ICYMetadata(streamTitle: title, streamURL: url)
    }

    init(_ name: String, _ text: String, title: String?, url: String? = nil) {
        self.init(name, Array(text.utf8), title: title, url: url)
    }
}

@Suite("ICY metadata parsing")
struct ICYMetadataTests {
    static let cases: [ICYParseCase] = [
        ICYParseCase(
            "plain", "StreamTitle='Artist - Title';StreamUrl='http://x';", title: "Artist - Title", url: "http://x"),
        ICYParseCase(
            "quotes inside", "StreamTitle='Guns N' Roses - Sweet Child O' Mine';",
            title: "Guns N' Roses - Sweet Child O' Mine"),
        ICYParseCase("semicolon inside", "StreamTitle='A;B';", title: "A;B"),
        ICYParseCase("quote and semicolon inside", "StreamTitle='A';B';StreamUrl='u';", title: "A';B", url: "u"),
        ICYParseCase("title ending in a quote", "StreamTitle='Rock 'n'';", title: "Rock 'n'"),
        ICYParseCase("Latin-1", Array("StreamTitle='Caf".utf8) + [0xE9] + Array("';".utf8), title: "Café"),
        ICYParseCase("Latin-1 when any byte is not UTF-8", [0x61, 0xC3, 0xA9, 0xE9].withTitleField, title: "aÃ©é"),
        ICYParseCase("valid UTF-8 stays", "StreamTitle='Café – Ёлка 日本';", title: "Café – Ёлка 日本"),
        ICYParseCase("empty title", "StreamTitle='';", title: ""),
        ICYParseCase("URL only", "StreamUrl='http://x/y.jpg';", title: nil, url: "http://x/y.jpg"),
        ICYParseCase("empty URL", "StreamTitle='T';StreamUrl='';", title: "T", url: ""),
        ICYParseCase("NUL padding", Array("StreamTitle='T';".utf8) + Array(repeating: 0, count: 32), title: "T"),
        ICYParseCase(
            "after the first NUL", Array("StreamTitle='T';".utf8) + [0] + Array("StreamUrl='u';".utf8), title: "T"),
        ICYParseCase("lowercase keys", "streamtitle='t';streamurl='u';", title: "t", url: "u"),
        ICYParseCase("StreamURL and upper case", "STREAMTITLE='t';StreamURL='u';", title: "t", url: "u"),
        ICYParseCase("no final semicolon", "StreamTitle='t'", title: "t"),
        ICYParseCase("no final semicolon after two", "StreamTitle='t';StreamUrl='u'", title: "t", url: "u"),
        ICYParseCase("missing closing quote", "StreamTitle='Artist - Title", title: "Artist - Title"),
        ICYParseCase("missing closing quote, quote inside", "StreamTitle='Guns N' Roses", title: "Guns N' Roses"),
        ICYParseCase("double quotes", "StreamTitle=\"t\";StreamUrl=\"u\";", title: "t", url: "u"),
        ICYParseCase("whitespace around", "  StreamTitle='  t  ' ;\r\n StreamUrl= 'u';  \n", title: "t", url: "u"),
        ICYParseCase("unquoted", "StreamTitle=t;StreamUrl=u;", title: "t", url: "u"),
        ICYParseCase("control characters", "StreamTitle='A\tB\r\nC\u{1}D\u{7F}E';", title: "ABCDE"),
        ICYParseCase("C1 controls of Latin-1", [0x41, 0x92, 0x42, 0xFF].withTitleField, title: "ABÿ"),
        ICYParseCase(
            "other fields", "StreamTitle='t';StreamUrl='';adw_ad='true';durationMilliseconds='1';", title: "t",
            url: ""),
        ICYParseCase("first of a repeated field", "StreamTitle='a';StreamTitle='b';", title: "a"),
        ICYParseCase("noise before", [0x01, 0xFF, 0x3B, 0x27] + Array("StreamTitle='t';".utf8), title: "t"),
        ICYParseCase("noise", [0x9A, 0x01, 0xFF, 0x27, 0x3B, 0x00, 0x55], title: nil),
        ICYParseCase("text without fields", "hello world", title: nil),
        ICYParseCase("other fields only", "Foo='bar';", title: nil),
        ICYParseCase("keys without values", "StreamTitleStreamUrl", title: nil),
        ICYParseCase("empty", [], title: nil),
        ICYParseCase("NULs only", Array(repeating: 0, count: 48), title: nil),
    ]

    @Test(arguments: cases)
    func parses(_ parseCase: ICYParseCase) {
        #expect(ICYMetadata(block: parseCase.block) == parseCase.expected)
        // In place, as the stripper reads a block, and copied, as a collection without contiguous storage is.
        #expect(parseCase.block.withUnsafeBytes { ICYMetadata(block: $0) } == parseCase.expected)
        #expect(ICYMetadata(block: parseCase.block.lazy.map { $0 }) == parseCase.expected)
    }

    /// Random bytes and damaged blocks, up to more than a block may hold: never a crash, values
    /// always trimmed and free of control characters; and noise without `=` gives nothing.
    @Test func noiseNeverBreaksTheParserOrYieldsControlCharacters() {
        var generator = SeededGenerator(seed: 7)
        let valid = Array("StreamTitle='Guns N' Roses - Sweet;Child';StreamUrl='http://x';".utf8)
        var fieldsSeen = 0
        for round in 0..<3000 {
            var block: [UInt8]
            if round.isMultiple(of: 2) {
                block = randomBytes(generator.next(below: round < 100 ? 5000 : 200), &generator)
            } else {
                block = valid
                for _ in 0...generator.next(below: 6) {
                    let at = generator.next(below: block.count + 1)
                    block.insert(contentsOf: randomBytes(1 + generator.next(below: 4), &generator), at: at)
                }
            }
            if let metadata = ICYMetadata(block: block) {
                for value in [metadata.streamTitle, metadata.streamURL].compactMap({ $0 }) {
                    fieldsSeen += 1
                    #expect(!value.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
                    #expect(value.first?.isWhitespace != true && value.last?.isWhitespace != true)
                }
            }
            let withoutEquals = block.filter { $0 != UInt8(ascii: "=") }
            #expect(ICYMetadata(block: withoutEquals) == nil)
        }
        #expect(fieldsSeen > 1000)
    }

    @Test(
        arguments: [
            ("Artist - Title", ["Artist", "Title"]),
            ("Title only", [nil, "Title only"]),
            (" - Title", [nil, "Title"]),
            ("Artist - ", [nil, "Artist"]),
            ("-", [nil, "-"]),
            (" - ", [nil, "-"]),
            ("A - B - C", ["A", "B - C"]),
            ("AC-DC - Thunderstruck", ["AC-DC", "Thunderstruck"]),
            ("  Artist  -  Title  ", ["Artist", "Title"]),
            ("Artist -Title", [nil, "Artist -Title"]),
            ("", [nil, ""]),
        ] as [(String, [String?])])
    func splitsArtistAndTitle(streamTitle: String, expected: [String?]) {
        let split = ICYMetadata.artistAndTitle(streamTitle)
        #expect([split.artist, split.title] == expected)
    }
}

extension [UInt8] {
    /// These bytes as the value of a `StreamTitle` field.
    fileprivate var withTitleField: [UInt8] { Array("StreamTitle='".utf8) + self + Array("';".utf8) }
}

// MARK: Headers and live detection

/// The fields of `ICYHeaders`, comparable whatever made them.
struct ICYHeaderFields: Sendable, Equatable {
    var metaInterval: Int?
    var name: String?
    var genre: String?
    var url: String?
    var description: String?
    var bitrate: Int?
    var isPresent = true

    init(
        metaInterval: Int? = nil, name: String? = nil, genre: String? = nil, url: String? = nil,
        description: String? = nil, bitrate: Int? = nil, isPresent: Bool = true
    ) {
        (self.metaInterval, self.name, self.genre, self.url) = (metaInterval, name, genre, url)
        (self.description, self.bitrate, self.isPresent) = (description, bitrate, isPresent)
    }

    init(_ headers: ICYHeaders) {
        self.init(
            metaInterval: headers.metaInterval, name: headers.name, genre: headers.genre, url: headers.url,
            description: headers.description, bitrate: headers.bitrate, isPresent: headers.isPresent)
    }
}

/// Reads `headers` the way a response's lookup does: any case.
private func icyHeaders(_ headers: [String: String]) -> ICYHeaders {
    ICYHeaders { name in headers.first { $0.key.lowercased() == name.lowercased() }?.value }
}

@Suite("ICY headers and live streams")
struct ICYHeadersTests {
    @Test(
        arguments: [
            ([:], ICYHeaderFields(isPresent: false)),
            (
                [
                    "icy-metaint": "16000", "icy-name": "Radio X", "icy-genre": "Jazz", "icy-url": "http://x",
                    "icy-description": "Smooth", "icy-br": "128",
                ],
                ICYHeaderFields(
                    metaInterval: 16000, name: "Radio X", genre: "Jazz", url: "http://x", description: "Smooth",
                    bitrate: 128)
            ),
            (["Icy-MetaInt": " 8192 ", "ICY-BR": "128,128"], ICYHeaderFields(metaInterval: 8192, bitrate: 128)),
            (["icy-br": "64, 64"], ICYHeaderFields(bitrate: 64)),
            (["icy-br": "fast"], ICYHeaderFields()),
            (["icy-br": "-128"], ICYHeaderFields()),
            (["icy-metaint": "0"], ICYHeaderFields()),
            (["icy-metaint": "-5"], ICYHeaderFields()),
            (["icy-metaint": "16k"], ICYHeaderFields()),
            (["icy-metaint": "1048576"], ICYHeaderFields(metaInterval: 1_048_576)),
            (["icy-metaint": "1048577"], ICYHeaderFields()),
            (["icy-metaint": "99999999999999999999999"], ICYHeaderFields()),
            (["icy-name": "   "], ICYHeaderFields()),
            (["icy-pub": "1"], ICYHeaderFields()),
            (["Content-Type": "audio/mpeg", "Server": "Icecast 2.4"], ICYHeaderFields(isPresent: false)),
        ] as [([String: String], ICYHeaderFields)])
    func readsHeaders(headers: [String: String], expected: ICYHeaderFields) {
        #expect(ICYHeaderFields(icyHeaders(headers)) == expected)
    }

    @Test func noHeadersArePresentUntilAFieldIsSet() {
        var headers = ICYHeaders()
        #expect(!headers.isPresent)
        #expect(headers == icyHeaders([:]))
        headers.genre = "Jazz"
        #expect(headers.isPresent)
        #expect(headers == icyHeaders(["icy-genre": "Jazz"]))
    }

    /// A response's facts, and whether it is live.
    struct LiveCase: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var status = 200
        var totalLength: Int64?
        var contentType: String?
        var hasValidator = false
        var acceptsRanges = false
        var icy = ICYHeaders()
        var isLive: Bool
    }

    static let radio = icyHeaders(["icy-metaint": "16000", "icy-name": "Radio X"])

    static let liveCases: [LiveCase] = [
        LiveCase(testDescription: "icy headers, no length", contentType: "audio/mpeg", icy: radio, isLive: true),
        LiveCase(
            testDescription: "icy headers, any type", contentType: "application/octet-stream", icy: radio, isLive: true),
        LiveCase(
            testDescription: "icy headers and validators", contentType: "audio/mpeg", hasValidator: true,
            acceptsRanges: true, icy: radio, isLive: true),
        LiveCase(
            testDescription: "icy headers with a length", totalLength: 5_000_000, contentType: "audio/mpeg", icy: radio,
            isLive: false),
        LiveCase(
            testDescription: "icy headers, 206", status: 206, contentType: "audio/mpeg", icy: radio, isLive: false),
        LiveCase(testDescription: "audio/mpeg chunked, no validators", contentType: "audio/mpeg", isLive: true),
        LiveCase(testDescription: "type with parameters", contentType: " Audio/AAC; charset=x", isLive: true),
        LiveCase(testDescription: "application/ogg", contentType: "application/ogg", isLive: true),
        LiveCase(testDescription: "with an ETag", contentType: "audio/mpeg", hasValidator: true, isLive: false),
        LiveCase(testDescription: "with Accept-Ranges", contentType: "audio/mpeg", acceptsRanges: true, isLive: false),
        LiveCase(testDescription: "with a length", totalLength: 3_000_000, contentType: "audio/mpeg", isLive: false),
        LiveCase(testDescription: "octet-stream without icy", contentType: "application/octet-stream", isLive: false),
        LiveCase(testDescription: "video/MP2T", contentType: "video/MP2T", isLive: false),
        LiveCase(testDescription: "an M3U playlist", contentType: "audio/x-mpegurl", isLive: false),
        LiveCase(testDescription: "audio/ alone", contentType: "audio/", isLive: false),
        LiveCase(testDescription: "no type", isLive: false),
        LiveCase(testDescription: "206", status: 206, contentType: "audio/mpeg", isLive: false),
        LiveCase(testDescription: "404", status: 404, contentType: "audio/mpeg", isLive: false),
    ]

    @Test(arguments: liveCases)
    func detectsLiveStreams(_ response: LiveCase) {
        let live = LiveStreamDetection.isLive(
            status: response.status, totalLength: response.totalLength, contentType: response.contentType,
            hasValidator: response.hasValidator, acceptsRanges: response.acceptsRanges, icy: response.icy)
        #expect(live == response.isLive)
    }
}
