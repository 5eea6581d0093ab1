import Foundation

/// A request head as the origin parsed it.
struct OriginHTTPRequest {
    let method: String
    let target: String
    let headers: [String: String]
    let keepAlive: Bool

    /// The target without its query, for looking up the resource.
    var path: String { String(target.prefix { $0 != "?" }) }

    func header(_ name: String) -> String? { headers[name] }
}

/// The body slice and framing of a response being sent.
private struct PlannedResponse {
    var status: Int
    var headers: [(String, String)] = []
    var body: Data = Data()
    /// Where the body starts in the resource (for a mid-response replacement).
    var bodyOffset = 0
    var closeAfter = false
}

/// Serves the requests of one accepted connection until it closes, a fault ends it, or the origin stops.
struct OriginConnection {
    let fd: Int32
    let core: OriginCore
    private var buffer = Data()

    init(fd: Int32, core: OriginCore) {
        self.fd = fd
        self.core = core
    }

    mutating func run() {
        while !core.isStopped, let request = readRequest() {
            guard respond(to: request) else { return }
        }
    }

    // MARK: reading

    private mutating func readRequest() -> OriginHTTPRequest? {
        let separator = Data("\r\n\r\n".utf8)
        while buffer.range(of: separator) == nil {
            guard buffer.count < 65_536, let data = Sockets.receive(fd), !data.isEmpty else { return nil }
            buffer += data
        }
        let end = buffer.range(of: separator)!
        let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
        buffer = Data(buffer[end.upperBound...])

        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ").map(String.init)
        guard requestLine.count == 3 else { return nil }
        var headers = [String: String]()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        // Discard any request body.
        if let length = headers["content-length"].flatMap(Int.init), length > 0 {
            while buffer.count < length {
                guard let data = Sockets.receive(fd), !data.isEmpty else { return nil }
                buffer += data
            }
            buffer = Data(buffer.dropFirst(length))
        }
        let connection = headers["connection"]?.lowercased() ?? ""
        let keepAlive = requestLine[2] == "HTTP/1.1" ? !connection.contains("close") : connection.contains("keep-alive")
        return OriginHTTPRequest(method: requestLine[0], target: requestLine[1], headers: headers, keepAlive: keepAlive)
    }

    // MARK: responding

    /// Answers one request; false when the connection must close.
    private func respond(to request: OriginHTTPRequest) -> Bool {
        let arrived = ContinuousClock.now
        let claimed = core.claim(request.path)
        let faults = claimed?.entry.faults ?? OriginFaults()
        var response = plan(request, claimed: claimed)
        response.closeAfter = response.closeAfter || !request.keepAlive
        var record = ServedRequest(
            method: request.method, path: request.target, range: request.header("range"),
            ifRange: request.header("if-range"), ifNoneMatch: request.header("if-none-match"),
            ifModifiedSince: request.header("if-modified-since"), status: response.status, bodyBytesSent: 0)
        core.log.begin()
        defer { core.log.append(record) }
        let servesResource = (200...206).contains(response.status) && claimed?.entry.resource != nil
        let transfer = core.timeline.begin(
            method: request.method, path: request.path, range: request.header("range"), status: response.status,
            resourceSize: servesResource ? claimed?.entry.resource?.body.count : nil, bodyOffset: response.bodyOffset,
            bodyLength: request.method == "HEAD" ? 0 : response.body.count, arrived: arrived)
        defer { core.timeline.end(transfer) }

        if faults.firstByteLatency > 0, !pause(faults.firstByteLatency) { return false }
        if let hold = faults.hold, !hold.wait(peer: fd, stopped: { core.isStopped }) { return false }
        let sendsBody = request.method != "HEAD" && response.status != 304
        let chunked = faults.chunked && response.status < 300 && sendsBody
        var head = "HTTP/1.1 \(response.status) \(Self.reason(response.status))\r\nServer: spool-fault-origin\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        if chunked {
            head += "Transfer-Encoding: chunked\r\n"
        } else if response.status != 304 {
            let lengthError = response.status < 300 ? faults.contentLengthError : 0
            head += "Content-Length: \(response.body.count + lengthError)\r\n"
            if lengthError != 0 { response.closeAfter = true }
        }
        head += "Connection: \(response.closeAfter ? "close" : "keep-alive")\r\n\r\n"
        guard Sockets.sendAll(fd, Data(head.utf8)) else { return false }
        guard sendsBody else { return !response.closeAfter }

