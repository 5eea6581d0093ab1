import Foundation

// Every wait of the tests, in one place. A test waits for what must happen; the timeout is a
// deadline for it (ten times its usual time or more), never a measurement, and a wait that
// misses its deadline says what it last saw.

/// Reads `read` until `accept` holds for its value, and returns that value; after `timeout`
/// seconds without it, throws naming `what` and the last value read. For another process's
/// state (a D-Bus property, a server's log), where no in-process event exists to await.
public func awaitValue<Value>(
    _ what: @autoclosure () -> String, timeout: Double = 10, interval: Duration = .milliseconds(20),
    _ read: () async throws -> Value, until accept: (Value) throws -> Bool
) async throws -> Value {
    let deadline = ContinuousClock.now + .seconds(timeout)
    while true {
        let value = try await read()
        if try accept(value) { return value }
        guard ContinuousClock.now < deadline else {
            throw RigError("\(what()): still \(value) after \(timeout) s")
        }
        try await Task.sleep(for: interval)
    }
}

/// ``eventually(timeout:interval:_:)`` for a condition that awaits (a D-Bus call).
public func eventuallyAsync(
    timeout: Double, interval: Duration = .milliseconds(20), _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: interval)
    }
    return try await condition()
}

/// The entries `read` returns once there are at least `count`, for a server's log that lags its
/// clients by a moment; throws "`server` logged N requests, expected `count`" after `timeout`.
public func awaitLogEntries<Entry>(
    of server: String, atLeast count: Int, timeout: Double, _ read: () -> [Entry]
) async throws -> [Entry] {
    var entries: [Entry] = []
    guard
        await eventually(
            timeout: timeout,
            {
                entries = read()
                return entries.count >= count
            })
    else {
        throw RigError("\(server) logged \(entries.count) requests, expected \(count)")
    }
    return entries
}

/// Polls `condition` every few milliseconds until it holds or `timeout` passes.
/// For waiting on *another process's* observable state (a D-Bus name, a file),
/// where no in-process event exists to await. It sleeps as a task: a thread blocked here
/// would be one of the few that run every test of the process (the executor does not add
/// threads for blocked ones), and the tests beside it would stall.
public func eventually(
    timeout: Double = 10, interval: Double = 0.01, _ condition: () throws -> Bool
) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .seconds(interval))
    }
    return try condition()
}

/// ``eventually(timeout:interval:_:)`` for a rig's initializer, which cannot await: it
/// blocks its thread, so it is only for the short waits of a server's start.
public func eventuallyBlocking(
    timeout: Double = 10, interval: Double = 0.01, _ condition: () throws -> Bool
) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: interval)
    }
    return try condition()
}

/// Runs the blocking `work` on a thread of its own and awaits its result, so that a wait on
/// a semaphore or a process holds no thread of the executor that runs the other tests.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}
