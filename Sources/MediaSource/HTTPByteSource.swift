import Fetcher
import FoundationEssentials
import SpoolLog
import Synchronization

/// Bytes of an http(s) resource, fetched with range requests as the reader
/// asks for them. A read at an offset that no transfer is about to reach
/// cancels the current transfer and starts one at that offset.
///
/// Bytes are held in memory for the life of the source. (The on-disk range
/// cache replaces this store; the reading contract stays the same.)
public final class HTTPByteSource: ByteSource {
    /// How far ahead of a running transfer a read may be and still wait for it
    /// rather than start a new request.
    public static let waitAheadLimit: Int64 = 256 * 1024

    private struct Waiter {
        let offset: Int64
        let wake: @Sendable () -> Void
    }

    private struct ActiveTransfer {
        let id: TransferID
        var next: Int64
        var delivered = false
    }

    private struct State {
        var info: ResourceInfo?
        var openCompletion: (@Sendable (Result<ResourceInfo, MediaSourceError>) -> Void)?
        var store = ByteRuns()
        var transfer: ActiveTransfer?
        var waiter: Waiter?
        var failure: MediaSourceError?
        var closed = false
    }

    private let url: URL
    private let fetcher: Fetcher
    private let state = Mutex(State())
    private let log = Logger(label: "http-source")

    /// Creates a source for `url` whose transfers run on `fetcher`.
    public init(url: URL, fetcher: Fetcher) {
        self.url = url
        self.fetcher = fetcher
    }

    /// Starts a transfer from byte 0; completes when its response head arrives.
    public func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        let failure: MediaSourceError? = state.withLock { state in
            guard !state.closed else { return .closed }
            state.openCompletion = completion
            startTransferLocked(&state, at: 0)
            return nil
        }
        if let failure { completion(.failure(failure)) }
    }

    /// Returns stored bytes at `offset`, or arranges for them to be fetched and the reader woken.
    /// When the length is known, a read returns exactly `min(maxLength, length - offset)` bytes:
    /// demuxers reading in pull mode take a short buffer for the end of the file.
    public func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        state.withLock { state in
            if state.closed { return .failed(.closed) }
            let wanted: Int
            if let length = state.info?.length {
                if offset >= length { return .endOfStream }
                wanted = Int(min(Int64(maxLength), length - offset))
            } else {
                wanted = maxLength
            }
            let held = state.store.read(at: offset, maxLength: wanted)
            if let held, held.count == wanted || (state.info?.length == nil && !held.isEmpty) {
                return .data(held)
            }
            if let failure = state.failure { return .failed(failure) }
            let missing = offset + Int64(held?.count ?? 0)
            state.waiter = Waiter(offset: missing, wake: wake)
            if let transfer = state.transfer,
                transfer.next <= missing && missing - transfer.next <= Self.waitAheadLimit
                    || state.info?.randomAccess == false
            {
                return .pending  // the running transfer will get there soon (or is the only way there)
            }
            startTransferLocked(&state, at: missing)
            return .pending
        }
    }

    /// Forgets the pending reader.
    public func cancelPendingReads() {
        state.withLock { $0.waiter = nil }
    }

    /// Cancels the transfer and drops the stored bytes.
    public func close() {
        let transfer = state.withLock { state -> TransferID? in
            state.closed = true
            state.waiter = nil
            state.store = ByteRuns()
            defer { state.transfer = nil }
            return state.transfer?.id
        }
        if let transfer { fetcher.cancel(transfer) }
    }

    deinit { close() }

    // MARK: Transfers

    private func startTransferLocked(_ state: inout State, at offset: Int64) {
        if let old = state.transfer { fetcher.cancel(old.id) }
        let request = RangeRequest(url: url, start: offset)
        let id = fetcher.start(request) { [weak self] id, event in
            self?.handle(event, of: id)
        }
        state.transfer = ActiveTransfer(id: id, next: offset)
    }

    private func handle(_ event: TransferEvent, of id: TransferID) {
        var callbacks: [@Sendable () -> Void] = []
        state.withLock { state in
            // Events of a replaced transfer may still arrive until the fetcher handles its cancel.
            guard !state.closed, state.transfer?.id == id else { return }
            switch event {
            case .response(let head), .changed(let head):
                if case .changed = event {
                    // The resource changed under a reconnection: what is held is stale; the new body follows from 0.
                    state.store = ByteRuns()
                    state.info = nil
                }
                if state.info == nil {
                    let info = ResourceInfo(
                        length: head.totalLength, contentType: head.contentType,
                        randomAccess: head.honoursRange && head.totalLength != nil)
                    state.info = info
                    if let completion = state.openCompletion {
                        callbacks.append { completion(.success(info)) }
                    }
                    state.openCompletion = nil
                    log.info("opened \(loggable(url)): \(info.length.map(String.init) ?? "unknown") bytes, \(info.randomAccess ? "range requests" : "no range support")")
                }
                state.transfer?.next = head.bodyStart
            case .data(let bytes, let offset):
                state.store.write(bytes, at: offset)
                state.transfer?.next = offset + Int64(bytes.count)
                state.transfer?.delivered = true
                if let waiter = state.waiter, state.store.contains(waiter.offset) {
                    state.waiter = nil
                    callbacks.append(waiter.wake)
                }
            case .finished:
                let delivered = state.transfer?.delivered ?? false
                state.transfer = nil
                if let waiter = state.waiter, state.info?.length.map({ waiter.offset < $0 }) ?? false {
                    if delivered {
                        startTransferLocked(&state, at: waiter.offset)  // ended short: continue where needed
                    } else {
                        state.failure = .readFailed("the server ended the body before byte \(waiter.offset)")
                        state.waiter = nil
                        callbacks.append(waiter.wake)
                    }
                } else if let waiter = state.waiter {
                    state.waiter = nil
                    callbacks.append(waiter.wake)  // at the end: the reader will see end of stream
                }
            case .status(.retrying(_, _, let reason)):
                // Nothing is kept on disk to play meanwhile: with no server to reach, the reader
                // (or the opener) hears it now instead of after the fetcher's retry budget.
                guard let problem = reason.unreachableServer, state.waiter != nil || state.openCompletion != nil
                else { break }
                if let transfer = state.transfer { fetcher.cancel(transfer.id) }
                state.transfer = nil
                log.warning("\(loggable(url)): \(problem)")
                if let completion = state.openCompletion {
                    state.openCompletion = nil
                    state.failure = .unreachable(problem)
                    callbacks.append { completion(.failure(.unreachable(problem))) }
                } else {
                    state.failure = .unreachable(problem)
                }
                if let waiter = state.waiter {
                    state.waiter = nil
                    callbacks.append(waiter.wake)
                }
            case .status(.endedShort(let length)):
                state.info?.length = length  // the origin overstated it: the end is here
            case .notModified, .status:
                break
            case .failed(let error):
                state.transfer = nil
                log.warning("\(loggable(url)): \(error)")
                if let completion = state.openCompletion {
                    state.openCompletion = nil
                    let failure = MediaSourceError(downloadFailure: error)
                    state.failure = failure
                    callbacks.append { completion(.failure(failure)) }
                } else {
                    state.failure = .readFailed(error.description)
                }
                if let waiter = state.waiter {
                    state.waiter = nil
                    callbacks.append(waiter.wake)
                }
            }
        }
        for callback in callbacks { callback() }
    }
}

