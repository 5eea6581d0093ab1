import Foundation
import Synchronization

// The fault origin's link model and its live transfer timeline.
//
// `OriginFaults.bytesPerSecond` caps each response on its own: two parallel requests get
// twice the bandwidth, which no real link gives. `FaultOrigin.setLinkRate` adds a cap that
// every response of the origin shares (a token bucket), as all connections to one host
// share the last mile. Both caps apply when both are set.

/// A link shared by every response body the origin sends: a token bucket of `rate` bytes
/// per second holding one piece. Senders reserve their piece before sending it
/// and wait until the bucket has paid for it, in the order they asked (a FIFO link).
final class OriginLink: Sendable {
    private struct State {
        var rate: Int?
        /// The instant the link has sent everything reserved so far (a token bucket in virtual time).
        var busyUntil = ContinuousClock.now
    }
    private let state = Mutex(State())

    /// The largest piece one reservation may take: 50 ms of the link, at most 16 KiB, so
    /// concurrent responses interleave finely.
    static func piece(rate: Int) -> Int { max(1, min(16_384, rate / 20)) }

    var rate: Int? { state.withLock { $0.rate } }

    func setRate(_ rate: Int?) {
        state.withLock { state in
            state.rate = rate.flatMap { $0 > 0 ? $0 : nil }
            state.busyUntil = ContinuousClock.now
        }
    }

    /// Reserves the link for `bytes`; returns the seconds to wait before sending them
    /// (0 when the link is idle or not capped). A piece goes out at the start of its slot,
    /// so the bucket holds one piece: an idle link sends at once, a busy one at its rate.
    func reserve(_ bytes: Int) -> Double {
        state.withLock { state in
            guard let rate = state.rate else { return 0 }
            let now = ContinuousClock.now
            let start = max(state.busyUntil, now)
            state.busyUntil = start + .seconds(Double(bytes) / Double(rate))
            let wait = start - now
            return Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
        }
    }
}

/// One response of the fault origin as it happens: when the request arrived, which bytes of
/// the resource its body carries, and how many of them went out so far. Unlike `ServedRequest`
/// (logged when a response ends) it is visible while the body is being sent.
public struct OriginTransfer: Sendable, CustomStringConvertible {
    /// Order of arrival, from 0.
    public let id: Int
    /// The request method.
    public let method: String
    /// The request target without its query.
    public let path: String
    /// The `Range` header, if sent.
    public let range: String?
    /// When the request head was read.
    public let arrived: ContinuousClock.Instant
    /// The response status.
    public let status: Int
    /// The resource's size, when the response serves a resource (2xx).
    public let resourceSize: Int?
    /// The first resource byte the body carries (0 for a 200).
    public let bodyOffset: Int
    /// How many body bytes the response planned to send.
    public let bodyLength: Int
    /// Body bytes written to the socket so far.
    public internal(set) var bodyBytesSent = 0
    /// When the first body byte went out, if it did.
    public internal(set) var firstByteSent: ContinuousClock.Instant?
    /// When the response ended (completed, failed or abandoned by its client).
    public internal(set) var ended: ContinuousClock.Instant?

    /// Whether the body carries bytes of the resource (a 200 or 206 to GET).
    public var servesResource: Bool { resourceSize != nil && (200...206).contains(status) && method == "GET" }
    /// The resource bytes the response was asked for and planned to send.
    public var plannedBytes: Range<Int> { bodyOffset..<(bodyOffset + bodyLength) }
    /// The resource bytes it actually sent.
    public var sentBytes: Range<Int> { bodyOffset..<(bodyOffset + bodyBytesSent) }

    public var description: String {
        let span =
            servesResource ? " \(sentBytes.lowerBound)..<\(sentBytes.upperBound) of \(plannedBytes.upperBound)" : ""
        return "#\(id) \(method) \(path) \(range ?? "-") → \(status)\(span)\(ended == nil ? " (sending)" : "")"
    }
}

/// The live record of every response, in order of arrival.
final class OriginTimeline: Sendable {
    private let transfers = Mutex<[OriginTransfer]>([])

    func begin(
        method: String, path: String, range: String?, status: Int, resourceSize: Int?, bodyOffset: Int, bodyLength: Int,
        arrived: ContinuousClock.Instant
    ) -> Int {
        transfers.withLock { list in
            list.append(
                OriginTransfer(
                    id: list.count, method: method, path: path, range: range, arrived: arrived, status: status,
                    resourceSize: resourceSize, bodyOffset: bodyOffset, bodyLength: bodyLength))
            return list.count - 1
        }
    }

    func progress(_ id: Int, sent: Int) {
        transfers.withLock { list in
            if list[id].firstByteSent == nil, sent > 0 { list[id].firstByteSent = .now }
            list[id].bodyBytesSent = sent
        }
    }

    func end(_ id: Int) { transfers.withLock { $0[id].ended = .now } }

    var all: [OriginTransfer] { transfers.withLock { $0 } }
}

extension FaultOrigin {
    /// Caps the bandwidth of the whole origin (every response body, all connections
    /// together) at `bytesPerSecond`; nil lifts the cap. Per-path caps still apply on top.
    public func setLinkRate(_ bytesPerSecond: Int?) { link.setRate(bytesPerSecond) }

    /// The link-wide cap in bytes per second, nil when none.
    public var linkRate: Int? { link.rate }

    /// Every response so far, in order of arrival, including those still being sent.
    public func transfers() -> [OriginTransfer] { timeline.all }

    /// The responses for `path` (query ignored) that carry resource bytes.
    public func transfers(of path: String) -> [OriginTransfer] {
        let wanted = path.hasPrefix("/") ? path : "/" + path
        return timeline.all.filter { $0.path == wanted && $0.servesResource }
    }
}

/// Byte accounting over what an origin sent, for "no byte twice" and "no byte beyond the
/// file" checks.
public enum TransferAccounting {
    /// How many distinct bytes `ranges` cover together.
    public static func covered(_ ranges: [Range<Int>]) -> Int {
        var total = 0
        var end = Int.min
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where !range.isEmpty {
            total += max(0, range.upperBound - max(range.lowerBound, end))
            end = max(end, range.upperBound)
        }
        return total
    }

    /// Body bytes sent in all.
    public static func sent(_ transfers: [OriginTransfer]) -> Int { transfers.reduce(0) { $0 + $1.bodyBytesSent } }

    /// Bytes the origin sent more than once (across requests): sent minus distinct.
    public static func sentTwice(_ transfers: [OriginTransfer]) -> Int {
        sent(transfers) - covered(transfers.map(\.sentBytes))
    }

    /// Bytes sent beyond the file's size: everything sent minus the file (0 when less was sent).
    public static func beyondFileSize(_ transfers: [OriginTransfer], size: Int) -> Int {
        max(0, sent(transfers) - size)
    }

    /// The bytes sent more than once, as ranges (for failure messages).
    public static func overlaps(_ transfers: [OriginTransfer]) -> [(Range<Int>, [Int])] {
        var result: [(Range<Int>, [Int])] = []
        let sorted = transfers.filter { !$0.sentBytes.isEmpty }.sorted {
            $0.sentBytes.lowerBound < $1.sentBytes.lowerBound
        }
        for (index, first) in sorted.enumerated() {
            for second in sorted.dropFirst(index + 1) where second.sentBytes.lowerBound < first.sentBytes.upperBound {
                let overlap = second.sentBytes.lowerBound..<min(first.sentBytes.upperBound, second.sentBytes.upperBound)
                result.append((overlap, [first.id, second.id]))
            }
        }
        return result
    }
}
