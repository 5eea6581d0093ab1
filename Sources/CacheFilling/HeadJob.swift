import Fetcher
import FoundationEssentials
import MediaSource
import RangeCache
import Synchronization

/// Fetches the prefix and the tail of one resource into its cache entry, one missing range
/// at a time, at preload priority. Binds the entry to the version the origin serves, like a
/// playing source would, so the bytes are the ones playback reads later.
final class HeadJob: Sendable {
    private struct State {
        var transfer: TransferID?
        var over = false
        /// The origin ignores Range: what the first answer brought is all there is to take.
        var noRanges = false
    }

    let url: URL
    private let entry: CacheEntry
    private let fetcher: Fetcher
    private let pacer: SyncPacer
    private let revalidator: Revalidator
    private let prefix: Int64
    private let tail: Int64
    private let onEnd: @Sendable (HeadJob, String?) -> Void
    private let state = Mutex(State())

    init(
        url: URL, entry: CacheEntry, fetcher: Fetcher, revalidator: Revalidator, prefix: Int64, tail: Int64,
        onEnd: @escaping @Sendable (HeadJob, String?) -> Void
    ) {
        self.revalidator = revalidator
        self.url = url
        self.entry = entry
        self.fetcher = fetcher
        pacer = SyncPacer(fetcher: fetcher)
        self.prefix = prefix
        self.tail = tail
        self.onEnd = onEnd
    }

    /// Whether part of the head is missing.
    var hasWork: Bool { missingRange() != nil }

    /// Starts with the first missing range.
    func start() { next() }

    /// Cancels the transfer; the bytes fetched so far stay cached.
    func cancel() {
        let transfer = state.withLock { state -> TransferID? in
            guard !state.over else { return nil }
            state.over = true
            defer { state.transfer = nil }
            return state.transfer
        }
        if let transfer { fetcher.cancel(transfer) }
        try? entry.flush()
        entry.close()
    }

    /// The first range of the head the entry lacks: the prefix first, then the tail.
    private func missingRange() -> Range<Int64>? {
        guard let length = entry.metadata.validator.length else {
            return entry.missing(in: 0..<prefix).first  // the first answer tells the length
        }
        for range in [0..<min(prefix, length), max(0, length - tail)..<length] {
            if let missing = entry.missing(in: range).first { return missing }
        }
        return nil
    }

    private func next() {
        let range = state.withLock { state -> Range<Int64>?? in
            guard !state.over else { return .none }
            return .some(state.noRanges ? nil : missingRange())
        }
        guard let range else { return }  // cancelled
        guard let range else {
            let noRanges = state.withLock { $0.noRanges }
            return finish(noRanges ? "the origin ignores Range requests: the rest comes when it plays" : nil)
        }
        let validator = entry.metadata.validator
        let request = RangeRequest(
            url: url, start: range.lowerBound, end: range.upperBound, knownLength: validator.length,
            condition: entry.continuationCondition(held: validator.named), priority: .preload)
        state.withLock { state in
            guard !state.over else { return }  // cancelled meanwhile
            state.transfer = fetcher.start(request) { [weak self] id, event in self?.handle(event, of: id) }
        }
    }

    private func handle(_ event: TransferEvent, of id: TransferID) {
        guard state.withLock({ $0.transfer == id && !$0.over }) else { return }
        switch event {
        case .response(let head), .changed(let head):
            guard head.storesOnDisk else {
                // no-store (or Vary: *): nothing of it may be kept, so there is nothing to preload.
                entry.forgetVersion()
                return finish("not preloaded: the origin forbids storing it")
            }
            // A changed version empties the entry (setMetadata never mixes versions); its body follows from 0.
            entry.bind(to: head, from: url, fetcher: fetcher)
            if !head.honoursRange { state.withLock { $0.noRanges = true } }
            revalidator.markChecked(entry)  // the origin just named the version: no check needed soon
        case .data(let bytes, let offset):
            do throws(CacheError) {
                try entry.write(bytes, at: offset)
                pacer.wrote(id, to: entry)
            } catch {
                finish("cannot cache: \(error)")
            }
        case .finished:
            entry.flushInBackground()  // this is the fetcher's thread
            state.withLock { $0.transfer = nil }
            next()
        case .failed(let error):
            if error.meansResourceChanged { entry.forgetVersion() }
            finish(error.description)
        case .status(.endedShort(let length)):
            // The body ended before its declared length on an origin without ranges: that is the end.
            entry.flushInBackground()
            _ = try? entry.correctLength(length)
        case .notModified, .status:
            break
        }
    }

    private func finish(_ error: String?) {
        let transfer = state.withLock { state -> TransferID?? in
            guard !state.over else { return .none }
            state.over = true
            defer { state.transfer = nil }
            return .some(state.transfer)
        }
        guard let transfer else { return }
        if let transfer { fetcher.cancel(transfer) }
        entry.closeInBackground()  // often on the fetcher's thread, which never waits for the disk
        onEnd(self, error)
    }
}