        let applied = response.status < 300 ? faults : OriginFaults()
        let (sent, finished) = sendBody(
            response, path: request.path, faults: applied, chunked: chunked, transfer: transfer)
        record.bodyBytesSent = sent
        return finished && !response.closeAfter
    }

    /// Chooses status, headers and body for a request.
    private func plan(_ request: OriginHTTPRequest, claimed: (entry: OriginEntry, injectError: Bool)?)
        -> PlannedResponse
    {
        guard let (entry, injectError) = claimed else { return Self.message(404, "not found") }
        if injectError, let error = entry.faults.errorResponses {
            var response = Self.message(error.status, "injected failure")
            if let retryAfter = error.retryAfter { response.headers.append(("Retry-After", String(retryAfter))) }
            return response
        }
        if let redirect = entry.faults.redirect {
            var response = Self.message(redirect.status, "moved")
            let location =
                redirect.location.hasPrefix("/")
                ? URL(string: String(redirect.location.dropFirst()), relativeTo: core.baseURL)!.absoluteString
                : redirect.location
            response.headers.append(("Location", location))
            return response
        }
        guard let resource = entry.resource else { return Self.message(404, "not found") }
        guard request.method == "GET" || request.method == "HEAD" else {
            var response = Self.message(405, "method not allowed")
            response.headers.append(("Allow", "GET, HEAD"))
            return response
        }

        let validators =
            (resource.sendsETag ? [("ETag", resource.etag)] : [])
            + (resource.sendsLastModified ? [("Last-Modified", HTTPDate.format(resource.lastModified))] : [])
            + resource.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        if Self.notModified(request, resource) {
            return PlannedResponse(status: 304, headers: validators)
        }
        var response = PlannedResponse(status: 200, headers: [("Content-Type", resource.contentType)] + validators)
        response.body = resource.body
        guard !entry.faults.ignoresRange else { return response }
        response.headers.append(("Accept-Ranges", "bytes"))
        guard let rangeHeader = request.header("range"),
            entry.faults.ignoresIfRange || Self.ifRangeHolds(request, resource)
        else { return response }
        switch ByteRange.parse(rangeHeader, length: resource.body.count) {
        case .none:
            return response
        case .unsatisfiable:
            var refusal = Self.message(416, "range not satisfiable")
            refusal.headers.append(("Content-Range", "bytes */\(resource.body.count)"))
            return refusal
        case .satisfiable(let range):
            response.status = 206
            response.body = resource.body.subdata(in: range)
            response.bodyOffset = range.lowerBound
            response.headers.append(
                ("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(resource.body.count)"))
            return response
        }
    }

    private static func message(_ status: Int, _ text: String) -> PlannedResponse {
        PlannedResponse(status: status, headers: [("Content-Type", "text/plain")], body: Data("\(text)\n".utf8))
    }

    private static func notModified(_ request: OriginHTTPRequest, _ resource: OriginResource) -> Bool {
        if let tags = request.header("if-none-match"), resource.sendsETag {
            return tags.split(separator: ",").contains {
                let tag = $0.trimmingCharacters(in: .whitespaces)
                return tag == "*" || tag == resource.etag || tag == "W/" + resource.etag
            }
        }
        if let since = request.header("if-modified-since").flatMap(HTTPDate.parse), resource.sendsLastModified {
            return resource.lastModified <= since
        }
        return false
    }

    /// Whether a Range request may be honoured: no If-Range, or one naming the current version.
    private static func ifRangeHolds(_ request: OriginHTTPRequest, _ resource: OriginResource) -> Bool {
        guard let validator = request.header("if-range") else { return true }
        if validator.hasPrefix("\"") { return resource.sendsETag && validator == resource.etag }
        return resource.sendsLastModified && HTTPDate.parse(validator) == resource.lastModified
    }

    // MARK: body

    /// Sends the body under the faults; returns body bytes sent and whether the body completed.
    private func sendBody(
        _ response: PlannedResponse, path: String, faults: OriginFaults, chunked: Bool, transfer: Int
    ) -> (Int, Bool) {
        var body = response.body
        var sent = 0
        var stalled = false
        var replaced = false
        // Monotonic: the wall clock slews (NTP, up to 500 ppm), and a client timing the transfer
        // with a monotonic clock then saw it end before the cap allows.
        let started = ContinuousClock.now
        // The points where something happens, in body bytes.
        func limit(_ threshold: Int?, pending: Bool = true) -> Int? {
            guard pending, let threshold, threshold > sent else { return nil }
            return threshold - sent
        }

        while sent < body.count {
            if let close = faults.closeAfterBodyBytes, sent >= close { return (sent, false) }
            if let stall = faults.stall, !stalled, sent >= stall.afterBodyBytes {
                stalled = true
                guard pause(stall.duration) else { return (sent, false) }
            }
            if let replacement = faults.replacement, !replaced, sent >= replacement.afterBodyBytes {
                replaced = true
                core.update(path) { $0.resource = replacement.resource }
                let start = response.bodyOffset + sent
                let end = min(response.bodyOffset + response.body.count, replacement.resource.body.count)
                body = body.prefix(sent) + (start < end ? replacement.resource.body.subdata(in: start..<end) : Data())
                continue
            }

            var piece = min(body.count - sent, 16_384)
            for step in [
                limit(faults.closeAfterBodyBytes), limit(faults.stall?.afterBodyBytes, pending: !stalled),
                limit(faults.replacement?.afterBodyBytes, pending: !replaced),
            ].compactMap({ $0 }) {
                piece = min(piece, step)
            }
            if let rate = faults.bytesPerSecond, rate > 0 {
                piece = min(piece, max(1, rate / 20))
                let due = Double(sent) / Double(rate) - Self.seconds(ContinuousClock.now - started)
                if due > 0, !pause(due) { return (sent, false) }
            }
            // The link all responses share (FaultOrigin.setLinkRate).
            if let linkRate = core.link.rate {
                piece = min(piece, OriginLink.piece(rate: linkRate))
                let wait = core.link.reserve(piece)
                if wait > 0, !pause(wait) { return (sent, false) }
            }
            let bytes = body.subdata(in: sent..<sent + piece)
            let framed = chunked ? Data((String(piece, radix: 16) + "\r\n").utf8) + bytes + Data("\r\n".utf8) : bytes
            guard Sockets.sendAll(fd, framed) else { return (sent, false) }
            sent += piece
            core.timeline.progress(transfer, sent: sent)
        }
        if body.count < response.body.count { return (sent, false) }  // the replacement was shorter
        if chunked, !Sockets.sendAll(fd, Data("0\r\n\r\n".utf8)) { return (sent, false) }
        return (sent, true)
    }

    /// Waits `seconds` (nil: indefinitely) unless the client hangs up or the origin stops
    /// (which shuts the socket down); true when the full time passed.
    private func pause(_ seconds: Double?) -> Bool {
        let deadline = seconds.map { ContinuousClock.now + .nanoseconds(Int64(($0 * 1e9).rounded(.up))) }
        while true {
            let remaining = deadline.map { max(0, Self.seconds($0 - ContinuousClock.now)) }
            if remaining == 0 { return !core.isStopped }
            var descriptor = pollfd(fd: fd, events: Sockets.peerHangUp, revents: 0)
            let ready = poll(&descriptor, 1, remaining.map { Int32(($0 * 1000).rounded(.up)) } ?? -1)
            if ready > 0 || core.isStopped { return false }
            if ready < 0 && errno != EINTR { return false }
        }
    }

    /// `duration` in seconds.
    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 416: "Range Not Satisfiable"
        case 500..<600: "Server Error"
        default: "Status"
        }
    }
}

