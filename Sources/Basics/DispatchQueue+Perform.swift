import Dispatch

extension DispatchQueue {
    /// Runs `body` on this queue and returns its result (or throws its error) to the waiting
    /// task. For blocking work (file reads and writes, a cache lookup) that must not run on the
    /// caller's thread: the D-Bus thread, or the cooperative pool that async code shares.
    /// The task is suspended, not blocked, while `body` waits for its turn on the queue.
    public func perform<T: Sendable, Failure: Error>(
        _ body: @escaping @Sendable () throws(Failure) -> T
    ) async throws(Failure) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, Failure>, Never>) in
            self.async { continuation.resume(returning: Result { () throws(Failure) -> T in try body() }) }
        }
        return try result.get()
    }
}
