import Basics
import FoundationEssentials

/// How urgently a transfer's bytes are needed, lowest first. While a transfer of a
/// higher priority is receiving, every running transfer of a lower priority is paused
/// (`curl_easy_pause`, never cancelled) and resumes when no higher one is left.
public enum FetchPriority: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    /// Filling holes in a cached resource.
    case fillHoles = 0
    /// Preloading an upcoming track.
    case preload = 1
    /// Reading ahead of the playing track.
    case readAhead = 2
    /// The target of a seek.
    case seekTarget = 3
    /// Bytes playback is waiting for right now.
    case playback = 4

    /// Orders by urgency.
    public static func < (lhs: FetchPriority, rhs: FetchPriority) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The case name, for logs.
    public var description: String {
        switch self {
        case .fillHoles: "fill-holes"
        case .preload: "preload"
        case .readAhead: "read-ahead"
        case .seekTarget: "seek-target"
        case .playback: "playback"
        }
    }
}

/// A condition sent with a request.
public enum RequestCondition: Sendable, Equatable {
    /// `If-Range`: "send the range if the resource is still this version, else all of it".
    /// The header goes out only with a strong ETag or a date (``ResourceVersion/ifRangeValue``). A 200
    /// of another version is reported as ``TransferEvent/changed(_:)`` and its body delivered
    /// from offset 0; a 206 whose validators differ from these (see ``ResourceVersion/isSameVersion(as:)``), or
    /// that names no version when no header could be sent, fails with
    /// ``FetchError/resourceChanged(_:)``: its bytes are never joined with the held ones.
    case ifRange(ResourceVersion)
    /// `If-None-Match` (and `If-Modified-Since`): a revalidation. A 304 is reported as
    /// ``TransferEvent/notModified(_:)``; a 200 or 206 as ``TransferEvent/changed(_:)`` with the
    /// new body from offset 0. Ask from byte 0 (and set `end` to bound what a change costs).
    case ifNoneMatch(ResourceVersion)
}

/// A request for the bytes of one resource from `start` on, up to `end` (exclusive) when set.
public struct RangeRequest: Sendable, Equatable {
    /// Where the resource lives. Redirects are followed (at most 5); the caller keeps its own key.
    public var url: URL
    /// First byte wanted.
    public var start: Int64
    /// One past the last byte wanted; nil asks for everything to the end.
    public var end: Int64?
    /// The resource's total length when the caller knows it: every 206 must agree, and a 416
    /// at or past it is the end of the resource.
    public var knownLength: Int64?
    /// The version the caller holds, as `If-Range` or as a revalidation.
    public var condition: RequestCondition?
    /// How urgent the bytes are; change it later with ``Fetcher/setPriority(_:_:)``.
    public var priority: FetchPriority
    /// The caller's identity for the resource (e.g. its cache key). At most one transfer per
    /// identity runs: starting another supersedes the running one, which ends with
    /// ``FetchError/superseded``. Nil: no such rule.
    public var resource: String?
    /// Whether `end` holds only when the origin answers with a range of a resource of known
    /// length (a 206 with its total). An origin that sends the whole body (200) or no length
    /// is read to its end: the caller stopped at `end` only to ask for other bytes first, by
    /// ranges it now knows it cannot have, and cutting the body would fetch it twice.
    public var wholeBodyUnlessRanged: Bool
    /// When set, the request asks for the last `suffix` bytes (`Range: bytes=-N`) of a resource
    /// whose length the caller does not know yet, and `start` and `end` are not sent: the
    /// response's Content-Range says where the body starts (``ResponseHead/bodyStart``). An
    /// origin that answers with the whole body (200) delivers nothing: its head is reported
    /// and the transfer finishes, as the body's start is another request's to read.
    public var suffix: Int64?
    /// Whether to ask for in-stream titles (`Icy-MetaData: 1`) where a stream may begin: at
    /// byte 0, and on every connection of a live stream. A response that answers with
    /// `icy-metaint` has its metadata blocks stripped out of the body (``TransferEvent/streamMetadata(_:at:)``).
    public var asksStreamMetadata = false
    /// The resource is known to be a live stream (an earlier response said so): the request
    /// continues it at `start` as a new connection would (no Range; its titles asked for),
    /// whatever its first response says.
    public var continuesLiveStream = false

    /// Creates a request for `[start, end)` of `url`.
    public init(
        url: URL, start: Int64 = 0, end: Int64? = nil, knownLength: Int64? = nil,
        condition: RequestCondition? = nil, priority: FetchPriority = .playback, resource: String? = nil,
        wholeBodyUnlessRanged: Bool = false
    ) {
        self.wholeBodyUnlessRanged = wholeBodyUnlessRanged
        self.url = url
        self.start = start
        self.end = end
        self.knownLength = knownLength
        self.condition = condition
        self.priority = priority
        self.resource = resource
    }

