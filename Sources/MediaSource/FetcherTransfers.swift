import Fetcher
import RangeCache
import Synchronization

/// The fetcher's transfers of one source under the planner's names for them. Actions are
/// carried out outside the source's lock, so two threads' actions may arrive in either order:
/// a cancel that overtakes its start stops the start, and a priority set before the start
/// is applied when it happens.
final class FetcherTransfers: Sendable {
    private enum Slot {
        case starting(priority: FetchPriority?)
        case running(TransferID)
        case cancelled
    }

    private let fetcher: Fetcher
    private let slots = Mutex<[Int: Slot]>([:])
    private let pacer: SyncPacer

    init(fetcher: Fetcher) {
        self.fetcher = fetcher
        pacer = SyncPacer(fetcher: fetcher)
    }

    /// Call after writing transfer `key`'s bytes to `entry`: see ``SyncPacer``.
    func wrote(_ key: Int, to entry: CacheEntry) {
        if let id = runningID(key) { pacer.wrote(id, to: entry) }
    }

    /// Whether transfer `key` is held until the disk catches up.
    func isHeldForTheDisk(_ key: Int) -> Bool {
        runningID(key).map(pacer.isHolding) ?? false
    }

    private func runningID(_ key: Int) -> TransferID? {
        slots.withLock { slots in
            if case .running(let id) = slots[key] { return id }
            return nil
        }
    }

    /// Starts `request` as transfer `key`, unless its cancel came first.
    func start(_ key: Int, _ request: RangeRequest, events: @escaping @Sendable (TransferEvent) -> Void) {
        let go = slots.withLock { slots -> Bool in
            if case .cancelled = slots[key] {
                slots[key] = nil
                return false
            }
            slots[key] = .starting(priority: nil)
            return true
        }
        guard go else { return }
        let id = fetcher.start(request) { _, event in events(event) }
        let follow = slots.withLock { slots -> (cancel: Bool, priority: FetchPriority?) in
            switch slots[key] {
            case .cancelled:
                slots[key] = nil
                return (true, nil)
            case .starting(let priority):
                slots[key] = .running(id)
                return (false, priority)
            default:
                slots[key] = .running(id)
                return (false, nil)
            }
        }
        if follow.cancel {
            fetcher.cancel(id)
        } else if let priority = follow.priority {
            fetcher.setPriority(id, priority)
        }
    }

    /// Cancels transfer `key`, now or when its start comes.
    func cancel(_ key: Int) {
        let id = slots.withLock { slots -> TransferID? in
            if case .running(let id) = slots[key] {
                slots[key] = nil
                return id
            }
            slots[key] = .cancelled
            return nil
        }
        if let id { fetcher.cancel(id) }
    }

    /// Forgets transfer `key`: it ended.
    func forget(_ key: Int) {
        slots.withLock { _ = $0.removeValue(forKey: key) }
    }

    /// Sets transfer `key`'s priority, now or when its start comes.
    func setPriority(_ key: Int, _ priority: FetchPriority) {
        let id = slots.withLock { slots -> TransferID? in
            switch slots[key] {
            case .running(let id): return id
            case .starting, nil:
                slots[key] = .starting(priority: priority)
                return nil
            case .cancelled: return nil
            }
        }
        if let id { fetcher.setPriority(id, priority) }
    }
}
