import Basics
import FoundationEssentials
import Glibc

/// Tunables of a ``Fetcher``. The defaults are the production values; tests shorten the times.
public struct FetcherConfiguration: Sendable {
    /// Sent as `User-Agent`; names Spool and its version (`Spool/1.2.3`).
    public var userAgent: String

    /// The value every request of this fetcher sends for the header `name` (any case), nil
    /// for one it does not send; the conditions and `Range` vary per request and are not
    /// among them. A response's `Vary` is matched against these.
    public func requestHeader(_ name: String) -> String? {
        switch name.lowercased() {
        case "user-agent": userAgent
        case "accept-encoding": Self.acceptEncoding
        default: nil
        }
    }

    /// Sent as `Accept-Encoding`: byte ranges are of the file itself, never of a compressed form.
    static let acceptEncoding = "identity"
    /// No byte for this long drops the connection and reconnects from the next byte.
    public var stallTimeout: Double = 15
    /// The first retry waits about this long (jittered down to half); each further one doubles it.
    public var retryBaseDelay: Double = 0.5
    /// The longest backoff between two attempts.
    public var retryMaxDelay: Double = 30
    /// The longest `Retry-After` honoured; longer values wait this long.
    public var retryAfterLimit: Double = 60
    /// Failed attempts in a row (no byte arriving in between) before the transfer fails.
    public var maxAttempts: Int = 8
    /// Seconds of failing in a row (no byte arriving) before the transfer fails.
    public var maxRetryDuration: Double = 180
    /// Re-resolves in a row (after 401/403/410, no byte in between) before the transfer fails.
    public var maxReresolves: Int = 2
    /// Redirects followed per request; one more fails the transfer (a redirect loop ends there).
    public var maxRedirects: Int = 5
    /// Body bytes per second below which a measuring window counts as too slow: less than
    /// any audio stream needs to play (the lowest bitrates in use are about 4 KB/s). Zero or
    /// less turns the check off.
    public var minimumRate: Double = 1024
    /// The length of one measuring window of the rate, in seconds.
    public var slowWindow: Double = 30
    /// Too-slow windows in a row (each followed by a new connection) before the transfer fails.
    public var maxSlowAttempts: Int = 3
    /// No byte of a live stream for this long drops its connection and reconnects: a live
    /// stream arrives as fast as it plays, so seconds of silence on the wire are a dead
    /// connection, and the listener has only the few seconds held in memory.
    public var liveStallTimeout: Double = 4
    /// Seconds of a live stream failing in a row before the transfer fails: a station gone
    /// for good is reported within this bound.
    public var liveRetryDuration: Double = 60

    /// Production settings with `userAgent`.
    public init(userAgent: String) {
        self.userAgent = userAgent
    }
}

/// What one attempt asked for: the policy's view of a request on the wire.
struct AttemptPlan: Equatable {
    /// The first byte asked (the first byte not yet delivered).
    var start: Int64
    /// One past the last byte asked, when bounded.
    var end: Int64?
    /// The total length this attempt's answer must agree with, when known.
    var knownLength: Int64?
    /// The condition sent.
    var condition: RequestCondition?
    /// The last bytes asked for, with no start known (`bytes=-N`): `start` and `end` are unused.
    var suffix: Int64? = nil
}

/// The response head as the policy reads it.
struct HeadFields {
    var status: Int
    var header: (String) -> String?
}

/// What to do with a response head. Pure: decided from the plan and the head only.
enum HeadVerdict: Equatable {
    /// Use the body: its first byte is at `bodyStart`; the body ends at `declaredEnd` when known.
    case accept(bodyStart: Int64, total: Int64?, declaredEnd: Int64?)
    /// Another version than the condition named; its body starts at 0.
    case changed(total: Int64?, declaredEnd: Int64?)
    /// A 304 to a revalidation.
    case notModified
    /// A 416 at or past the end: nothing more to fetch.
    case endOfResource(total: Int64?)
    /// A transient failure; retry after `retryAfter` seconds when the server said so.
    case retry(FetchError, retryAfter: Double?)
    /// The URL may have expired (401/403/410): ask the re-resolve hook.
    case reresolve(status: Int)
    /// Give up.
    case fail(FetchError)
}

