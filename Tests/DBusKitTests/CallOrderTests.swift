import DBusKit
import Dispatch
import TestSupport
import Testing

extension BusTests {
    /// A client that sends calls without waiting for replies (a media key pressed twice, a seek
    /// slider's burst) sees them take effect in the order sent, however long each handler waits.
    @Suite("Calls take effect in the order sent")
    struct CallOrder {
        /// Sends `count` calls built by `make` without waiting, the last one waiting for its
        /// reply: with calls applied in order, every handler has run when it comes. The wait
        /// blocks a Dispatch thread, not one of the Swift executor's: the handlers need those.
        static func burst(_ echo: EchoService, count: Int, _ make: (Int) -> RawMessage) async throws {
            let sender = try RawBusClient(address: echo.bus.address)
            for index in 0..<(count - 1) { #expect(sender.send(make(index)) != nil) }
            let message = make(count - 1)
            let last = await withCheckedContinuation { (continuation: CheckedContinuation<RawCallOutcome, Never>) in
                DispatchQueue.global().async {
                    continuation.resume(returning: sender.call(message, timeout: .seconds(30)))
                }
            }
            guard case .returned = last else {
                Issue.record("the last call of the burst: \(last)")
                return
            }
        }

        @Test(arguments: 0..<20)
        func fiveHundredCallsFromOneClientRunInTheirOrder(round: Int) async throws {
            let echo = try EchoService()
            try await Self.burst(echo, count: 500) { index in
                var call = RawMessage(.methodCall, destination: testName)
                (call.path, call.interface, call.member) = (testPath, testInterface, "Record")
                call.body = [.value(.int32(Int32(index)))]
                return call
            }
            #expect(echo.state.recorded.withLock { $0 } == (0..<500).map(Int32.init), "round \(round)")
        }

        @Test func propertySetsAndMethodCallsFromOneClientRunInTheirOrder() async throws {
            let echo = try EchoService()
            try await Self.burst(echo, count: 200) { index in
                var call = RawMessage(.methodCall, destination: testName)
                call.path = testPath
                if index.isMultiple(of: 2) {
                    (call.interface, call.member) = (testInterface, "Record")
                    call.body = [.value(.int32(Int32(index)))]
                } else {
                    (call.interface, call.member) = ("org.freedesktop.DBus.Properties", "Set")
                    call.body = [
                        .value(.string(testInterface)), .value(.string("Volume")),
                        .value(.variant(.double(Double(index) / 1000))),
                    ]
                }
                return call
            }
            #expect(echo.state.recorded.withLock { $0 } == stride(from: 0, to: 200, by: 2).map { Int32($0) })
            #expect(echo.state.volumesSet.withLock { $0 } == stride(from: 1, to: 200, by: 2).map { Double($0) / 1000 })
            #expect(echo.state.volume.withLock { $0 } == 0.199, "the last Set wins")
        }
    }
}
