import FoundationEssentials
import Synchronization

extension Fetcher {
    /// Downloads a small resource whole (a playlist), refusing more than `limit` bytes and any
    /// live stream; at
    /// `priority` (a playlist is waited for, lyrics are not).
    public func fetchWhole(_ url: URL, limit: Int = 4 << 20, priority: FetchPriority = .playback)
        async throws(FetchError) -> Data
    {
        let collected = Mutex<(body: Data, continuation: CheckedContinuation<Result<Data, FetchError>, Never>?)>(
            (Data(), nil))
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<Data, FetchError>, Never>) in
            collected.withLock { $0.continuation = continuation }
            start(RangeRequest(url: url, priority: priority)) { [weak self] transferID, event in
                var outcome: Result<Data, FetchError>?
                switch event {
                case .changed:
                    collected.withLock { $0.body = Data() }
                case .data(let bytes, _):
                    let tooLarge = collected.withLock { state -> Bool in
                        state.body.append(bytes)
                        return state.body.count > limit
                    }
                    if tooLarge {
                        self?.cancel(transferID)
                        outcome = .failure(.transport(code: 63, message: "larger than \(limit) bytes"))
                    }
                case .finished:
                    outcome = .success(collected.withLock { $0.body })
                case .failed(let error):
                    outcome = .failure(error)
                case .response(let head) where head.isLive:
                    // An endless stream is no small resource (a station answers every path,
                    // a sidecar's too): refused at its head, not after `limit` bytes of it.
                    self?.cancel(transferID)
                    outcome = .failure(.liveStream)
                case .response, .notModified, .status, .streamMetadata:
                    break
                }
                if let outcome {
                    let waiting = collected.withLock { state in
                        defer { state.continuation = nil }
                        return state.continuation
                    }
                    waiting?.resume(returning: outcome)
                }
            }
        }
        return try result.get()
    }
}
