import Basics
import EngineAPI
import Foundation
import GStreamerEngine
import MediaSource
import RangeCache
import TestSupport
import Testing

/// Tags read ahead for the queue: from a file or a complete cached copy, without playing it.
@Suite("Tag probe", .serialized)
struct TagProbeTests {
    @Test func everyFixtureFormatGivesItsTagsAndLength() throws {
        let fixtures = try Fixtures.shared()
        for fixture in fixtures.all {
            let found = TagProbe.read(FileByteSource(path: fixture.url.path), url: fixture.url)
            #expect(found?.tags.title == fixture.title, "\(fixture): \(String(describing: found))")
            #expect(found?.tags.artists == [fixture.artist], "\(fixture)")
            #expect(found?.tags.album == fixture.album, "\(fixture)")
            #expect(found?.tags.lyrics == nil && found?.tags.artURL == nil, "\(fixture): no lyrics or art for a queue")
            let seconds = found?.duration.map {
                Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18
            }
            #expect(
                seconds.map { abs($0 - fixture.duration) < 0.3 } == true, "\(fixture): \(String(describing: seconds))")
        }
    }

    @Test func aCompleteCachedCopyIsReadFromTheCacheAndAPartialOneNotAtAll() throws {
        let fixture = try Fixtures.shared().fixture(.oggVorbis)
        let bytes = try Data(contentsOf: fixture.url)
        let directory = try TemporaryDirectory(prefix: "spool-cache")
        let cache = try RangeCache(directory: directory.url)
        defer { cache.close() }
        let url = URL(string: "http://127.0.0.1:1/\(fixture.fileName)")!
        let entry = try cache.entry(for: url)
        try entry.setMetadata(
            EntryMetadata(url: url, validator: ResourceVersion(etag: "\"1\"", length: Int64(bytes.count))))
        try entry.write(bytes.prefix(bytes.count / 2), at: 0)
        #expect(CachedCopySource(entry: entry) == nil, "half the bytes are not a copy")
        try entry.write(bytes.suffix(from: bytes.count / 2), at: Int64(bytes.count / 2))
        let copy = try #require(CachedCopySource(entry: entry))
        let found = TagProbe.read(copy, url: url)
        #expect(found?.tags.title == fixture.title, "\(String(describing: found))")
        entry.close()
    }

    /// Damaged files and random bytes: each read ends (with what it found, or nothing) within
    /// its timeout, and a good file reads afterwards.
    @Test func damagedFilesEndInTimeAndNeverStopTheNextRead() throws {
        let seed =
            ProcessInfo.processInfo.environment["SPOOL_TEST_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("tag probe: seed \(seed); SPOOL_TEST_SEED=\(seed) replays it")
        var random = SeededGenerator(seed: seed)
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory(prefix: "spool-probe")
        var index = 0
        var slowest = Duration.zero
        for fixture in fixtures.all where !fixture.hasCover {
            for damage in HostileFilesTests.Damage.allCases {
                index += 1
                let file = dir.file("\(index)-\(damage).\(fixture.format.fileExtension)")
                try HostileFilesTests.damage(try Data(contentsOf: fixture.url), damage, &random).write(to: file)
                let clock = ContinuousClock()
                let started = clock.now
                _ = TagProbe.read(FileByteSource(path: file.path), url: file, timeout: .seconds(2))
                let took = clock.now - started
                slowest = max(slowest, took)
                // A deadline for a probe that would hang, ten times its own limit; most take milliseconds.
                #expect(took < .seconds(20), "\(file.lastPathComponent) took \(took) (seed \(seed))")
            }
        }
        print("tag probe: \(index) damaged files, slowest read \(slowest)")
        let good = fixtures.fixture(.flac)
        #expect(TagProbe.read(FileByteSource(path: good.url.path), url: good.url)?.tags.title == good.title)
        #expect(TagProbe.read(FileByteSource(path: dir.file("missing.mp3").path), url: dir.file("missing.mp3")) == nil)
    }

    /// Hostile tags (invalid UTF-8, control characters, megabyte strings, thousands of values):
    /// every read ends within its timeout, with text that is valid Unicode.
    @Test func hostileTagFilesReadInTime() throws {
        var random = SeededGenerator(seed: 17)
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory(prefix: "spool-probe-tags")
        var report: [String] = []
        for hostile in HostileTagCorpus.cases(randomCount: 2, &random) {
            let file = try HostileTagCorpus.write(hostile, fixtures: fixtures, into: dir.url)
            let clock = ContinuousClock()
            let started = clock.now
            let found = TagProbe.read(FileByteSource(path: file.path), url: file, timeout: .seconds(3))
            let took = clock.now - started
            report.append("\(hostile): \(took) \(found == nil ? "nothing" : "read")")
            #expect(took < .seconds(30), "\(hostile) took \(took)")  // a deadline, as above
        }
        print("tag probe, hostile tags:\n" + report.joined(separator: "\n"))
    }

    /// Time and memory per read, printed for the record (`swift test --filter TagProbeTests`).
    @Test func costPerRead() throws {
        let fixtures = try Fixtures.shared()
        let files = fixtures.all.filter { !$0.hasCover }
        // Plugins loaded first.
        for fixture in files { _ = TagProbe.read(FileByteSource(path: fixture.url.path), url: fixture.url) }
        let before = residentKiB()
        let clock = ContinuousClock()
        let started = clock.now
        let rounds = 10
        var slowest = (Duration.zero, "")
        for _ in 0..<rounds {
            for fixture in files {
                let start = clock.now
                let found = TagProbe.read(FileByteSource(path: fixture.url.path), url: fixture.url)
                if clock.now - start > slowest.0 { slowest = (clock.now - start, "\(fixture)") }
                #expect(found?.tags.title == fixture.title, "\(fixture)")
            }
        }
        let each = (clock.now - started) / (rounds * files.count)
        let after = residentKiB()
        print(
            "tag probe: \(each) a read over \(rounds * files.count) reads (slowest \(slowest)); resident \(before) → \(after) KiB"
        )
        #expect(after - before < 4096, "reads leak: \(before) → \(after) KiB")
    }

    private func residentKiB() -> Int {
        let status =
            (try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/status")).readDataToEndOfFile()) ?? Data()
        let line = String(decoding: status, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        return line.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") }
            ?? 0
    }
}