    /// A request for the last `length` bytes of `url` (see ``suffix``).
    public static func lastBytes(
        _ length: Int64, of url: URL, condition: RequestCondition? = nil, priority: FetchPriority = .playback
    ) -> RangeRequest {
        var request = RangeRequest(url: url, condition: condition, priority: priority)
        request.suffix = max(1, length)
        return request
    }
}

/// What a response said about the resource, read before its first body byte.
public struct ResponseHead: Sendable, Equatable {
    /// The final HTTP status, after redirects.
    public var status: Int
    /// Where the delivered data starts within the resource: the start asked (a 200 from a server
    /// ignoring Range is skipped up to it), or 0 for a change.
    public var bodyStart: Int64
    /// The resource's total length, from Content-Range (206, 416) or Content-Length (200), when known.
    public var totalLength: Int64?
    /// The body's declared length, when the server sent Content-Length.
    public var contentLength: Int64?
    /// The ETag header, verbatim (including any `W/` prefix and quotes).
    public var etag: String?
    /// The Last-Modified header, verbatim.
    public var lastModified: String?
    /// The Content-Type header.
    public var contentType: String?
    /// The headers that say how long the response may be reused (RFC 9111).
    public var caching: CachingHeaders
    /// The station's `icy-*` headers (internet radio), when it sent any.
    public var icy = ICYHeaders()
    /// The response is a live stream (``LiveStreamDetection``): no length, no end, no version;
    /// never stored, and a new connection continues it at the live point.
    public var isLive = false
    /// When the request that drew this response left, and when its head arrived (wall clock):
    /// the response's age counts from them.
    public var requestedAt: Date
    /// When the head arrived.
    public var receivedAt: Date
    /// Whether the server answered a range request with a partial response.
    public var honoursRange: Bool { status == 206 }
    /// What a private cache may do with this response and for how long it stays fresh.
    public var cachingDecision: CachingDecision {
        HTTPFreshness.decide(caching, status: status, requestTime: requestedAt, responseTime: receivedAt)
    }
    /// The version this response describes (with its total length when known), for later
    /// `If-Range` or revalidation requests; nil when it names none.
    public var validator: ResourceVersion? { version.named }
    /// The version this response describes, named or not, with its total length when known.
    public var version: ResourceVersion {
        ResourceVersion(etag: etag, lastModified: lastModified, length: totalLength)
    }

    /// Creates a response head; every field but the status is optional.
    public init(
        status: Int, bodyStart: Int64 = 0, totalLength: Int64? = nil, contentLength: Int64? = nil,
        etag: String? = nil, lastModified: String? = nil, contentType: String? = nil,
        caching: CachingHeaders = CachingHeaders(), requestedAt: Date? = nil, receivedAt: Date? = nil
    ) {
        let now = Date()
        self.caching = caching
        self.requestedAt = requestedAt ?? receivedAt ?? now
        self.receivedAt = receivedAt ?? now
        self.status = status
        self.bodyStart = bodyStart
        self.totalLength = totalLength
        self.contentLength = contentLength
        self.etag = etag
        self.lastModified = lastModified
        self.contentType = contentType
    }
}

/// Why a transfer ended without delivering what was asked.
public enum FetchError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with a status that carries no usable body (404, other 4xx, or a
    /// retryable status once retries ran out).
    case httpStatus(Int)
    /// A 206 that does not match what was asked (start, end, `multipart/byteranges`).
    case badContentRange(String)
    /// The resource is no longer the version whose bytes were delivered or held (a 206 with
    /// another total, a 416 below the known end). Bytes held of it are stale.
    case resourceChanged(String)
    /// libcurl reported a transport error (connection, TLS, timeout) that retries did not cure.
    case transport(code: Int, message: String)
    /// The re-resolve hook gave no URL after a 401/403/410.
    case unresolvable(status: Int)
    /// Another transfer for the same ``RangeRequest/resource`` started.
    case superseded
    /// The origin redirected more often than allowed (the count): a redirect loop, or a chain
    /// too long to follow.
    case tooManyRedirects(Int)
    /// The response head is larger than libcurl accepts (endless or giant headers); the detail
    /// says which limit.
    case responseHeadTooLarge(String)
    /// The origin kept sending slower than the minimum rate (both in bytes per second), on
    /// every connection tried.
    case tooSlow(bytesPerSecond: Double, minimum: Double)
    /// The response is a live stream (``ResponseHead/isLive``) where a file was wanted.
    case liveStream

    /// A one-line explanation for logs and users.
    public var description: String {
        switch self {
        case .httpStatus(let status): "HTTP status \(status)"
        case .badContentRange(let value): "unexpected Content-Range '\(value)'"
        case .resourceChanged(let why): "the resource changed: \(why)"
        case .transport(let code, let message): "transfer failed (curl \(code)): \(message)"
        case .unresolvable(let status): "HTTP status \(status) and no new URL to try"
        case .superseded: "superseded by a newer transfer of the same resource"
        case .tooManyRedirects(let limit): "too many redirects (more than \(limit)): the server redirects in a loop"
        case .responseHeadTooLarge(let detail): "the server's response headers are too large (\(detail))"
        case .liveStream: "a live stream, not a file"
        case .tooSlow(let rate, let minimum):
            "the server is too slow: \(Int(rate.rounded())) bytes/s, below the \(Int(minimum)) bytes/s needed to play"
        }
    }

    /// "network error, cannot reach the server (…)" when no connection could be made at all
    /// (unknown proxy or host, refused, no route: curl 5, 6, 7); nil for every other failure,
    /// which a retry may well cure.
    public var unreachableServer: String? {
        guard case .transport(let code, let message) = self, [5, 6, 7].contains(code) else { return nil }
        return "network error, cannot reach the server (\(message))"
    }
}

