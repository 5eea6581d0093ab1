import Foundation
import Synchronization

/// Responses held before their first byte until the test releases them: an answer that comes
/// exactly when the test says so, after what it must not wait for has happened, rather than
/// after a latency that a loaded machine can stretch past the test's own timing.
/// Set it as ``OriginFaults/hold``; one release lets every held response (and later ones) go.
public final class ResponseHold: Sendable, Equatable {
    private let readEnd: Int32
    private let writeEnd: Int32
    private let released = Atomic<Bool>(false)
    private let arrived = NSCondition()
    nonisolated(unsafe) private var arrivals = 0  // guarded by `arrived`

    /// A hold not yet released.
    public init() {
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0, "pipe: \(errno)")
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    /// Lets every held response go on, and every later one through at once.
    public func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)  // never read: the pipe stays readable for every waiter
    }

    /// Whether ``release()`` was called.
    public var isReleased: Bool { released.load(ordering: .acquiring) }

    /// How many responses reached the hold so far (held, or let through after the release).
    public var heldResponses: Int { arrived.withLock { arrivals } }

    /// Waits until `count` responses have reached the hold; false if they have not within
    /// `timeout` seconds (a deadline, not a measurement).
    public func awaitArrivals(_ count: Int, timeout: Double = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return arrived.withLock {
            while arrivals < count { if !arrived.wait(until: deadline) { return arrivals >= count } }
            return true
        }
    }

    /// Blocks a response until the release, or until `peer` hangs up or `stopped` says so
    /// (checked every 100 ms); true when released.
    func wait(peer: Int32, stopped: () -> Bool) -> Bool {
        arrived.withLock {
            arrivals += 1
            arrived.broadcast()
        }
        while true {
            if isReleased { return true }
            var descriptors = [
                pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: peer, events: Sockets.peerHangUp, revents: 0),
            ]
            let ready = poll(&descriptors, 2, 100)
            if stopped() || (ready > 0 && descriptors[1].revents != 0) { return false }
            if ready < 0 && errno != EINTR { return false }
        }
    }

    public static func == (lhs: ResponseHold, rhs: ResponseHold) -> Bool { lhs === rhs }

    deinit {
        close(readEnd)
        close(writeEnd)
    }
}
