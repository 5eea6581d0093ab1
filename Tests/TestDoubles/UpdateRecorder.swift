import PlayerCore
import Synchronization

/// Collects player updates and lets a test await one.
public final class UpdateRecorder: Sendable {
    /// Creates an empty recorder; pass its `record` to `Player.observe`.
    public init() {}
    private let updates = Mutex<[PlayerUpdate]>([])
    /// Keeps `update`.
    public func record(_ update: PlayerUpdate) { updates.withLock { $0.append(update) } }
    /// Every update so far, in order.
    public var all: [PlayerUpdate] { updates.withLock { $0 } }
    /// The snapshots among the updates.
    public var snapshots: [PlayerSnapshot] {
        all.compactMap { if case .changed(let snapshot) = $0 { snapshot } else { nil } }
    }

    /// Waits (yielding, not sleeping) until `predicate` holds for the updates so far.
    public func waitUntil(_ predicate: @escaping ([PlayerUpdate]) -> Bool) async -> Bool {
        for _ in 0..<10_000 {
            if predicate(all) { return true }
            await Task.yield()
        }
        return predicate(all)
    }
}
