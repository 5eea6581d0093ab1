import Dispatch
import Foundation
import Synchronization

/// A file the fault origin serves: bytes plus the validators conditional and range requests use.
public struct OriginResource: Sendable, Equatable {
    /// The full body.
    public var body: Data
    /// The entity tag, quotes included (e.g. `"v1"`).
    public var etag: String
    /// The modification time (whole seconds, as HTTP dates carry no more).
    public var lastModified: Date
    /// The `Content-Type` header value.
    public var contentType: String
    /// Whether responses carry `ETag` (and conditions on it are honoured).
    public var sendsETag: Bool
    /// Whether responses carry `Last-Modified` (and conditions on the date are honoured).
    public var sendsLastModified: Bool
    /// More headers for every response to it, 304s included (as an origin sends its caching
    /// headers with both).
    public var headers: [String: String]

    /// The caching headers a resource has unless a test says otherwise: stale at once, so a
    /// replay checks it with the origin (with only its Last-Modified of 2023, a cache would
    /// count it fresh for a day, RFC 9111 §4.2.2).
    public static let staleAtOnce = ["Cache-Control": "max-age=0"]

    /// Creates a resource; by default with a fresh random strong ETag and a fixed date in 2023,
    /// both sent (`sendsETag`, `sendsLastModified`: false plays an origin that omits one), and
    /// stale at once (``staleAtOnce``).
    public init(
        _ body: Data, etag: String? = nil, lastModified: Date = Date(timeIntervalSince1970: 1_700_000_000),
        contentType: String = "application/octet-stream", sendsETag: Bool = true, sendsLastModified: Bool = true,
        headers: [String: String] = OriginResource.staleAtOnce
    ) {
        self.headers = headers
        self.body = body
        self.etag = etag ?? "\"\(UUID().uuidString.prefix(12).lowercased())\""
        self.lastModified = Date(timeIntervalSince1970: lastModified.timeIntervalSince1970.rounded(.down))
        self.contentType = contentType
        self.sendsETag = sendsETag
        self.sendsLastModified = sendsLastModified
    }
}

/// Misbehaviours applied to one path's responses; everything is off by default.
/// Changeable while the origin runs (`FaultOrigin.setFaults`); a request uses the faults
/// in force when it arrived.
public struct OriginFaults: Sendable, Equatable {
    /// Error responses sent instead of the resource for the first `count` requests.
    public struct ErrorResponses: Sendable, Equatable {
        /// How many requests get the error.
        public var count: Int
        /// The status sent (a 5xx).
        public var status: Int
        /// A `Retry-After` value in seconds, if any.
        public var retryAfter: Int?
        /// Creates the plan.
        public init(count: Int, status: Int = 503, retryAfter: Int? = nil) {
            self.count = count
            self.status = status
            self.retryAfter = retryAfter
        }
    }

    /// A pause in the middle of a body.
    public struct Stall: Sendable, Equatable {
        /// Body bytes sent before the pause.
        public var afterBodyBytes: Int
        /// How long the pause lasts; nil stalls until the client disconnects (or the origin stops).
        public var duration: Double?
        /// Creates the stall.
        public init(afterBodyBytes: Int, duration: Double? = nil) {
            self.afterBodyBytes = afterBodyBytes
            self.duration = duration
        }
    }

    /// The resource changing on the origin while a response is being sent.
    public struct Replacement: Sendable, Equatable {
        /// Body bytes sent before the swap; the rest of the response comes from `resource`.
        public var afterBodyBytes: Int
        /// The new bytes and validators, served to every later request as well.
        public var resource: OriginResource
        /// Creates the replacement.
        public init(afterBodyBytes: Int, resource: OriginResource) {
            self.afterBodyBytes = afterBodyBytes
            self.resource = resource
        }
    }

    /// A redirect answered instead of the resource.
    public struct Redirect: Sendable, Equatable {
        /// 301, 302, 307 or 308.
        public var status: Int
        /// The target: a path on this origin (`/other`) or an absolute URL.
        public var location: String
        /// Creates the redirect.
        public init(status: Int = 302, location: String) {
            self.status = status
            self.location = location
        }
    }

    /// Seconds before the response head is sent.
    public var firstByteLatency: Double = 0
    /// A bandwidth cap for the body in bytes per second.
    public var bytesPerSecond: Int?
    /// Close the connection after sending this many body bytes.
    public var closeAfterBodyBytes: Int?
    /// Error responses for the first requests.
    public var errorResponses: ErrorResponses?
    /// Answer every Range request with 200 and the full body (and no `Accept-Ranges`).
    public var ignoresRange = false
    /// Honour Range even when `If-Range` names another version (as some servers and caches do).
    public var ignoresIfRange = false
    /// Send the body with chunked transfer encoding and no `Content-Length`.
    public var chunked = false
    /// Declare `Content-Length` this many bytes off the truth (positive: more than sent); the
    /// connection is closed after such a response.
    public var contentLengthError = 0
    /// Swap the resource in the middle of a response.
    public var replacement: Replacement?
    /// Answer with a redirect.
    public var redirect: Redirect?
    /// Pause in the middle of the body.
    public var stall: Stall?
    /// Hold the response head until the test releases it (after `firstByteLatency`).
    public var hold: ResponseHold?

