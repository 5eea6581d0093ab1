import FoundationEssentials
import RangeCache
import Synchronization

/// Decides when a fully cached resource is checked against its origin again:
/// at most once per interval per resource (within one daemon run), and how long
/// opening it waits for the origin's answer.
public final class Revalidator: Sendable {
    private let interval: Duration
    /// How long an open waits for the answer of a check it starts: a new version that answers
    /// within it plays at once; later, the cached copy plays and the new one waits for the next
    /// play. Zero opens at once, as offline (an unreachable origin never makes an open wait).
    public let wait: Duration
    private let checked = Mutex<[String: ContinuousClock.Instant]>([:])

    /// Creates a revalidator that checks each resource at most once per `interval`, holding
    /// the open up to `wait` for the answer.
    public init(interval: Duration, wait: Duration = .zero) {
        self.interval = interval
        self.wait = wait
    }

    /// Whether `key` is due a check now; if so, it counts as checked from now on.
    public func claim(_ key: String) -> Bool {
        let now = ContinuousClock.now
        return checked.withLock { checked in
            if let last = checked[key], now - last < interval { return false }
            checked[key] = now
            return true
        }
    }
}

extension Revalidator {
    /// The key a ``HTTPByteSource`` claims for `entry` (namespace and cache key).
    public static func key(of entry: CacheEntry) -> String {
        "\(entry.namespace)\u{0}\(entry.key.value)"
    }

    /// Counts `entry` as checked from now on: a download that continues it with If-Range (or
    /// fetches it fresh) validates it, so replaying it soon after needs no conditional request.
    public func markChecked(_ entry: CacheEntry) {
        _ = claim(Self.key(of: entry))
    }
}
