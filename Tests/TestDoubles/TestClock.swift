import Dispatch
import Synchronization

/// A clock whose time moves only when a test advances it: the player's timers (saves, retries,
/// the network check, preload ticks) fire at once, in order, and a test never sleeps.
public final class TestClock: Clock, Sendable {
    /// A point on the test clock: the time since it started.
    public struct Instant: InstantProtocol, Hashable, Sendable {
        /// The time since the clock started.
        public var offset: Duration

        /// The instant `duration` later.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// The time from this instant to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Orders instants.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let deadline: Instant
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Sleeper] = []
        var nextID: UInt64 = 0
        /// Tests waiting for the sleepers to satisfy `accepts`, each resumed once (true) or at its
        /// time limit (false).
        var watchers:
            [(accepts: @Sendable ([Instant]) -> Bool, id: UInt64, continuation: CheckedContinuation<Bool, Never>)] =
                []
    }

    private let state = Mutex(State())

    /// Creates a clock at time zero.
    public init() {}

    /// The time now.
    public var now: Instant { state.withLock { $0.now } }
    /// Any step is exact.
    public var minimumResolution: Duration { .zero }
    /// How many sleeps are waiting.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    /// Returns once the clock reaches `deadline`, or throws `CancellationError` when the
    /// sleeping task is cancelled first.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (due, armed) = state.withLock { state -> (Bool, [CheckedContinuation<Bool, Never>]) in
                    if deadline <= state.now || Task.isCancelled { return (true, []) }
                    state.sleepers.append(Sleeper(deadline: deadline, id: id, continuation: continuation))
                    let deadlines = state.sleepers.map(\.deadline)
                    let armed = state.watchers.filter { $0.accepts(deadlines) }.map(\.continuation)
                    state.watchers.removeAll { $0.accepts(deadlines) }
                    return (false, armed)
                }
                if due { continuation.resume() }
                for watcher in armed { watcher.resume(returning: true) }
            }
            try Task.checkCancellation()
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the time on by `duration`, waking every sleep due by then, earliest first.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Returns true once at least `count` sleeps are waiting (a timer the test advances past is
    /// armed), false when none came within 10 s of real time.
    public func waitForSleepers(_ count: Int = 1) async -> Bool {
        await waitForSleepers { $0.count >= count }
    }

    /// Returns true once a sleep is waiting until `deadline` (one timer among others, told by
    /// when it is due), false when none came within 10 s of real time.
    public func waitForSleeper(dueAt deadline: Instant) async -> Bool {
        await waitForSleepers { $0.contains(deadline) }
    }

    /// Returns true once the deadlines of the waiting sleeps satisfy `accepts`, false when they
    /// did not within 10 s of real time.
    private func waitForSleepers(where accepts: @escaping @Sendable ([Instant]) -> Bool) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id = state.withLock { state -> UInt64? in
                guard !accepts(state.sleepers.map(\.deadline)) else { return nil }
                state.nextID += 1
                state.watchers.append((accepts, state.nextID, continuation))
                return state.nextID
            }
            guard let id else { return continuation.resume(returning: true) }
            DispatchQueue.global().asyncAfter(deadline: .now() + 10) { [self] in
                let late = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                    guard let index = state.watchers.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.watchers.remove(at: index).continuation
                }
                late?.resume(returning: false)
            }
        }
    }
}