    /// Creates a set of faults; with no arguments, none.
    public init(
        firstByteLatency: Double = 0, bytesPerSecond: Int? = nil, closeAfterBodyBytes: Int? = nil,
        errorResponses: ErrorResponses? = nil, ignoresRange: Bool = false, chunked: Bool = false,
        contentLengthError: Int = 0, replacement: Replacement? = nil, redirect: Redirect? = nil, stall: Stall? = nil,
        ignoresIfRange: Bool = false, hold: ResponseHold? = nil
    ) {
        self.firstByteLatency = firstByteLatency
        self.bytesPerSecond = bytesPerSecond
        self.closeAfterBodyBytes = closeAfterBodyBytes
        self.errorResponses = errorResponses
        self.ignoresRange = ignoresRange
        self.chunked = chunked
        self.contentLengthError = contentLengthError
        self.replacement = replacement
        self.redirect = redirect
        self.stall = stall
        self.ignoresIfRange = ignoresIfRange
        self.hold = hold
    }
}

/// A fault-injecting HTTP/1.1 origin on 127.0.0.1 built on POSIX sockets: in-memory
/// resources with Range, conditional requests and keep-alive, plus per-path faults
/// (latency, bandwidth caps, early closes, 5xx, ignored ranges, chunking, wrong lengths,
/// changing files, redirects, stalls). One thread accepts, one thread serves each connection.
/// Every request is logged. `stop()` (or release, or the end of `lifetime`) closes
/// the listener and every connection.
public final class FaultOrigin: Sendable {
    /// The port the origin listens on.
    public let port: UInt16
    /// `http://127.0.0.1:port/`.
    public let baseURL: URL
    private let core: OriginCore
    /// The link every response shares (`setLinkRate`).
    var link: OriginLink { core.link }
    /// The live record of every response (`transfers()`).
    var timeline: OriginTimeline { core.timeline }

    /// Starts listening on `port` (0: a free one, the default); the origin stops by itself
    /// after `lifetime` seconds. A given port may be one an origin stopped a moment ago
    /// (the same server coming back): the address is reused.
    public init(port requested: UInt16 = 0, lifetime: Double = 600) throws {
        let server = try LoopbackServer(port: requested, backlog: 64)
        port = server.port
        baseURL = URL(string: "http://127.0.0.1:\(port)/")!
        let core = OriginCore(server: server, baseURL: baseURL)
        self.core = core
        Thread.detachNewThread { core.acceptLoop() }
        DispatchQueue.global().asyncAfter(deadline: .now() + lifetime) { [weak core] in core?.stop() }
    }

    deinit { core.stop() }

    /// The absolute URL of `path` (with or without a leading slash).
    public func url(for path: String) -> URL {
        URL(string: path.hasPrefix("/") ? String(path.dropFirst()) : path, relativeTo: baseURL)!.absoluteURL
    }

    /// Serves `resource` at `path` with `faults`, replacing whatever was there
    /// (and restarting the error-response count).
    public func serve(_ resource: OriginResource, at path: String, faults: OriginFaults = OriginFaults()) {
        core.update(path) { $0 = OriginEntry(resource: resource, faults: faults) }
    }

    /// Replaces the bytes and validators at `path`, keeping its faults: the file changed between requests.
    public func replace(_ path: String, with resource: OriginResource) {
        core.update(path) { $0.resource = resource }
    }

    /// Sets the faults for `path` (restarting the error-response count).
    public func setFaults(_ faults: OriginFaults, for path: String) {
        core.update(path) {
            $0.faults = faults
            $0.errorsSent = 0
        }
    }

    /// Answers `path` with a redirect to `location` (a path here or an absolute URL).
    public func redirect(_ path: String, to location: String, status: Int = 302) {
        var faults = OriginFaults()
        faults.redirect = .init(status: status, location: location)
        core.update(path) { $0 = OriginEntry(resource: nil, faults: faults) }
    }

    /// What `path` serves now (after any replacement).
    public func resource(at path: String) -> OriginResource? { core.entry(path)?.resource }

    /// Every request handled so far, in the order the responses ended.
    public func requests() -> [ServedRequest] { core.log.entries() }

