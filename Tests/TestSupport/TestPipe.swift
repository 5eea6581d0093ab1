import Foundation
import Synchronization

/// A one-way pipe for tests that hand one end to someone else (over D-Bus, say)
/// and watch the other. Both ends are created close-on-exec, so that no child
/// process the test starts inherits a copy and keeps the pipe open; it is a
/// connected pair of Unix stream sockets because `pipe2(O_CLOEXEC)` is not
/// visible to Swift (`_GNU_SOURCE`) and `pipe` + `fcntl` races with spawns on
/// other threads.
public final class TestPipe: Sendable {
    /// The read end; owned by this object.
    public let readEnd: Int32
    /// The write end until it is taken or closed (then -1).
    private let writeEnd: Mutex<Int32>

    /// Opens the pipe.
    public init() throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw RigError("socketpair failed: errno \(errno)")
        }
        shutdown(fds[0], Int32(SHUT_WR))  // one way: the read end only reads
        readEnd = fds[0]
        writeEnd = Mutex(fds[1])
    }

    deinit {
        close(readEnd)
        closeWriteEnd()
    }

    /// Gives up the write end: the caller owns (and must close) what this returns; -1 when already gone.
    public func takeWriteEnd() -> Int32 {
        writeEnd.withLock { fd in
            defer { fd = -1 }
            return fd
        }
    }

    /// Closes this object's write end, if it still has it.
    public func closeWriteEnd() {
        let fd = takeWriteEnd()
        if fd >= 0 { close(fd) }
    }

    /// Reads until every write end is closed (end of file) or `timeout` seconds pass.
    /// Returns what arrived and whether the end of file was seen.
    public func readUntilEnd(timeout: Double) -> (data: Data, ended: Bool) {
        let deadline = Date().addingTimeInterval(timeout)
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return (data, false) }
            var ready = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, Int32(min(remaining * 1000, 60_000)) + 1)
            if polled < 0, errno != EINTR { return (data, false) }
            guard polled > 0 else { continue }
            let count = read(readEnd, &buffer, buffer.count)
            if count == 0 { return (data, true) }
            if count > 0 { data.append(contentsOf: buffer[0..<count]) }
        }
    }

    /// Whether the pipe has ended (every write end closed) within `timeout` seconds;
    /// bytes written meanwhile are read and dropped.
    public func waitForEnd(timeout: Double) -> Bool {
        readUntilEnd(timeout: timeout).ended
    }
}