/// A single-range `Range: bytes=…` header evaluated against a body length.
enum ByteRange: Equatable {
    /// Absent, malformed, multi-range or non-byte: serve the whole body.
    case none
    /// No byte of the body is in the range: 416.
    case unsatisfiable
    /// The bytes to send.
    case satisfiable(Range<Int>)

    static func parse(_ header: String, length: Int) -> ByteRange {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.hasPrefix("bytes="), !value.contains(",") else { return .none }
        let spec = value.dropFirst("bytes=".count)
        guard let dash = spec.firstIndex(of: "-") else { return .none }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            guard let suffix = Int(last) else { return .none }
            return suffix == 0 || length == 0 ? .unsatisfiable : .satisfiable(max(0, length - suffix)..<length)
        }
        guard let start = Int(first) else { return .none }
        let end: Int
        if last.isEmpty {
            end = length - 1
        } else {
            guard let parsed = Int(last), parsed >= start else { return .none }
            end = min(parsed, length - 1)
        }
        return start >= length ? .unsatisfiable : .satisfiable(start..<end + 1)
    }
}

/// IMF-fixdate formatting and parsing (`Sun, 06 Nov 1994 08:49:37 GMT`), as used by
/// `Last-Modified`, `If-Modified-Since` and date-form `If-Range`.
public enum HTTPDate {
    private static func formatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }

    /// `date` as an HTTP date (whole seconds).
    public static func format(_ date: Date) -> String { formatter().string(from: date) }

    /// The date an HTTP date names, nil when malformed.
    public static func parse(_ text: String) -> Date? { formatter().date(from: text) }
}
