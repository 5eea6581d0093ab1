import Dispatch
import Foundation
import Synchronization

/// A socket listening on 127.0.0.1 and the connections it accepts, each served on a thread of
/// its own and closed after it; stopping shuts them all down. The test origins' transport.
final class LoopbackServer: Sendable {
    private struct State {
        var connections: Set<Int32> = []
        var listenerOpen = true
        var stopped = false
        var accepted = 0
        /// Signalled once the listener and every connection are closed after a stop.
        var waitingForClose: [DispatchSemaphore] = []

        var allClosed: Bool { !listenerOpen && connections.isEmpty }

        mutating func signalIfAllClosed() {
            guard stopped, allClosed else { return }
            for waiter in waitingForClose { waiter.signal() }
            waitingForClose = []
        }
    }

    private let listener: Int32
    /// The port it listens on.
    let port: UInt16
    private let state = Mutex(State())

    /// Listens on `port` (0: a free one); see ``Sockets/listenLoopback(port:backlog:)``.
    init(port: UInt16, backlog: Int32) throws {
        (listener, self.port) = try Sockets.listenLoopback(port: port, backlog: backlog)
    }

    /// Connections accepted so far.
    var accepted: Int { state.withLock { $0.accepted } }
    /// Whether ``stop(waitingUpTo:)`` was called.
    var isStopped: Bool { state.withLock { $0.stopped } }

    /// Accepts until stopped; `serve` runs for each connection on its own thread, and the
    /// connection is closed when it returns.
    func acceptLoop(_ serve: @escaping @Sendable (Int32) -> Void) {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break
            }
            let admitted = state.withLock { state in
                guard !state.stopped else { return false }
                state.connections.insert(client)
                state.accepted += 1
                return true
            }
            guard admitted else {
                close(client)
                break
            }
            Thread.detachNewThread { [self] in
                serve(client)
                state.withLock { state in
                    state.connections.remove(client)
                    close(client)
                    state.signalIfAllClosed()
                }
            }
        }
        state.withLock { state in
            state.listenerOpen = false
            close(listener)
            state.signalIfAllClosed()
        }
    }

    /// Shuts the listener and every connection down (their threads then close them) and waits
    /// up to `seconds` until all are closed, so the port can be bound again. Idempotent.
    func stop(waitingUpTo seconds: Double = 0) {
        let closed = DispatchSemaphore(value: 0)
        let wait = state.withLock { state -> Bool in
            if !state.stopped {
                state.stopped = true
                if state.listenerOpen { shutdown(listener, Int32(SHUT_RDWR)) }
                for fd in state.connections { shutdown(fd, Int32(SHUT_RDWR)) }
            }
            guard seconds > 0, !state.allClosed else { return false }
            state.waitingForClose.append(closed)
            return true
        }
        if wait { _ = closed.wait(timeout: .now() + seconds) }
    }
}
