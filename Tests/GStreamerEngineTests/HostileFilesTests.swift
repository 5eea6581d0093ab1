import EngineAPI
import Foundation
import GStreamerEngine
import TestSupport
import Testing

/// Damaged files of every format, made from the fixtures by a seeded generator: each one plays
/// to an end or fails with an error, in bounded time, and the engine then plays a good file.
@Suite("Hostile files")
struct HostileFilesTests {
    enum Damage: CaseIterable, Sendable {
        /// Cut at a random point past the header.
        case truncated
        /// A random run of the body overwritten with random bytes.
        case garbledBody
        /// Random bytes flipped in the first 4 KiB (headers, tags, tables).
        case garbledHeader
        /// Random bytes only, named as the format.
        case randomBytes
        /// Nothing at all.
        case empty
    }

    /// `data` damaged as `damage` says, drawing from `random`.
    static func damage(_ data: Data, _ damage: Damage, _ random: inout SeededGenerator) -> Data {
        var bytes = [UInt8](data)
        switch damage {
        case .truncated:
            let cut = Int.random(in: min(64, bytes.count - 1)...(bytes.count * 9 / 10), using: &random)
            bytes.removeSubrange(cut...)
        case .garbledBody:
            let start = Int.random(in: bytes.count / 10...(bytes.count / 2), using: &random)
            let length = Int.random(in: 1...(bytes.count / 3), using: &random)
            for index in start..<min(bytes.count, start + length) {
                bytes[index] = UInt8.random(in: 0...255, using: &random)
            }
        case .garbledHeader:
            for _ in 0..<24 {
                let index = Int.random(in: 0..<min(4096, bytes.count), using: &random)
                bytes[index] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
            }
        case .randomBytes:
            bytes = (0..<bytes.count).map { _ in UInt8.random(in: 0...255, using: &random) }
        case .empty:
            bytes = []
        }
        return Data(bytes)
    }

    @Test func everyDamagedFileEndsOrFailsAndAGoodOneStillPlays() throws {
        let seed =
            ProcessInfo.processInfo.environment["SPOOL_TEST_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("hostile files: seed \(seed); SPOOL_TEST_SEED=\(seed) replays it")
        var random = SeededGenerator(seed: seed)
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory(prefix: "spool-hostile")
        let (engine, recorder) = try pcmEngine(into: dir.file("out.raw"))
        defer { engine.shutdown() }
        var id: UInt64 = 0
        var outcomes: [String] = []
        let rounds = 3
        let cases = fixtures.all.filter { !$0.hasCover }.flatMap { fixture in
            Damage.allCases.flatMap { damage in
                Array(repeating: (fixture, damage), count: damage == .empty ? 1 : rounds)
            }
        }
        for (fixture, damage) in cases {
            id += 1
            let file = dir.file("\(id)-\(damage).\(fixture.format.fileExtension)")
            try Self.damage(try Data(contentsOf: fixture.url), damage, &random).write(to: file)
            let track = TrackID(id)
            engine.load(EngineTrack(id: track, url: file), at: .zero, playing: true)
            let end = recorder.waitFor(timeout: 15) {
                switch $0 {
                case .endOfTrack(track), .failed(track, _): true
                default: false
                }
            }
            #expect(end != nil, "\(file.lastPathComponent) neither ended nor failed within 15 s (seed \(seed))")
            if case .failed(_, let error)? = end { outcomes.append("\(file.lastPathComponent): \(error.kind)") }
            if end == nil { break }
        }
        print("hostile files: \(id) loaded, \(outcomes.count) failed: \(outcomes.joined(separator: "; "))")
        // And the engine is still fine.
        id += 1
        engine.load(EngineTrack(id: TrackID(id), url: fixtures.fixture(.flac).url), at: .zero, playing: true)
        #expect(recorder.waitFor(timeout: 15) { $0 == .endOfTrack(TrackID(id)) } != nil, "a good file after the corpus")
    }

    /// A picture over 16 MiB in the tag (a real PNG of noise) is left out: the track plays, no art.
    @Test func aHugeEmbeddedPictureIsNotExtractedAndTheTrackPlays() throws {
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory(prefix: "spool-bigart")
        let png = dir.file("big.png")
        let made = try runCommand(
            "gst-launch-1.0",
            [
                "-q", "videotestsrc", "num-buffers=1", "pattern=snow", "!",
                "video/x-raw,width=2600,height=2300,format=RGB",
                "!", "pngenc", "compression-level=0", "!", "filesink", "location=\(png.path)",
            ])
        #expect(made.status == 0, "\(made.stderr)")
        let picture = try Data(contentsOf: png)
        #expect(picture.count > 16 << 20, "the picture is \(picture.count) bytes")
        let fixture = fixtures.fixture(.mp3CBR)
        let file = dir.file("big-art.mp3")
        try CoverEmbedding.mp3(try Data(contentsOf: fixture.url), fixture: fixture, png: picture).write(to: file)
        let (engine, recorder) = try pcmEngine(into: dir.file("out.raw"), artDirectory: dir.file("art"))
        defer { engine.shutdown() }
        engine.load(EngineTrack(id: TrackID(1), url: file), at: .zero, playing: true)
        #expect(recorder.waitFor(timeout: 20, isEnd) == .endOfTrack(TrackID(1)))
        let tags = recorder.all.compactMap { if case .described(_, let tags, _) = $0 { tags } else { nil } }
        #expect(tags.contains { $0.title == fixture.title }, "the other tags are read")
        #expect(tags.allSatisfy { $0.artURL == nil }, "no art over 16 MiB")
        let stored = (try? FileManager.default.contentsOfDirectory(atPath: dir.file("art").path)) ?? []
        #expect(stored.isEmpty, "\(stored)")
    }
}