enum ResponsePolicy {
    /// What a libcurl failure means and whether another attempt may cure it. `headRead`: the
    /// response head was read and judged (the failure came in the body). Failures a new
    /// attempt cannot cure get their own error so the message names the problem: a redirect
    /// loop (curl 47), a response head past libcurl's limits (curl 56 "Too large response
    /// headers", about 300 KB in all; curl 27 for a single header line over 100 KB).
    static func transportFailure(code: Int, message: String, headRead: Bool, maxRedirects: Int) -> (
        error: FetchError, retryable: Bool
    ) {
        if code == CurlCode.tooManyRedirects { return (.tooManyRedirects(maxRedirects), false) }
        if !headRead, code == CurlCode.outOfMemory || message.hasPrefix("Too large response header") {
            let detail = code == CurlCode.outOfMemory ? "a header line over 100 KB" : message
            return (.responseHeadTooLarge(detail), false)
        }
        return (.transport(code: code, message: message), CurlCode.retryable.contains(code))
    }

    /// Statuses retried with backoff.
    static func isRetryable(status: Int) -> Bool {
        status == 408 || status == 425 || status == 429 || (500...599).contains(status)
    }

    /// Judges a response head against what the attempt asked.
    static func judge(_ head: HeadFields, plan: AttemptPlan) -> HeadVerdict {
        let status = head.status
        switch status {
        case 206:
            return judgePartial(head, plan: plan)
        case 200:
            let total = head.header("Content-Length").flatMap { Int64($0) }
            let version = ResourceVersion.named(etag: head.header("ETag"), lastModified: head.header("Last-Modified"))
            switch plan.condition {
            case .ifNoneMatch:
                return .changed(total: total, declaredEnd: total)
            case .ifRange(let held) where !(version.map(held.isSameVersion) ?? false):
                return .changed(total: total, declaredEnd: total)
            default:
                // No condition, or the same version from a server that ignores Range:
                // the body starts at 0 and is skipped up to the byte asked (for the last bytes
                // of a resource, the caller is told the head and reads nothing).
                if let known = plan.knownLength, let total, known != total {
                    return .fail(.resourceChanged("200 with length \(total), expected \(known)"))
                }
                return .accept(bodyStart: 0, total: total, declaredEnd: total)
            }
        case 304:
            if case .ifNoneMatch = plan.condition { return .notModified }
            return .fail(.httpStatus(304))
        case 416 where plan.suffix != nil:
            // The last bytes of an empty resource.
            let served = head.header("Content-Range").flatMap(parseUnsatisfiedRange)
            return served == 0 ? .endOfResource(total: 0) : .fail(.httpStatus(416))
        case 416:
            let served = head.header("Content-Range").flatMap(parseUnsatisfiedRange)
            guard let total = plan.knownLength ?? served else { return .fail(.httpStatus(416)) }
            if plan.start >= total, served == nil || served == total { return .endOfResource(total: total) }
            if let served, served == plan.start, plan.start > 0, case .ifRange(let held) = plan.condition,
                held.ifRangeValue != nil
            {
                // The body before ended exactly here and the origin, checking If-Range, says this
                // version is that long: it overstated the length before. A changed file would have
                // answered 200, not 416.
                return .endOfResource(total: served)
            }
            return .fail(
                .resourceChanged("416 for byte \(plan.start), length \(served.map(String.init) ?? "?") not \(total)"))
        case 401, 403, 410:
            return .reresolve(status: status)
        case _ where isRetryable(status: status):
            let retryAfter = head.header("Retry-After").flatMap(parseRetryAfter)
            return .retry(.httpStatus(status), retryAfter: retryAfter)
        default:
            return .fail(.httpStatus(status))
        }
    }

