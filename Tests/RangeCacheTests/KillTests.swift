import Foundation
import TestSupport
import Testing

@testable import RangeCache

/// What the kill-test child reported last for one entry: its version and how many bytes it held.
private struct Report {
    var version = 0
    var held: Int64 = 0
}

/// The child's last report per entry (0 = sequential, 1 = random offsets).
private func lastReports(_ output: String) -> [Report] {
    var reports = [Report(), Report()]
    for line in output.split(separator: "\n") {
        let fields = line.split(separator: " ")
        guard fields.count >= 3, let index = Int(fields[1]), let version = Int(fields[2]), index < 2 else { continue }
        if fields[0] == "W", fields.count == 4, let held = Int64(fields[3]) {
            reports[index] = Report(version: version, held: held)
        } else if fields[0] == "V" {
            reports[index] = Report(version: version, held: 0)
        }
    }
    return reports
}

@Suite(.serialized) struct KillTests {
    /// Mirrors the child: byte o of entry e at version g.
    private static func expected(_ source: Data, entry: Int, version: Int, range: Range<Int64>) -> Data {
        let shift = Int64((2 * version + entry) * 4099)
        var bytes = Data()
        var position = Int((range.lowerBound + shift) % Int64(source.count))
        var remaining = Int(range.count)
        while remaining > 0 {
            let take = min(remaining, source.count - position)
            bytes.append(source[position..<(position + take)])
            remaining -= take
            position = 0
        }
        return bytes
    }

    @Test func sigkillAtRandomMomentsNeverLeavesAWrongClaimAndLosesAtMostTheUnsyncedBatches() async throws {
        let work = try TemporaryDirectory(prefix: "spool-cache-kill")
        let cacheDirectory = work.file("cache")
        let sourceURL = work.file("source")
        let source = randomBytes(1 << 20, seed: 99)
        try source.write(to: sourceURL)
        let child = try builtExecutable("RangeCacheKillChild")
        var random = SeededGenerator(seed: 2024)
        let batch = RangeCache.Configuration().syncBatchBytes
        let maxPiece: Int64 = 96 << 10
        var claimedTotal: Int64 = 0
        for round in 0..<50 {
            let writer = try ChildProcess(
                child, [cacheDirectory.path, sourceURL.path], logDirectory: work.url)
            let writes = Int.random(in: 1...120, using: &random)
            let reached = await eventually(timeout: 20, interval: 0.001) {
                writer.standardOutput.split(separator: "\n").count > writes || !writer.isRunning
            }
            try #require(reached && writer.isRunning, "round \(round): child stalled or died: \(writer.standardError)")
            writer.send(SIGKILL)
            #expect(await writer.waitForExit(timeout: 10) != nil)
            let reports = lastReports(writer.standardOutput)

            let cache = try RangeCache(directory: cacheDirectory, configuration: testConfiguration())
            for (index, name) in ["seq", "rand"].enumerated() {
                guard let entry = try cache.entry(for: CacheKey(stable: name), create: false) else { continue }
                defer { entry.close() }
                let version = Int(entry.metadata.validator.etag?.dropFirst(2).dropLast() ?? "") ?? -1
                let durable = entry.durableRanges
                #expect(entry.cachedRanges == durable, "after a restart only durable bytes are claimed")
                for range in durable.ranges {
                    let bytes = try #require(readAll(entry, range))
                    let want = KillTests.expected(source, entry: index, version: version, range: range)
                    #expect(
                        firstDifference(bytes, want) == nil,
                        "round \(round) \(name) \(range): \(describeDifference(bytes, want))")
                }
                claimedTotal += durable.count
                if reports[index].version == version {
                    // Lost at most: the batch being synced and the batch being filled.
                    #expect(
                        durable.count >= reports[index].held - 2 * (batch + maxPiece),
                        "round \(round) \(name): \(durable.count) durable of \(reports[index].held) written")
                }
            }
            cache.close()
        }
        #expect(claimedTotal > 0, "the kills left something claimed to check")
    }

    @Test func aSecondDaemonIsRefusedWhileTheCLIMayRead() async throws {
        let work = try TemporaryDirectory(prefix: "spool-cache-lock")
        let cacheDirectory = work.file("cache")
        let sourceURL = work.file("source")
        try randomBytes(1 << 20, seed: 5).write(to: sourceURL)
        let writer = try ChildProcess(
            try builtExecutable("RangeCacheKillChild"), [cacheDirectory.path, sourceURL.path],
            logDirectory: work.url)
        defer { writer.stop(grace: 0) }
        #expect(await eventually(timeout: 20) { writer.standardOutput.split(separator: "\n").count > 40 })
        #expect(throws: CacheError.inUseByAnotherProcess(directory: cacheDirectory.path, pid: writer.pid)) {
            _ = try RangeCache(directory: cacheDirectory, configuration: testConfiguration())
        }
        let reader = try RangeCache(directory: cacheDirectory, configuration: testConfiguration(mode: .readOnly))
        #expect(reader.entries().count == 2)
        let entry = try #require(try reader.entry(for: CacheKey(stable: "seq"), create: false))
        if let first = entry.durableRanges.ranges.first {
            #expect(entry.read(at: first.lowerBound, maxLength: 1000) != nil)
        }
        #expect(
            CacheError.inUseByAnotherProcess(directory: "/c", pid: 7).description.contains(
                "in use by another spool daemon (pid 7)"))
    }
}
