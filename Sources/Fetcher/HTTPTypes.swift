import Foundation

/// A request for the bytes of one resource from `start` on, up to `end` (exclusive) when set.
public struct RangeRequest: Sendable, Equatable {
    /// Where the resource lives. Redirects are followed; the caller keeps its own key.
    public var url: URL
    /// First byte wanted.
    public var start: Int64
    /// One past the last byte wanted; nil asks for everything to the end.
    public var end: Int64?

    /// Creates a request for `[start, end)` of `url`.
    public init(url: URL, start: Int64 = 0, end: Int64? = nil) {
        self.url = url
        self.start = start
        self.end = end
    }

    /// The value of the HTTP `Range` header, without the `bytes=` unit (curl's CURLOPT_RANGE form).
    var rangeValue: String {
        if let end { return "\(start)-\(end - 1)" }
        return "\(start)-"
    }
}

/// What a response said about the resource, read before its first body byte.
public struct ResponseHead: Sendable, Equatable {
    /// The final HTTP status, after redirects.
    public var status: Int
    /// The first byte of the body within the resource: the Content-Range start for 206, 0 for 200.
    public var bodyStart: Int64
    /// The resource's total length, from Content-Range (206) or Content-Length (200), when known.
    public var totalLength: Int64?
    /// The body's declared length, when the server sent Content-Length.
    public var contentLength: Int64?
    /// The ETag header, verbatim (including any `W/` prefix and quotes).
    public var etag: String?
    /// The Last-Modified header, verbatim.
    public var lastModified: String?
    /// The Content-Type header.
    public var contentType: String?
    /// Whether the server answered a range request with a partial response.
    public var honoursRange: Bool { status == 206 }

    /// Creates a response head; every field but the status is optional.
    public init(
        status: Int, bodyStart: Int64 = 0, totalLength: Int64? = nil, contentLength: Int64? = nil,
        etag: String? = nil, lastModified: String? = nil, contentType: String? = nil
    ) {
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
    /// The server answered with a status that carries no usable body.
    case httpStatus(Int)
    /// A 206 whose Content-Range does not match what was asked.
    case badContentRange(String)
    /// libcurl reported a transport error (connection, TLS, timeout, stall).
    case transport(code: Int, message: String)

    /// A one-line explanation for logs and users.
    public var description: String {
        switch self {
        case .httpStatus(let status): "HTTP status \(status)"
        case .badContentRange(let value): "unexpected Content-Range '\(value)'"
        case .transport(let code, let message): "transfer failed (curl \(code)): \(message)"
        }
    }
}

/// What a transfer reports, in order: one `response`, any number of `data`,
/// then exactly one of `finished` or `failed`. A cancelled transfer reports nothing more.
public enum TransferEvent: Sendable {
    /// The response head arrived; body bytes follow.
    case response(ResponseHead)
    /// Body bytes, starting at `offset` within the resource.
    case data(Data, offset: Int64)
    /// The body ended cleanly.
    case finished
    /// The transfer failed; bytes delivered before stay valid.
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
    let trimmed = value.trimmingCharacters(in: .whitespaces)
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
