import Synchronization

/// Runs call handlers one after another, in the order their calls arrived: a client's calls
/// (a media key pressed twice, a seek slider's burst of `SetPosition`, a Set then a method)
/// take effect in the order it sent them, however long each handler waits inside.
final class CallInbox: Sendable {
    /// A call's handler, with its reply.
    typealias Job = @Sendable () async -> Void

    private struct Queue: ~Copyable {
        var jobs: [Job] = []
        var draining = false
    }

    private let queue = Mutex(Queue())

    /// Adds `job` behind every job added before it; it runs once they are done.
    func enqueue(_ job: @escaping Job) {
        let start = queue.withLock { queue -> Bool in
            queue.jobs.append(job)
            if queue.draining { return false }
            queue.draining = true
            return true
        }
        guard start else { return }
        Task { [self] in
            while let job = nextJob() { await job() }
        }
    }

    private func nextJob() -> Job? {
        queue.withLock { queue in
            guard !queue.jobs.isEmpty else {
                queue.draining = false
                return nil
            }
            return queue.jobs.removeFirst()
        }
    }
}

/// A fixed set of inboxes, one chosen by each call's sender: one client's calls are applied in
/// order, and a slow one (an `OpenUri` fetching a playlist) holds up its own later calls and
/// those of few other clients, whatever the number of clients that came and went.
final class CallInboxes: Sendable {
    private let inboxes: [CallInbox]

    /// Creates `count` inboxes.
    init(count: Int = 16) {
        inboxes = (0..<max(1, count)).map { _ in CallInbox() }
    }

    /// The inbox of `sender`'s calls (a bus's unique name; nil on a peer-to-peer connection).
    func inbox(for sender: String?) -> CallInbox {
        var hasher = Hasher()
        hasher.combine(sender)
        return inboxes[Int(UInt(bitPattern: hasher.finalize()) % UInt(inboxes.count))]
    }
}
