/// Things a test collects in the background (D-Bus signals, a fake service's calls), with a
/// way to await a condition on them instead of polling with sleeps.
public actor AwaitableLog<Element: Sendable> {
    /// Everything appended so far, in order.
    public private(set) var items: [Element] = []
    private var waiters: [UInt64: (accept: @Sendable ([Element]) -> Bool, done: CheckedContinuation<Bool, Never>)] = [:]
    private var nextWaiter: UInt64 = 0

    /// An empty log.
    public init() {}

    /// Adds `item` and wakes the waiters it satisfies.
    public func append(_ item: Element) {
        items.append(item)
        for (id, waiter) in waiters where waiter.accept(items) {
            waiters[id] = nil
            waiter.done.resume(returning: true)
        }
    }

    /// Waits until the items so far satisfy `accept`; false after `timeout`.
    public func waitFor(timeout: Duration = .seconds(10), _ accept: @escaping @Sendable ([Element]) -> Bool) async
        -> Bool
    {
        if accept(items) { return true }
        let id = nextWaiter
        nextWaiter += 1
        let deadline = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.expire(id)
        }
        defer { deadline.cancel() }
        return await withCheckedContinuation { waiters[id] = (accept, $0) }
    }

    private func expire(_ id: UInt64) {
        waiters.removeValue(forKey: id)?.done.resume(returning: false)
    }
}
