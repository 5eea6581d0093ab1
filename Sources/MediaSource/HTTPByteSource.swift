import Basics
import Fetcher
import FoundationEssentials
import Synchronization

/// Bytes of an http(s) resource, fetched with range requests as the reader
/// asks for them. A read at an offset that no transfer is about to reach
/// cancels the current transfer and starts one at that offset.
///
/// This is the source used when the range cache cannot be (no cache directory, a full disk):
/// bytes live in memory only, within a ``MemoryWindow`` (32 MiB by default). A download stops a
/// window ahead of the reader and resumes as the reader moves on; bytes behind the reader are
/// dropped first, and reading them again asks the origin again (with a range, or from the start
/// for an origin without ranges, skipping to the byte needed). So neither a long stream nor a
/// declared length of terabytes holds more than the window.
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
        /// Where the reader last read: the window is kept around it.
        var reader: Int64 = 0
        /// The download was stopped a full window ahead of the reader; reads start it again.
        var stoppedByWindow = false
        /// The window in force: the whole one, or on a metered network one whose downloads stop
        /// the metered read-ahead ahead of the reader.
        var window: MemoryWindow
        /// Whether metered rules are in force.
        var metered = false
        /// The stream's bytes per second, once the player knows it (sizes the metered read-ahead).
        var byteRate: Double?
    }

    private let url: URL
    private let fetcher: Fetcher
    private let window: MemoryWindow
    private let readAhead: CachedByteSource.ReadAheadPolicy?
    private let state: Mutex<State>
    private let log = Logger(label: "http-source")

    /// Creates a source for `url` whose transfers run on `fetcher`, holding at most `window` in
    /// memory; on a metered network its downloads run only `readAhead`'s metered window of audio
    /// ahead of the reader.
    public init(
        url: URL, fetcher: Fetcher, window: MemoryWindow = .standard,
        readAhead: CachedByteSource.ReadAheadPolicy? = nil
    ) {
        self.url = url
        self.fetcher = fetcher
        self.window = window
        self.readAhead = readAhead
        state = Mutex(State(window: window))
    }

    /// Turns metered rules on or off: a download runs only the metered window of audio ahead of
    /// the reader from now on (a running one stops at its next bytes past it), or a full window
    /// again (a download the metered window stopped goes on at once).
    public func setMetered(_ metered: Bool) {
        state.withLock { state in
            guard state.metered != metered, !state.closed else { return }
            state.metered = metered
            applyWindowLocked(&state)
        }
    }

    /// Whether metered rules are in force for this source.
    public var isMetered: Bool { state.withLock { $0.metered } }

    /// Sizes the metered read-ahead from the stream's bytes per second.
    public func setByteRate(_ bytesPerSecond: Double) {
        state.withLock { state in
            state.byteRate = bytesPerSecond
            if state.metered, !state.closed { applyWindowLocked(&state) }
        }
    }

    private func applyWindowLocked(_ state: inout State) {
        let ahead = state.metered ? readAhead?.limits(metered: true, byteRate: state.byteRate).window : nil
        state.window = window.runningAhead(ahead)
        keepWindowLocked(&state)
        resumeIfDueLocked(&state)
    }

    /// Bytes of the resource held in memory now (never more than the window's capacity).
    public var heldBytes: Int64 { state.withLock { $0.store.count } }

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
            state.reader = offset
            let wanted: Int
            if let length = state.info?.length {
                if offset >= length { return .endOfStream }
                wanted = Int(min(Int64(maxLength), length - offset))
            } else {
                wanted = maxLength
            }
            let held = state.store.read(at: offset, maxLength: wanted)
            if let held, held.count == wanted || (state.info?.length == nil && !held.isEmpty) {
                resumeIfDueLocked(&state)
                return .data(held)
            }
            if let failure = state.failure { return .failed(failure) }
            let missing = offset + Int64(held?.count ?? 0)
            state.waiter = Waiter(offset: missing, wake: wake)
            // An origin without ranges is read in one pass, but a byte the window dropped behind
            // that pass can only come from a new one.
            if let transfer = state.transfer, transfer.next <= missing,
                missing - transfer.next <= Self.waitAheadLimit || state.info?.randomAccess == false
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
        state.stoppedByWindow = false
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
                    let info = ResourceInfo(response: head)
                    state.info = info
                    if let completion = state.openCompletion {
                        callbacks.append { completion(.success(info)) }
                    }
                    state.openCompletion = nil
                    log.info("opened \(loggable(url)): \(info.openedDescription)")
                }
                state.transfer?.next = head.bodyStart
            case .data(let bytes, let offset):
                state.store.write(bytes, at: offset)
                state.transfer?.next = offset + Int64(bytes.count)
                state.transfer?.delivered = true
                keepWindowLocked(&state)
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

extension HTTPByteSource {
    /// Drops what the window does not keep, and stops the download once it is a full window
    /// ahead of the reader (nothing more could be kept; the reader resumes it).
    private func keepWindowLocked(_ state: inout State) {
        if state.store.count > state.window.capacity {
            state.store.retain(state.window.retained(state.store.ranges, reader: state.reader))
        }
        guard let transfer = state.transfer, state.window.isFull(reader: state.reader, next: transfer.next),
            state.waiter.map({ $0.offset >= transfer.next }) != true
        else { return }
        fetcher.cancel(transfer.id)
        state.transfer = nil
        state.stoppedByWindow = true
        log.debug(
            "\(loggable(url)): \(state.window.ahead) bytes held ahead of byte \(state.reader); download paused at \(transfer.next)"
        )
    }

    /// Starts the download stopped by the window again once the reader used half of it.
    private func resumeIfDueLocked(_ state: inout State) {
        guard state.stoppedByWindow, state.transfer == nil, state.failure == nil else { return }
        let heldEnd = state.store.contiguousEnd(from: state.reader)
        if let length = state.info?.length, heldEnd >= length { return }
        guard state.window.shouldResume(reader: state.reader, heldEnd: heldEnd) else { return }
        startTransferLocked(&state, at: heldEnd)
    }
}
