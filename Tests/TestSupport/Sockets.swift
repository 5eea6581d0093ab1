import Foundation

/// Small POSIX socket helpers shared by the rig's HTTP client and fault-injecting origin.
enum Sockets {
    /// Linux's POLLRDHUP (the peer closed its end), which Glibc does not export to Swift.
    static let peerHangUp: Int16 = 0x2000

    /// A new IPv4 TCP socket.
    static func tcp() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RigError("socket() failed: errno \(errno)") }
        return fd
    }

    /// Calls `body` with `127.0.0.1:port` as a `sockaddr` (port 0: any free port).
    static func withLoopbackAddress<T>(port: UInt16, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    /// The local port `fd` is bound to.
    static func boundPort(_ fd: Int32) throws -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw RigError("getsockname() failed: errno \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Binds `fd` to `127.0.0.1:port`.
    static func bindLoopback(_ fd: Int32, port: UInt16) throws {
        let bound = withLoopbackAddress(port: port) { bind(fd, $0, $1) }
        guard bound == 0 else { throw RigError("bind(127.0.0.1:\(port)) failed: errno \(errno)") }
    }

    /// A socket connected to `127.0.0.1:port`, with `timeout` seconds for each receive.
    /// A socket listening on 127.0.0.1:`port` (0: a free one) and the port it got. Address reuse
    /// is allowed: connections it accepts inherit the flag, and one the server closed first
    /// waits in TIME_WAIT, which would block a later bind of the port (a server coming back).
    static func listenLoopback(port: UInt16, backlog: Int32) throws -> (fd: Int32, port: UInt16) {
        let listener = try tcp()
        do {
            var reuse: Int32 = 1
            setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
            try bindLoopback(listener, port: port)
            guard listen(listener, backlog) == 0 else { throw RigError("listen() failed: errno \(errno)") }
            return (listener, try boundPort(listener))
        } catch {
            close(listener)
            throw error
        }
    }

    static func connectLoopback(port: UInt16, receiveTimeout: Double) throws -> Int32 {
        let fd = try tcp()
        let connected = withLoopbackAddress(port: port) { connect(fd, $0, $1) }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw RigError("connect(127.0.0.1:\(port)) failed: errno \(code)")
        }
        var interval = timeval(
            tv_sec: Int(receiveTimeout), tv_usec: Int((receiveTimeout.truncatingRemainder(dividingBy: 1)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Sends small writes at once instead of waiting for the peer's delayed ACK.
    static func disableNagle(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Sends all of `data`; false when the peer is gone. Never raises SIGPIPE.
    static func sendAll(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let sent = send(fd, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0 && errno == EINTR { continue }
                guard sent > 0 else { return false }
                offset += sent
            }
            return true
        }
    }

    /// Receives up to `limit` bytes: nil on error or timeout, empty on orderly close.
    static func receive(_ fd: Int32, limit: Int = 65_536) -> Data? {
        var buffer = [UInt8](repeating: 0, count: limit)
        while true {
            let count = recv(fd, &buffer, limit, 0)
            if count < 0 && errno == EINTR { continue }
            return count < 0 ? nil : Data(buffer[0..<count])
        }
    }
}

/// A Unix socket listening at `path` (its descriptor, for the caller to close): a file that
/// is no regular file, for tests of what refuses one.
public func listeningUnixSocket(at path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw RigError("socket: \(errno)") }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in bytes.prefix(raw.count - 1).enumerated() { raw[index] = byte }
    }
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard bound == 0, listen(fd, 1) == 0 else {
        close(fd)
        throw RigError("bind \(path): \(errno)")
    }
    return fd
}
