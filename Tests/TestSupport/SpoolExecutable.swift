import Foundation

/// The repository's top-level folder, found from this file's path
/// (`Tests/TestSupport/SpoolExecutable.swift`).
public let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// The `spool` executable built next to the test bundle (a test target that
/// calls this depends on the `spool` target, so it is built first).
public func spoolExecutable() throws -> String {
    let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    var directory = testBinary.deletingLastPathComponent()
    // The bundle may be a directory (`X.xctest/...`) or the executable itself.
    for _ in 0..<3 {
        let candidate = directory.appendingPathComponent("spool").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    throw RigError("the spool executable was not found near \(testBinary.path)")
}
