import PlayerCore
import Synchronization

/// Collects player updates and lets a test await one.
public final class UpdateRecorder: Sendable {
    private struct Waiter {
        let id: Int
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var updates: [PlayerUpdate] = []
        var waiters: [Waiter] = []
        var nextWaiter = 0
    }

    /// Creates an empty recorder; pass its `record` to `Player.observe`.
    public init() {}
    private let state = Mutex(State())

    /// Keeps `update` and wakes the tests waiting for one.
    public func record(_ update: PlayerUpdate) {
        let woken = state.withLock { state in
            state.updates.append(update)
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in woken { waiter.continuation.resume() }
    }

    /// Every update so far, in order.
    public var all: [PlayerUpdate] { state.withLock { $0.updates } }
    /// The snapshots among the updates.
    public var snapshots: [PlayerSnapshot] {
        all.compactMap { if case .changed(let snapshot) = $0 { snapshot } else { nil } }
    }

    /// Waits until `predicate` holds for the updates so far, or `timeout` has passed (false).
    /// It is checked at once, after every update, and every few milliseconds besides, for what no
    /// update announces (a fake's own state: the loads it was asked for, the files it read).
    /// Waiting never spins: the player and the tests beside this one keep the cores.
    public func waitUntil(
        timeout: Duration = .seconds(10), _ predicate: @escaping ([PlayerUpdate]) -> Bool
    ) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !predicate(all) {
            guard ContinuousClock.now < deadline else { return false }
            await nextUpdate(orAfter: .milliseconds(5))
        }
        return true
    }

    /// Returns after the next update, or after `interval` without one.
    private func nextUpdate(orAfter interval: Duration) async {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withCheckedContinuation { continuation in
            state.withLock { $0.waiters.append(Waiter(id: id, continuation: continuation)) }
            // Started once the waiter is in place, so it cannot come first; after an update it
            // finds no waiter and does nothing.
            Task { [self] in
                try? await Task.sleep(for: interval)
                wake(id)
            }
        }
    }

    /// Resumes the waiter `id` unless an update has.
    private func wake(_ id: Int) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        waiter?.continuation.resume()
    }
}
