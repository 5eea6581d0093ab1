import Dispatch
import Foundation
import Synchronization

/// One accepted connection of a ``ScriptedOrigin``: the request head it read, and a counted send.
public struct ScriptedConnection: Sendable {
    let fd: Int32
    /// The request head as received (request line and headers, CRLF-separated).
    public let requestHead: String
    private let origin: ScriptedOriginCore

    init(fd: Int32, requestHead: String, origin: ScriptedOriginCore) {
        self.fd = fd
        self.requestHead = requestHead
        self.origin = origin
    }

    /// Sends `data`; false once the client hung up or the origin stopped.
    public func send(_ data: Data) -> Bool {
        guard !origin.isStopped, Sockets.sendAll(fd, data) else { return false }
        origin.count(data.count)
        return true
    }

    /// Sends `text` as UTF-8.
    public func send(_ text: String) -> Bool { send(Data(text.utf8)) }
}

/// A loopback HTTP origin whose every response is written by a script, byte by byte if need be:
/// for malformed or hostile answers (endless headers) that a well-behaved origin cannot give.
/// Each connection's request head is read, then the script runs on that connection's thread
/// and the connection is closed when it returns. Stops by itself after `lifetime` seconds.
public final class ScriptedOrigin: Sendable {
    /// `http://127.0.0.1:port/`.
    public let baseURL: URL
    private let core: ScriptedOriginCore

    /// Starts listening on a free loopback port; `script` answers each connection.
    public init(lifetime: Double = 60, script: @escaping @Sendable (ScriptedConnection) -> Void) throws {
        let server = try LoopbackServer(port: 0, backlog: 16)
        let port = server.port
        baseURL = URL(string: "http://127.0.0.1:\(port)/")!
        let core = ScriptedOriginCore(server: server, script: script)
        self.core = core
        Thread.detachNewThread { core.acceptLoop() }
        DispatchQueue.global().asyncAfter(deadline: .now() + lifetime) { [weak core] in core?.stop() }
    }

    deinit { core.stop() }

    /// The absolute URL of `path`.
    public func url(for path: String) -> URL { URL(string: "http://127.0.0.1:\(baseURL.port!)\(path)")! }

    /// Connections accepted so far.
    public var connections: Int { core.server.accepted }

    /// Bytes the scripts managed to send, over all connections.
    public var bytesSent: Int { core.bytesSent }

    /// Closes the listener and every connection. Idempotent.
    public func stop() { core.stop() }
}

final class ScriptedOriginCore: Sendable {
    let server: LoopbackServer
    let script: @Sendable (ScriptedConnection) -> Void
    /// Bytes the scripts sent.
    private let sent = Mutex(0)

    init(server: LoopbackServer, script: @escaping @Sendable (ScriptedConnection) -> Void) {
        self.server = server
        self.script = script
    }

    var isStopped: Bool { server.isStopped }

    var bytesSent: Int { sent.withLock { $0 } }

    func count(_ bytes: Int) { sent.withLock { $0 += bytes } }

    func acceptLoop() {
        server.acceptLoop { [self] client in
            var head = Data()
            while head.range(of: Data("\r\n\r\n".utf8)) == nil, head.count < 65_536,
                let data = Sockets.receive(client), !data.isEmpty
            {
                head += data
            }
            script(ScriptedConnection(fd: client, requestHead: String(decoding: head, as: UTF8.self), origin: self))
        }
    }

    func stop() { server.stop() }
}