    /// The request log once it holds at least `count` entries (a response is logged after its
    /// last byte, so it can lag the client); throws after `timeout` seconds.
    public func requests(atLeast count: Int, timeout: Double = 5) throws -> [ServedRequest] {
        let entries = core.log.wait(forCount: count, timeout: timeout)
        guard entries.count >= count else {
            throw RigError("origin logged \(entries.count) requests, expected \(count): \(entries)")
        }
        return entries
    }

    /// Every request, once each response under way has ended (a response is logged after its
    /// last byte or when its client hangs up): the complete log after a client closed its
    /// transfers. Throws after `timeout` seconds.
    public func settledRequests(timeout: Double = 5) throws -> [ServedRequest] {
        try requests(atLeast: core.log.begun, timeout: timeout)
    }

    /// How many requests have begun (a response is logged only after its last byte).
    public var requestsBegun: Int { core.log.begun }

    /// Empties the request log.
    public func clearRequests() { core.log.clear() }

    /// How many connections the origin has accepted (to check keep-alive reuse).
    public var acceptedConnections: Int { core.acceptedConnections }

    /// Closes the listener and every open connection, and waits (up to 2 s) until their
    /// sockets are closed, so that the port can be bound again at once. Idempotent.
    public func stop() { core.stop(waitingUpTo: 2) }
}

/// What one path serves.
struct OriginEntry: Sendable {
    var resource: OriginResource?
    var faults: OriginFaults
    var errorsSent = 0

    init(resource: OriginResource?, faults: OriginFaults) {
        self.resource = resource
        self.faults = faults
    }
}

/// The request log, with waiting for a count.
final class OriginLog: Sendable {
    private struct State {
        var entries: [ServedRequest] = []
        /// Requests whose response began, logged or not (less those cleared).
        var begun = 0
        var waiters: [(count: Int, signal: DispatchSemaphore)] = []
    }
    private let state = Mutex(State())

    func append(_ entry: ServedRequest) {
        let ready = state.withLock { state in
            state.entries.append(entry)
            let count = state.entries.count
            let ready = state.waiters.filter { $0.count <= count }.map(\.signal)
            state.waiters.removeAll { $0.count <= count }
            return ready
        }
        ready.forEach { $0.signal() }
    }

    func entries() -> [ServedRequest] { state.withLock { $0.entries } }

    /// A response begins; it is appended when it ends.
    func begin() { state.withLock { $0.begun += 1 } }

    var begun: Int { state.withLock { $0.begun } }

    func clear() {
        state.withLock { state in
            state.begun -= state.entries.count
            state.entries.removeAll()
        }
    }

    func wait(forCount count: Int, timeout: Double) -> [ServedRequest] {
        let signal = DispatchSemaphore(value: 0)
        let satisfied = state.withLock { state in
            if state.entries.count >= count { return true }
            state.waiters.append((count, signal))
            return false
        }
        if !satisfied { _ = signal.wait(timeout: .now() + timeout) }
        return entries()
    }
}

/// The origin's shared state, owned by its threads (the public wrapper's release stops it).
final class OriginCore: Sendable {
    private struct State {
        var entries: [String: OriginEntry] = [:]
    }

    let server: LoopbackServer
    let baseURL: URL
    let log = OriginLog()
    let link = OriginLink()
    let timeline = OriginTimeline()
    private let state = Mutex(State())

    init(server: LoopbackServer, baseURL: URL) {
        self.server = server
        self.baseURL = baseURL
    }

    var acceptedConnections: Int { server.accepted }
    var isStopped: Bool { server.isStopped }

    func update(_ path: String, _ change: (inout OriginEntry) -> Void) {
        state.withLock { state in
            var entry = state.entries[path] ?? OriginEntry(resource: nil, faults: OriginFaults())
            change(&entry)
            state.entries[path] = entry
        }
    }

    func entry(_ path: String) -> OriginEntry? { state.withLock { $0.entries[path] } }

    /// The entry for a request, counting it against the error-response plan.
    /// Returns the entry and whether this request gets the injected error.
    func claim(_ path: String) -> (entry: OriginEntry, injectError: Bool)? {
        state.withLock { state in
            guard var entry = state.entries[path] else { return nil }
            let injectError = entry.errorsSent < (entry.faults.errorResponses?.count ?? 0)
            if injectError { entry.errorsSent += 1 }
            state.entries[path] = entry
            return (entry, injectError)
        }
    }

    func acceptLoop() {
        server.acceptLoop { [self] client in
            Sockets.disableNagle(client)  // heads and bodies go out in separate sends
            var connection = OriginConnection(fd: client, core: self)
            connection.run()
        }
    }

    /// Shuts the listener and every connection down; see ``LoopbackServer/stop(waitingUpTo:)``.
    func stop(waitingUpTo seconds: Double = 0) { server.stop(waitingUpTo: seconds) }
}