/// A transient state of a transfer, reported for clients to show (and tests to await).
public enum TransferStatus: Sendable, Equatable {
    /// An attempt failed with `reason`; the next one starts in `seconds`.
    case retrying(in: Double, attempt: Int, reason: FetchError)
    /// A 401/403/410 answered; the re-resolve hook is asked for a new URL.
    case reresolving(status: Int)
    /// No byte arrived for `seconds`; the connection is dropped.
    case stalled(seconds: Double)
    /// Bytes arrived at only `bytesPerSecond` over a measuring window, below the minimum
    /// rate; the connection is dropped (and a new one tried while the budget lasts).
    case tooSlow(bytesPerSecond: Double)
    /// A new request continues at `offset` (after a cut, a short body, a stall or a new URL).
    case reconnecting(from: Int64)
    /// A higher-priority transfer is receiving; this one waits, its connection kept.
    case paused
    /// No higher-priority transfer is left; receiving again.
    case resumed
    /// The resource ends at `length`, before the length a response declared: the origin
    /// overstated its Content-Length (the body ended there and the origin offers no ranges to
    /// ask for more, or a range request from there was refused with this length). Nothing
    /// past it exists; `finished` follows.
    case endedShort(length: Int64)
}

/// What a transfer reports, in order: first exactly one of `response`, `changed` or
/// `notModified`; then `data` at exact, contiguous resource offsets, with `status` events
/// in between; then exactly one of `finished` or `failed`. After a reconnection finds the
/// resource changed, one more `changed` may come, after which data starts again at 0.
/// A cancelled transfer reports nothing more.
public enum TransferEvent: Sendable {
    /// The response head arrived; body bytes from the request's start follow.
    case response(ResponseHead)
    /// The resource is not the version the request's condition (or this transfer's earlier
    /// response) named: everything held of it is stale. The new body follows from offset 0,
    /// up to the request's end.
    case changed(ResponseHead)
    /// A revalidation found the resource unchanged (304); `finished` follows.
    case notModified(ResponseHead)
    /// Body bytes, starting at `offset` within the resource.
    case data(Data, offset: Int64)
    /// An ICY metadata block of a live stream; it applies to the audio from `offset` on (the
    /// offset of the next `data` byte: metadata bytes are never counted or delivered).
    case streamMetadata(ICYMetadata, at: Int64)
    /// A transient state: retrying, stalled, reconnecting, paused, resumed.
    case status(TransferStatus)
    /// Everything asked was delivered (or the resource ended before).
    case finished
    /// The transfer failed; bytes delivered before stay valid unless the error is `resourceChanged`.
    case failed(FetchError)
}

/// Identifies one transfer started by a ``Fetcher``, for cancelling it.
public struct TransferID: Hashable, Sendable, CustomStringConvertible {
    let raw: UInt64
    /// `#N`, for logs.
    public var description: String { "#\(raw)" }
}

/// Parses a `Content-Range: bytes a-b/total` value into (a, b inclusive, total or nil for `*`).
public func parseContentRange(_ value: String) -> (first: Int64, last: Int64, total: Int64?)? {
    let trimmed = value.trimmingWhitespace()
    guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
    let spec = trimmed.dropFirst(6)
    let halves = spec.split(separator: "/", maxSplits: 1)
    guard halves.count == 2 else { return nil }
    let bounds = halves[0].split(separator: "-", maxSplits: 1)
    guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first <= last
    else { return nil }
    if halves[1] == "*" { return (first, last, nil) }
    guard let total = Int64(halves[1]), total > last else { return nil }
    return (first, last, total)
}

/// Parses the total of an unsatisfied range, `Content-Range: bytes */total`.
func parseUnsatisfiedRange(_ value: String) -> Int64? {
    let trimmed = value.trimmingWhitespace()
    guard trimmed.lowercased().hasPrefix("bytes */") else { return nil }
    return Int64(trimmed.dropFirst(8))
}
