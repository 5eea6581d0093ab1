import Foundation
import RangeCache
import TestSupport

/// A configuration for tests: no free-space floor (test file systems are small or full).
func testConfiguration(budget: Int64 = 1 << 40, mode: RangeCache.AccessMode = .readWrite) -> RangeCache.Configuration {
    var configuration = RangeCache.Configuration()
    configuration.budgetBytes = budget
    configuration.minimumFreeBytes = 0
    configuration.minimumFreeFraction = 0
    configuration.mode = mode
    return configuration
}

/// `count` pseudo-random bytes from `seed`.
func randomBytes(_ count: Int, seed: UInt64 = 1) -> Data {
    var generator = SeededGenerator(seed: seed)
    var bytes = [UInt8](repeating: 0, count: count)
    for index in 0..<count { bytes[index] = UInt8(truncatingIfNeeded: generator.next()) }
    return Data(bytes)
}

/// The bytes `entry` holds at `range`, or nil if any is missing.
func readAll(_ entry: CacheEntry, _ range: Range<Int64>) -> Data? {
    var result = Data()
    var offset = range.lowerBound
    while offset < range.upperBound {
        guard let piece = entry.read(at: offset, maxLength: Int(range.upperBound - offset)) else { return nil }
        result.append(piece)
        offset += Int64(piece.count)
    }
    return result
}

/// The data files of the cache at `directory`.
func dataFiles(_ directory: URL) -> [URL] {
    let data = directory.appendingPathComponent("data")
    return ((try? FileManager.default.contentsOfDirectory(atPath: data.path)) ?? []).sorted()
        .map { data.appendingPathComponent($0) }
}

/// An executable built next to the test bundle.
func builtExecutable(_ name: String) throws -> String {
    var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    for _ in 0..<3 {
        let candidate = directory.appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    throw RigError("\(name) was not found near the test bundle")
}
