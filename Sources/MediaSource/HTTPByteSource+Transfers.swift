import Basics
import ByteSourceAPI
import Dispatch
import Fetcher
import FoundationEssentials
import RangeCache
import Synchronization

// The planner's actions carried out with the fetcher, and the transfers' events: one handler
// for every transfer of the source, whichever store its bytes go to.

extension HTTPByteSource {
    /// Runs the planner's actions with the fetcher; never called under the state lock.
    func execute(_ actions: [DownloadPlanner.Action]) {
        for action in actions {
            switch action {
            case .start(let key, let from, let to, let priority):
                start(key, from: from, to: to, priority: priority)
            case .startHead(let key, let to, let priority):
                start(key, from: 0, to: to, priority: priority, wholeBodyUnlessRanged: true)
            case .startLast(let key, let length, let priority):
                start(key, from: 0, to: nil, priority: priority, lastBytes: length)
            case .cancel(let key):
                state.withLock { state in
                    state.meters[key] = nil
                    state.received[key] = nil
                }
                transfers.cancel(key)
            case .setPriority(let key, let priority):
                transfers.setPriority(key, priority)
            case .scheduleSeek(let delay):
                let nanoseconds =
                    Int(delay.components.seconds) * 1_000_000_000
                    + Int(delay.components.attoseconds / 1_000_000_000)
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
                    self?.seekIntervalEnded()
                }
            }
        }
    }

    /// Starts the request of the planner's transfer `key` (with If-Range when bytes are cached).
    /// With `lastBytes`, the request asks for the resource's last bytes instead (its rate is
    /// measured from where the response says they start).
    private func start(
        _ key: Int, from: Int64, to: Int64?, priority: FetchPriority, wholeBodyUnlessRanged: Bool = false,
        lastBytes: Int64? = nil
    ) {
        guard
            var request = state.withLock({ state -> RangeRequest? in
                guard !state.closed else { return nil }
                state.meters[key] = (.now, from)
                return request(from, end: to, priority: priority, state)
            })
        else { return }
        request.wholeBodyUnlessRanged = wholeBodyUnlessRanged
        request.suffix = lastBytes
        // Bytes the cache does not hold go to the network: a miss, which the cache cannot
        // see itself, as this source reads it only where the bytes are.
        entry?.countMiss()
        transfers.start(key, request) { [weak self] event in self?.handle(event, of: key) }
    }

    /// The end of a seek storm: one connection, at the offset the reader waits for now.
    private func seekIntervalEnded() {
        let actions = state.withLock { state -> [DownloadPlanner.Action] in
            guard !state.closed else { return [] }
            return state.planner.seekIntervalEnded(cached: held(state), now: .now)
        }
        execute(actions)
    }

    /// A request for `[start, end)`, conditional once bytes are cached
    /// (``CacheEntry/continuationCondition(held:)``).
    /// Every request asks for a live stream's titles: a station answers with them, any other
    /// origin ignores the header.
    private func request(_ start: Int64, end: Int64?, priority: FetchPriority, _ state: State) -> RangeRequest {
        var request = RangeRequest(
            url: url, start: start, end: end, knownLength: state.info?.length,
            condition: entry?.continuationCondition(held: state.validator), priority: priority, resource: nil)
        request.asksStreamMetadata = true
        request.continuesLiveStream = state.info?.live != nil
        return request
    }

    func handle(_ event: TransferEvent, of key: Int) {
        var callbacks: [@Sendable () -> Void] = []
        var actions: [DownloadPlanner.Action] = []
        // Changes of the entry's version and index, made after the lock is released (in order):
        // nothing under the lock waits for the index or the disk.
        var entryWork: [EntryWork] = []
        // Bytes go to the disk before the lock is taken: a write may wait for the kernel (its
        // dirty-page limit on a slow disk), and GStreamer's reads take this lock. Every
        // event of a transfer, and every change of version, comes on the fetcher's thread, so
        // no other version can be bound to the entry in between.
        var diskRefused: CacheError?
        var failure: FetchError?
        if let entry, case .data(let bytes, let offset) = event,
            state.withLock({ !$0.closed && !$0.keepsOffDisk && $0.planner.transfers.contains { $0.key == key } })
        {
            do throws(CacheError) {
                try entry.write(bytes, at: offset)
                transfers.wrote(key, to: entry)
            } catch {
                diskRefused = error
            }
        }
        state.withLock { state in
            guard !state.closed, state.planner.transfers.contains(where: { $0.key == key }) else { return }
            var effects = DownloadPlanner.Effects()
            switch event {
            case .response(let head):
                state.unreachable = nil
                if let meter = state.meters[key] { state.meters[key] = (meter.start, head.bodyStart) }
                entryWork += accept(head, &state, &callbacks)
                if state.planner.resource == nil, let info = state.info {
                    effects.actions = state.planner.learn(
                        .init(length: info.length, rangesSupported: info.randomAccess), cached: held(state))
                }
            case .changed(let head):
                // The file changed on the server: never splice it with what was cached. A preload
                // takes the new version's bytes, which follow from byte 0.
                let wasOpen = state.info != nil && state.openCompletion == nil && state.preloadEnd == nil
                entryWork.append(.forgetVersion)
                state.generation &+= 1
                state.memory.empty()
                if wasOpen {
                    log.warning("\(loggable(url)) changed on the server while playing: reopening it")
                    state.failure = .readFailed("the resource changed on the server")
                    actions += state.planner.stopAll()
                    effects.wakeReader = true
                } else {
                    if state.preloadEnd != nil { state.info = nil }
                    entryWork += accept(head, &state, &callbacks)
                    if let info = state.info {
                        state.planner.setResource(.init(length: info.length, rangesSupported: info.randomAccess))
                    }
                }
            case .notModified:
                break
            case .streamMetadata(let metadata, let offset):
                guard let title = StreamTitle(metadata) else { break }
                state.latestTitle = (title, offset)
                if let handler = state.titleHandler { callbacks.append { handler(title, offset) } }
            case .data(let bytes, let offset):
                state.transferStatus = nil
                state.unreachable = nil
                if state.keepsOffDisk {
                    keepInMemory(bytes, at: offset, because: "the origin forbids storing it", &state)
                } else if let diskRefused {
                    keepInMemory(bytes, at: offset, because: "\(diskRefused)", &state)
                }
                let next = offset + Int64(bytes.count)
                state.received[key, default: 0] += Int64(bytes.count)
                effects = state.planner.received(key, upTo: next, cached: held(state))
                if let rate = measure(key, deliveredUpTo: next, state) {
                    effects.actions += state.planner.setRate(rate, of: key, cached: held(state), now: .now)
                }
                if let length = state.info?.length, next >= length, let meter = state.meters[key],
                    let handler = state.transferHandler
                {
                    // The resource's last byte: measured now, as its reader may close the source
                    // (an HLS segment read through moves on) before the transfer's end is seen.
                    let sample = TransferSample(
                        bytes: state.received[key] ?? 0, took: ContinuousClock.now - meter.start)
                    callbacks.append { handler(sample) }
                    state.meters[key] = nil
                }
            case .status(.endedShort(let length)):
                // The origin overstated the length: the stream ends here, for this play and the next.
                log.info(
                    "\(loggable(url)) ends at byte \(length), before the \(state.info?.length.map(String.init) ?? "?") declared"
                )
                effects = state.planner.resourceEnds(at: length, reportedBy: key, cached: held(state))
                state.info?.length = length
                entryWork.append(.correctLength(length))
            case .status(.paused) where transfers.isHeldForTheDisk(key):
                state.transferStatus = "waiting for the disk to store what arrived"
            case .status(let status):
                state.transferStatus = Self.describe(status)
                let isParked = state.planner.transfers.first { $0.key == key }?.role == .parked
                if case .retrying(_, _, let reason) = status, !isParked,
                    let error = Self.unreachable(reason, retrying: true)
                {
                    // No connection at all: a reader waiting for bytes learns it now, while the
                    // transfer keeps retrying in the background (its next read tries at once).
                    state.unreachable = error
                    if let completion = state.openCompletion {
                        // Nothing cached to play and no server to ask: say so now, not after the
                        // retry budget; the player's own retry and skip take it from here.
                        state.openCompletion = nil
                        actions += state.planner.stopAll()
                        let failure = Self.unreachable(reason, retrying: false) ?? error
                        state.failure = failure
                        callbacks.append { completion(.failure(failure)) }
                    }
                    if state.planner.waiting != nil {
                        state.readerError = error
                        effects.wakeReader = true
                    }
                }
            case .finished:
                if let meter = state.meters[key], let bytes = state.received[key], let handler = state.transferHandler {
                    let sample = TransferSample(bytes: bytes, took: ContinuousClock.now - meter.start)
                    callbacks.append { handler(sample) }
                }
                state.meters[key] = nil
                state.received[key] = nil
                transfers.forget(key)
                // Not waited for: this is the fetcher's thread.
                entryWork.append(.flushInBackground)
                effects = state.planner.finished(key, cached: held(state))
                if let length = state.planner.resource?.length, state.info?.length == nil {
                    // A stream of unknown length ended: remember its length for the next play.
                    state.info?.length = length
                    entryWork.append(.recordLength(length))
                }
            case .failed(let error):
                failure = error
                state.meters[key] = nil
                state.received[key] = nil
                transfers.forget(key)
                let role = state.planner.transfers.first { $0.key == key }?.role
                state.planner.forget(key)
                if role == .parked, !error.meansResourceChanged { return }  // set aside by a seek; nobody waits for it
                log.warning("\(loggable(url)): \(error)")
                if let completion = state.openCompletion {
                    state.openCompletion = nil
                    let failure = MediaSourceError(downloadFailure: error)
                    state.failure = failure
                    callbacks.append { completion(.failure(failure)) }
                } else if error.meansResourceChanged {
                    entryWork.append(.forgetVersion)
                    state.generation &+= 1
                    state.failure = .readFailed("the resource changed on the server")
                    actions += state.planner.stopAll()
                } else if state.info?.live != nil {
                    // The station is gone (its transfer gave up after its retries): every read
                    // past what is held says why, whether one waits now or comes later.
                    state.failure = MediaSourceError(downloadFailure: error)
                } else if state.planner.waiting != nil {
                    state.failure = .readFailed(error.description)
                }
                effects.wakeReader = state.planner.waiting != nil
            }
            actions += effects.actions
            if effects.wakeReader, let wake = state.wake {
                state.wake = nil
                callbacks.append(wake)
            }
            if let outcome = preloadEnd(failure: failure, state), let end = state.preloadEnd {
                state.preloadEnd = nil
                actions += state.planner.stopAll()
                callbacks.append { end(outcome.reason) }
            }
        }
        if let entry { for work in entryWork { perform(work, on: entry) } }
        execute(actions)
        for callback in callbacks { callback() }
    }

    /// The transfer's bytes per second since its request was started: a lower bound of its
    /// throughput (the time includes the request's latency), so it never makes a reader wait
    /// for a transfer slower than it is, and it is known from the first bytes on.
    private func measure(_ key: Int, deliveredUpTo next: Int64, _ state: State) -> Double? {
        guard let meter = state.meters[key] else { return nil }
        let elapsed = ContinuousClock.now - meter.start
        let seconds = elapsed.inSeconds
        return seconds > 0 ? Double(next - meter.offset) / seconds : nil
    }

    /// A change of the entry that the handling of an event asks for.
    enum EntryWork {
        /// The resource changed on the server: the entry forgets its version and bytes.
        case forgetVersion
        /// Bind the entry to the version of a response (see ``CacheEntry/bind(to:from:fetcher:)``).
        case bind(ResponseHead)
        /// The origin overstated the length: the resource ends at this byte.
        case correctLength(Int64)
        /// A stream of unknown length ended here: its length is kept for the next play.
        case recordLength(Int64)
        /// Start syncing and committing what was written.
        case flushInBackground
    }

    /// Carries out `work`; on the fetcher's thread, never under the state lock.
    private func perform(_ work: EntryWork, on entry: CacheEntry) {
        switch work {
        case .forgetVersion:
            entry.forgetVersion()
        case .bind(let head):
            entry.bind(to: head, from: url, fetcher: fetcher)
        case .correctLength(let length):
            // Rare (an origin that overstated its length): the one wait for the disk here.
            try? entry.flush()
            try? entry.correctLength(length)
        case .recordLength(let length):
            var metadata = entry.metadata
            guard metadata.validator.length == nil else { return }
            metadata.validator.length = length
            _ = try? entry.setMetadata(metadata)
        case .flushInBackground:
            entry.flushInBackground()
        }
    }

    /// The clear error for a reader when `reason` means the origin cannot be reached at all
    /// (unknown host, refused, no route), nil for other failures, which are retried silently.
    /// "still retrying" only when the transfer goes on (`retrying`): an open that fails here
    /// stops its transfers, and a message saying otherwise sends the user waiting for nothing.
    static func unreachable(_ reason: FetchError, retrying: Bool) -> MediaSourceError? {
        reason.unreachableServer.map { .unreachable(retrying ? "\($0); still retrying" : $0) }
    }

    /// The first response: bind the entry to this version (returned, for after the lock) and
    /// finish opening.
    private func accept(
        _ head: ResponseHead, _ state: inout State, _ callbacks: inout [@Sendable () -> Void]
    ) -> [EntryWork] {
        var work: [EntryWork] = []
        if head.isLive, state.info == nil {
            // A live stream is held for a pause of a few minutes at most, whatever the window
            // of files: what is ahead of the listener then is what a Play within it plays on.
            state.memory = MemoryStore(window: .live(kilobitsPerSecond: head.icy.bitrate))
            state.planner.limitToWindow(state.memory.window.capacity / 2)
            state.streamingFromMemory = true
            log.info("\(loggable(url)) is a live stream\(head.icy.name.map { " (\($0))" } ?? ""); kept in memory only")
        }
        if !head.storesOnDisk, !state.keepsOffDisk {
            // Never on disk: what the entry held of an earlier version goes, and every byte of
            // this one stays in memory.
            state.keepsOffDisk = true
            state.memory.empty()
            work.append(.forgetVersion)
        }
        if !state.keepsOffDisk, entry != nil {
            // Bytes kept in memory when the disk was full are of the version held before.
            if state.validator.map({ !$0.isSameVersion(as: head.version) }) ?? true { state.memory.empty() }
            work.append(.bind(head))
        }
        // Bound to nothing when kept off the disk: the entry stays empty and is removed at close.
        if !work.isEmpty { state.generation &+= 1 }
        state.validator = head.validator
        guard state.info == nil else { return work }
        let info = ResourceInfo(response: head)
        state.info = info
        if let completion = state.openCompletion {
            state.openCompletion = nil
            callbacks.append { completion(.success(info)) }
        }
        log.log(state.preloadEnd == nil ? .info : .debug, "opened \(loggable(url)): \(info.openedDescription)")
        return work
    }

    /// The bytes go to the memory store: there is no cache, the origin forbids storing them, or
    /// the disk is full or gone. From the first on the download stays half a window ahead of
    /// the play head, and bytes the window drops (furthest behind it first) are fetched again if
    /// a seek goes back to them.
    private func keepInMemory(_ bytes: Data, at offset: Int64, because reason: String, _ state: inout State) {
        if !state.streamingFromMemory {
            if entry == nil {
                log.debug("\(loggable(url)): no cache; streaming from memory")
            } else if state.keepsOffDisk {
                log.info("not caching \(loggable(url)) (\(reason)); streaming from memory")
            } else {
                log.warning("cannot cache \(loggable(url)) (\(reason)); streaming from memory")
            }
            state.streamingFromMemory = true
            state.planner.limitToWindow(state.memory.window.capacity / 2)
        }
        let needed = state.planner.waiting.map { $0.offset..<($0.offset + Int64($0.minLength)) }
        state.memory.keep(bytes, at: offset, reader: state.planner.playHead, needed: needed)
    }
}