    private static func judgePartial(_ head: HeadFields, plan: AttemptPlan) -> HeadVerdict {
        let contentRange = head.header("Content-Range") ?? "<missing>"
        if head.header("Content-Type")?.lowercased().hasPrefix("multipart/byteranges") == true {
            return .fail(.badContentRange("multipart/byteranges"))
        }
        guard let range = parseContentRange(contentRange) else { return .fail(.badContentRange(contentRange)) }
        if case .ifNoneMatch = plan.condition {
            // A revalidation asks from 0; a 206 to it is the new version's first bytes.
            guard range.first == 0 else { return .fail(.badContentRange(contentRange)) }
            return .changed(total: range.total, declaredEnd: range.last + 1)
        }
        if let known = plan.knownLength, let total = range.total, total != known {
            return .fail(.resourceChanged("Content-Range '\(contentRange)', expected length \(known)"))
        }
        if case .ifRange(let held) = plan.condition {
            let served = ResourceVersion.named(etag: head.header("ETag"), lastModified: head.header("Last-Modified"))
            if held.ifRangeValue != nil {
                // The origin checked If-Range; still, a 206 naming another version is never
                // joined with the held bytes (some servers and caches ignore If-Range).
                if let served, !held.isSameVersion(as: served) {
                    return .fail(.resourceChanged("206 of version \(served), held \(held)"))
                }
            } else if !(served.map(held.isSameVersion) ?? false) {
                // No If-Range could be sent (a weak ETag alone): nothing but this comparison keeps
                // a changed file of the same length from being spliced with the held bytes.
                return .fail(.resourceChanged("206 of version \(served?.description ?? "-"), held \(held)"))
            }
        }
        if let suffix = plan.suffix {
            // The last bytes: the body must run to the end, and be no longer than asked.
            guard let total = range.total, range.last + 1 == total, total - range.first <= suffix else {
                return .fail(.badContentRange(contentRange))
            }
            return .accept(bodyStart: range.first, total: total, declaredEnd: total)
        }
        guard range.first == plan.start, plan.end.map({ range.last < $0 }) ?? true else {
            return .fail(.badContentRange(contentRange))
        }
        return .accept(bodyStart: range.first, total: range.total, declaredEnd: range.last + 1)
    }

    /// Whether a body that stopped cleanly short of its declared length is the end of the
    /// resource. Only a 200 from an origin that offers no ranges (no `Accept-Ranges: bytes`),
    /// closed by the server (curl's partial-file code, not a reset or a stall), whose body reached
    /// every byte delivered so far (`bodyEnd` at `next`): such an origin cannot be asked for the
    /// rest, and starting it again from byte 0 would download the file twice to end at the same
    /// byte. Anything else continues at `next` (a range request can check the length for free).
    static func shortBodyEndsResource(status: Int, acceptRanges: String?, code: Int, bodyEnd: Int64, next: Int64)
        -> Bool
    {
        guard status == 200, code == CurlCode.partialFile, bodyEnd == next, next > 0 else { return false }
        let offersRanges =
            acceptRanges?.lowercased().split(separator: ",").contains {
                $0.trimmingWhitespace() == "bytes"
            } ?? false
        return !offersRanges
    }

    /// `Retry-After` as seconds from now: delta-seconds or an HTTP date.
    static func parseRetryAfter(_ value: String) -> Double? {
        let trimmed = value.trimmingWhitespace()
        if let seconds = Int(trimmed) { return Double(max(0, seconds)) }
        return parseHTTPDate(trimmed).map { max(0, $0.timeIntervalSinceNow) }
    }

    /// An HTTP date in any of its three forms (``HTTPDates``).
    static func parseHTTPDate(_ text: String) -> Date? { HTTPDates.parse(text) }

    /// The wait before attempt `attempt + 1` after `attempt` failures in a row: exponential
    /// from `retryBaseDelay`, capped at `retryMaxDelay`, jittered into `[d/2, d]` by `jitter` in
    /// `0...1`; a `Retry-After` replaces it, capped at `retryAfterLimit`.
    static func backoff(
        attempt: Int, retryAfter: Double?, configuration: FetcherConfiguration, jitter: Double
    ) -> Double {
        if let retryAfter { return min(retryAfter, configuration.retryAfterLimit) }
        let exponent = Double(min(max(attempt - 1, 0), 30))
        let delay = min(configuration.retryMaxDelay, configuration.retryBaseDelay * pow(2, exponent))
        return delay / 2 + delay / 2 * min(max(jitter, 0), 1)
    }
}
