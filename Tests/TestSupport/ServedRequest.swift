import Foundation

/// One request a test server (`FaultOrigin` or `NginxServer`) answered, for asserting
/// exactly what a client fetched.
public struct ServedRequest: Sendable, Equatable {
    /// The request method.
    public var method: String
    /// The request target as sent (path and query).
    public var path: String
    /// The `Range` header, if sent.
    public var range: String?
    /// The `If-Range` header, if sent.
    public var ifRange: String?
    /// The `If-None-Match` header, if sent.
    public var ifNoneMatch: String?
    /// The `If-Modified-Since` header, if sent.
    public var ifModifiedSince: String?
    /// The response status (for `FaultOrigin`: chosen, and sent unless the client left during the first-byte latency).
    public var status: Int
    /// Body bytes actually written to the socket (chunk framing excluded).
    public var bodyBytesSent: Int

    /// Creates a record (for comparing with the log).
    public init(
        method: String = "GET", path: String, range: String? = nil, ifRange: String? = nil,
        ifNoneMatch: String? = nil, ifModifiedSince: String? = nil, status: Int, bodyBytesSent: Int
    ) {
        self.method = method
        self.path = path
        self.range = range
        self.ifRange = ifRange
        self.ifNoneMatch = ifNoneMatch
        self.ifModifiedSince = ifModifiedSince
        self.status = status
        self.bodyBytesSent = bodyBytesSent
    }
}
