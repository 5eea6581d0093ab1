import Foundation
import TestSupport
import Testing

@Suite("Child processes started from tests")
struct ChildProcessTests {
    @Test func aChildStartedFromSwiftTestingStopsOnSIGTERM() async throws {
        let logs = try TemporaryDirectory()
        // `sleep` dies on SIGTERM only when the signal is not blocked in the child.
        let child = try ChildProcess("sleep", ["30"], logDirectory: logs.url)
        #expect(child.isRunning)
        child.send(SIGTERM)
        let status = await child.waitForExit(timeout: 5)
        #expect(status == SIGTERM)  // Foundation reports the terminating signal as the status
    }

    @Test func runCommandCapturesOutputAndStatus() throws {
        let result = try runCommand("sh", ["-c", "echo out; echo err >&2; exit 3"])
        #expect(result.status == 3)
        #expect(result.stdout == "out\n")
        #expect(result.stderr == "err\n")
    }

    @Test func aSelfStoppingChildEndsByItself() async throws {
        let logs = try TemporaryDirectory()
        let child = try ChildProcess("sleep", ["30"], logDirectory: logs.url, selfStopAfter: 1)
        #expect(await child.waitForExit(timeout: 10) != nil)
    }
}