/// Contiguous runs of bytes at their offsets, merged as they grow.
struct ByteRuns {
    private var runs: [(start: Int64, bytes: Data)] = []

    /// Whether the byte at `offset` is held.
    func contains(_ offset: Int64) -> Bool { index(containing: offset) != nil }

    /// The held ranges, in order.
    var ranges: [Range<Int64>] { runs.map { $0.start..<($0.start + Int64($0.bytes.count)) } }

    /// Up to `maxLength` contiguous bytes from `offset`, or nil if that byte is not held.
    func read(at offset: Int64, maxLength: Int) -> Data? {
        guard let i = index(containing: offset) else { return nil }
        let run = runs[i]
        let from = Int(offset - run.start)
        let count = min(maxLength, run.bytes.count - from)
        let base = run.bytes.startIndex
        return Data(run.bytes[(base + from)..<(base + from + count)])
    }

    /// Stores `bytes` at `offset`; bytes already held keep their value.
    mutating func write(_ bytes: Data, at offset: Int64) {
        guard !bytes.isEmpty else { return }
        let end = offset + Int64(bytes.count)
        if let i = runs.firstIndex(where: { $0.start <= offset && offset <= $0.start + Int64($0.bytes.count) }) {
            let runEnd = runs[i].start + Int64(runs[i].bytes.count)
            if end > runEnd {
                runs[i].bytes.append(bytes.suffix(Int(end - runEnd)))
            }
        } else {
            runs.append((offset, Data(bytes)))
            runs.sort { $0.start < $1.start }
        }
        mergeOverlaps()
    }

    private mutating func mergeOverlaps() {
        var merged: [(start: Int64, bytes: Data)] = []
        for run in runs {
            if var last = merged.last, run.start <= last.start + Int64(last.bytes.count) {
                let lastEnd = last.start + Int64(last.bytes.count)
                let runEnd = run.start + Int64(run.bytes.count)
                if runEnd > lastEnd { last.bytes.append(run.bytes.suffix(Int(runEnd - lastEnd))) }
                merged[merged.count - 1] = last
            } else {
                merged.append(run)
            }
        }
        runs = merged
    }

    private func index(containing offset: Int64) -> Int? {
        runs.firstIndex { $0.start <= offset && offset < $0.start + Int64($0.bytes.count) }
    }
}
