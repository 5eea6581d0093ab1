import Fetcher
import RangeCache
import Synchronization

/// Keeps a download from outrunning the disk without making the fetcher's thread wait: after
/// a write that leaves its cache entry ahead of the entry's syncs, the transfer is held (paused
/// on the wire, its connection kept) until the syncs catch up. A crash then loses no more than
/// the cache's bound on unsynced bytes, and other transfers, the playing track's among them,
/// go on meanwhile.
public final class SyncPacer: Sendable {
    private let fetcher: Fetcher
    private let held = Mutex<Set<TransferID>>([])

    /// Creates a pacer for transfers of `fetcher`.
    public init(fetcher: Fetcher) {
        self.fetcher = fetcher
    }

    /// Call after writing bytes of transfer `id` to `entry`: holds it while the entry is behind.
    public func wrote(_ id: TransferID, to entry: CacheEntry) {
        guard entry.isBehindOnSyncs, held.withLock({ $0.insert(id).inserted }) else { return }
        fetcher.hold(id, true)
        entry.whenSyncsCatchUp { [self] in
            held.withLock { _ = $0.remove(id) }
            fetcher.hold(id, false)
        }
    }

    /// Whether transfer `id` is held until its entry's syncs catch up.
    public func isHolding(_ id: TransferID) -> Bool {
        held.withLock { $0.contains(id) }
    }
}
