import Foundation
import TestSupport
import Testing

@testable import GStreamerEngine

@Suite("The engine's bus thread")
struct BusThreadTests {
    /// The context switches the kernel counted for thread `id` of this process (it slept and woke).
    private func switches(ofThread id: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/task/\(id)/status", encoding: .utf8)
        // "voluntary_ctxt_switches:\tN" and "nonvoluntary_ctxt_switches:\tN"
        return status.split(separator: "\n").filter { $0.contains("ctxt_switches:") }
            .compactMap { $0.split(separator: "\t").last.flatMap { Int($0) } }.reduce(0, +)
    }

    /// An idle engine's bus thread waits for messages and is not woken by a timer (it polled
    /// every 100 ms: ten wake-ups a second of an idle daemon); shutting down still ends it.
    @Test func anIdleEnginesBusThreadSleepsUntilAMessageAndShutdownEndsIt() async throws {
        let dir = try TemporaryDirectory()
        let (engine, _) = try pcmEngine(into: dir.file("out.raw"))
        engine.control.sync {}  // the warm-up is over: nothing is posted from here on
        #expect(await eventually(timeout: 5) { engine.shared.withLock { $0.busThread } != nil })
        let thread = try #require(engine.shared.withLock { $0.busThread })
        let before = try switches(ofThread: thread)
        // The window is the measure: wake-ups of an idle thread have no event to wait for.
        try await Task.sleep(for: .seconds(1))
        let after = try switches(ofThread: thread)
        #expect(after - before <= 2, "the idle bus thread woke \(after - before) times in 1 s")

        let ended = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            engine.shutdown()
            ended.signal()
        }
        #expect(ended.wait(timeout: .now() + 5) == .success, "shutdown did not end the bus thread")
    }
}
