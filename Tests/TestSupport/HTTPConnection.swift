import Foundation

/// A parsed HTTP response as it arrived on the wire.
public struct HTTPResponse: Sendable {
    /// The status code.
    public let status: Int
    /// Response headers by lower-cased name (repeated headers joined with ", ").
    public let headers: [String: String]
    /// The body bytes received (chunked framing removed).
    public let body: Data
    /// Whether the body matched its framing: all Content-Length bytes, or the final chunk,
    /// or the close that ends an unframed body. False when the connection ended or timed out early.
    public let isComplete: Bool

    /// The value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A minimal blocking HTTP/1.1 client on one TCP connection to 127.0.0.1, for tests that
/// must see exactly what a server sends: wrong lengths, truncated bodies, stalls, keep-alive.
public final class HTTPConnection {
    private let fd: Int32
    private let port: UInt16
    private var buffer = Data()
    private var peerClosed = false
    private var isOpen = true

    /// Connects to `127.0.0.1:port`; every receive gives up after `receiveTimeout` seconds.
    public init(port: UInt16, receiveTimeout: Double = 5) throws {
        self.port = port
        fd = try Sockets.connectLoopback(port: port, receiveTimeout: receiveTimeout)
    }

    deinit { close() }

    /// Sends raw request bytes.
    public func send(raw text: String) throws {
        guard Sockets.sendAll(fd, Data(text.utf8)) else { throw RigError("send failed: errno \(errno)") }
    }

    /// Sends a request (with `Host` added) and reads its response.
    public func request(
        _ path: String, method: String = "GET", headers: [String: String] = [:]
    ) throws -> HTTPResponse {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        try send(raw: text + "\r\n")
        return try readResponse(method: method)
    }

    /// Reads one response. Throws when not even the head arrives; a body cut short by a
    /// close or a receive timeout gives `isComplete == false`.
    public func readResponse(method: String = "GET") throws -> HTTPResponse {
        let separator = Data("\r\n\r\n".utf8)
        while buffer.range(of: separator) == nil {
            guard fill() else {
                throw RigError("no complete response head; got \(String(decoding: buffer, as: UTF8.self))")
            }
        }
        let headEnd = buffer.range(of: separator)!
        let head = String(decoding: buffer[..<headEnd.lowerBound], as: UTF8.self)
        buffer = Data(buffer[headEnd.upperBound...])

        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw RigError("bad status line in \(head)")
        }
        var headers = [String: String]()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }

        let body: Data
        let complete: Bool
        if method == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status) {
            (body, complete) = (Data(), true)
        } else if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            (body, complete) = readChunked()
        } else if let length = headers["content-length"].flatMap(Int.init) {
            (body, complete) = readExactly(length)
        } else {
            body = readToEnd()
            complete = peerClosed
        }
        return HTTPResponse(status: status, headers: headers, body: body, isComplete: complete)
    }

    /// Everything left on the connection until the peer closes it (or a receive times out).
    public func readToEnd() -> Data {
        while fill() {}
        defer { buffer = Data() }
        return buffer
    }

    /// Whether the server has closed the connection (waits up to the receive timeout for data or a close).
    public var isClosedByPeer: Bool {
        if peerClosed { return true }
        if !buffer.isEmpty { return false }
        _ = fill()
        return peerClosed
    }

    /// Closes the connection.
    public func close() {
        guard isOpen else { return }
        isOpen = false
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }

    /// Appends received bytes to the buffer; false on close, error or timeout.
    private func fill() -> Bool {
        guard isOpen, !peerClosed else { return false }
        guard let data = Sockets.receive(fd) else { return false }
        if data.isEmpty {
            peerClosed = true
            return false
        }
        buffer += data
        return true
    }

    private func readExactly(_ count: Int) -> (Data, Bool) {
        while buffer.count < count, fill() {}
        let taken = Data(buffer.prefix(count))
        buffer = Data(buffer.dropFirst(count))
        return (taken, taken.count == count)
    }

    private func readLine() -> String? {
        let crlf = Data("\r\n".utf8)
        while buffer.range(of: crlf) == nil { guard fill() else { return nil } }
        let end = buffer.range(of: crlf)!
        let line = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
        buffer = Data(buffer[end.upperBound...])
        return line
    }

    private func readChunked() -> (Data, Bool) {
        var body = Data()
        while let line = readLine(), let size = Int(line.split(separator: ";")[0], radix: 16) {
            if size == 0 {
                while let trailer = readLine(), !trailer.isEmpty {}
                return (body, true)
            }
            let (chunk, whole) = readExactly(size)
            body += chunk
            guard whole, readLine() != nil else { return (body, false) }
        }
        return (body, false)
    }
}
