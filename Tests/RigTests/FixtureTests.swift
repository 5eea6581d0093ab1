import Foundation
import TestSupport
import Testing

@Suite("Generated audio fixtures", .serialized)
struct FixtureTests {
    @Test func concurrentCallersShareOneGeneration() async throws {
        let instances = try await withThrowingTaskGroup(of: ObjectIdentifier.self) { group in
            for _ in 0..<4 { group.addTask { ObjectIdentifier(try Fixtures.shared()) } }
            return try await group.reduce(into: Set<ObjectIdentifier>()) { $0.insert($1) }
        }
        #expect(instances.count == 1)
    }

    @Test func everyFormatIsPresentWithDistinctFrequencies() throws {
        let fixtures = try Fixtures.shared()
        #expect(Set(fixtures.all.map(\.format)) == Set(FixtureFormat.allCases))
        #expect(Set(fixtures.all.map(\.frequency)).count == fixtures.all.count)
        #expect(Set(fixtures.withCover.map(\.format)) == [.mp3CBR, .flac])
        for fixture in fixtures.all {
            #expect(FileManager.default.fileExists(atPath: fixture.url.path), "\(fixture)")
            #expect(fixture.duration > 3 && fixture.duration < 4)
        }
    }

    @Test func everyFixtureDecodesWithItsTags() throws {
        for fixture in try Fixtures.shared().all {
            let result = try runCommand(
                "gst-launch-1.0", ["-t", "filesrc", "location=\(fixture.url.path)", "!", "decodebin", "!", "fakesink"])
            #expect(result.status == 0, "\(fixture): \(result.stderr)")
            let tags = TagDump(result.stdout)
            #expect(tags["title"] == fixture.title, "\(fixture)")
            #expect(tags["artist"] == fixture.artist, "\(fixture)")
            #expect(tags["album"] == fixture.album, "\(fixture)")
            #expect(tags["track number"] == fixture.trackNumber.map(String.init), "\(fixture)")
            #expect((tags["image"] != nil) == fixture.hasCover, "\(fixture)")
        }
    }

    @Test func theM4AFixturesPlaceMoovAsNamed() throws {
        let fixtures = try Fixtures.shared()
        let front = try topLevelAtoms(Data(contentsOf: fixtures.fixture(.m4aFaststart).url))
        let end = try topLevelAtoms(Data(contentsOf: fixtures.fixture(.m4aMoovAtEnd).url))
        #expect(front.firstIndex(of: "moov")! < front.firstIndex(of: "mdat")!, "\(front)")
        #expect(end.firstIndex(of: "moov")! > end.firstIndex(of: "mdat")!, "\(end)")
    }

    /// xingmux writes a Xing header (frame count, byte count, seek TOC) but no LAME extension.
    @Test func theMP3FixturesStartWithAXingFrame() throws {
        for fixture in try Fixtures.shared().all where fixture.format == .mp3CBR || fixture.format == .mp3VBR {
            let data = try Data(contentsOf: fixture.url)
            let frame = try #require(firstMPEGFrame(data), "\(fixture)")
            let header = data[frame..<min(data.count, frame + 200)]
            let tag = try #require(
                header.range(of: Data("Xing".utf8)) ?? header.range(of: Data("Info".utf8)), "\(fixture)")
            let fields = [UInt8](data[tag.upperBound..<tag.upperBound + 12])
            let flags = fields[0..<4].reduce(0) { $0 << 8 | Int($1) }
            let frames = fields[4..<8].reduce(0) { $0 << 8 | Int($1) }
            let expectedFrames = Int(fixture.duration * 44_100 / 1152)
            #expect(flags & 0b111 == 0b111, "frames, bytes and TOC present in \(fixture)")
            #expect(abs(frames - expectedFrames) < 5, "\(fixture): \(frames) frames")
        }
    }

    /// The hostile tag corpus is only as good as its writers: plain tags they write must read back.
    @Test func rawTagWritersWriteTagsThatDecodeWithTheAudio() throws {
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory(prefix: "spool-raw-tags")
        var tags = RawTags()
        tags.add(.title, "Raw Title")
        tags.add(.artist, "First")
        tags.add(.artist, "Second")
        tags.add(.album, String(repeating: "Long album ", count: 10_000))  // Ogg headers over several pages
        tags.add(.trackNumber, "7")
        for format in HostileTagCorpus.formats {
            let url = try HostileTagCorpus.write(
                HostileTagCase(name: "plain", tags: tags, format: format), fixtures: fixtures, into: dir.url)
            let result = try runCommand(
                "gst-launch-1.0", ["-t", "filesrc", "location=\(url.path)", "!", "decodebin", "!", "fakesink"])
            #expect(result.status == 0, "\(format): \(result.stderr)")
            let dump = TagDump(result.stdout)
            #expect(dump["title"] == "Raw Title", "\(format): \(result.stdout)")
            #expect(dump["artist"]?.contains("First") == true, "\(format): \(result.stdout)")
            #expect(dump["album"]?.hasPrefix("Long album Long album") == true, "\(format)")
            #expect(dump["track number"] == "7", "\(format): \(result.stdout)")
            #expect(dump["title"] != fixtures.fixture(format).title)
        }
    }

    // MARK: helpers

    /// The `name: value` lines of a `gst-launch-1.0 -t` tag dump (first value wins).
    struct TagDump {
        private var values: [String: String] = [:]
        init(_ output: String) {
            for line in output.split(separator: "\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let name = line[..<colon].trimmingCharacters(in: .whitespaces)
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                if values[name] == nil { values[name] = value }
            }
        }
        subscript(name: String) -> String? { values[name] }
    }

    func topLevelAtoms(_ data: Data) -> [String] {
        let bytes = [UInt8](data)
        var atoms = [String]()
        var offset = 0
        while offset + 8 <= bytes.count {
            var size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            atoms.append(String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self))
            if size == 1 { size = bytes[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) } }
            if size == 0 { break }
            offset += size
        }
        return atoms
    }

    /// Offset of the first MPEG audio frame sync after any ID3v2 tag.
    func firstMPEGFrame(_ data: Data) -> Int? {
        let bytes = [UInt8](data)
        var start = 0
        if bytes.starts(with: Array("ID3".utf8)) {
            start = 10 + bytes[6...9].reduce(0) { $0 << 7 | Int($1 & 0x7F) }
        }
        return (start..<bytes.count - 1).first { bytes[$0] == 0xFF && bytes[$0 + 1] & 0xE0 == 0xE0 }
    }

    func contains(_ data: Data, _ text: String) -> Bool {
        data.range(of: Data(text.utf8)) != nil
    }
}
