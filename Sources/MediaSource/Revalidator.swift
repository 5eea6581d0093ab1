import FoundationEssentials
import RangeCache
import Synchronization

/// Decides when a fully cached resource is checked against its origin again:
/// at most once per interval per resource (within one daemon run).
public final class Revalidator: Sendable {
    private let interval: Duration
    private let checked = Mutex<[String: ContinuousClock.Instant]>([:])

    /// Creates a revalidator that checks each resource at most once per `interval`.
    public init(interval: Duration) {
        self.interval = interval
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
    /// The key a ``CachedByteSource`` claims for `entry` (namespace and cache key).
    public static func key(of entry: CacheEntry) -> String {
        "\(entry.namespace)\u{0}\(entry.key.value)"
    }

    /// Counts `entry` as checked from now on: a download that continues it with If-Range (or
    /// fetches it fresh) validates it, so replaying it soon after needs no conditional request.
    public func markChecked(_ entry: CacheEntry) {
        _ = claim(Self.key(of: entry))
    }
}
