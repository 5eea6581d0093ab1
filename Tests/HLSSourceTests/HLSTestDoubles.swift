import ByteSourceAPI
import Foundation
import HLS
import HLSSource
import Synchronization
import TestSupport
import Testing

/// A resource held in memory whose open and bytes come when the test says.
final class HeldSource: ByteSource {
    private struct State {
        var available = 0
        var wake: (@Sendable () -> Void)?
        var closed = false
        var backgroundHints: [Bool] = []
        var readOffsets: [Int64] = []
    }
    let bytes: Data
    private let state = Mutex(State())

    init(_ bytes: Data, available: Int? = nil, transfer: TransferSample? = nil, failsToOpen: Bool = false) {
        self.bytes = bytes
        self.transfer = transfer
        self.failsToOpen = failsToOpen
        state.withLock { $0.available = available ?? bytes.count }
    }

    var closed: Bool { state.withLock { $0.closed } }
    /// What its download measures as, told to the handler once it opened.
    let transfer: TransferSample?
    /// Its open fails, as a segment not on the server yet (404) does.
    let failsToOpen: Bool
    private let transferHandler = Mutex<(@Sendable (TransferSample) -> Void)?>(nil)

    func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        guard !failsToOpen else { return completion(.failure(.gone("not there yet"))) }
        completion(.success(ResourceInfo(length: Int64(bytes.count), randomAccess: true)))
        if let transfer, let handler = transferHandler.withLock({ $0 }) { handler(transfer) }
    }

    func whenTransferred(_ handler: @escaping @Sendable (TransferSample) -> Void) {
        transferHandler.withLock { $0 = handler }
    }

    /// The offset of every read asked of it, in order.
    var readOffsets: [Int64] { state.withLock { $0.readOffsets } }

    func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        state.withLock { state in
            state.readOffsets.append(offset)
            if offset >= Int64(bytes.count) { return .endOfStream }
            guard offset < Int64(state.available) else {
                state.wake = wake
                return .pending
            }
            let end = min(Int(offset) + maxLength, state.available)
            return .data(bytes.subdata(in: Int(offset)..<end))
        }
    }

    /// Makes all its bytes readable and wakes a waiting read.
    func arrive() {
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            state.available = bytes.count
            defer { state.wake = nil }
            return state.wake
        }
        wake?()
    }

    func cancelPendingReads() { state.withLock { $0.wake = nil } }
    func close() { state.withLock { $0.closed = true } }
}

/// Playlists and segment bytes served from memory.
final class Origin: Sendable {
    let playlists: Mutex<[URL: String]>
    let sources: Mutex<[URL: [HeldSource]]> = Mutex([:])
    let bodies: [URL: Data]
    let slow: Set<URL>
    /// How many of the first sources made for a URL fail to open.
    let failingOpens: [URL: Int]
    /// The playlists fetched, in order.
    let fetched: Mutex<[URL]> = Mutex([])
    /// Whether each segment source made was a live one.
    let liveFlags: Mutex<[Bool]> = Mutex([])

    /// Whole resources other than playlists (keys).
    let blobs: [URL: Data]
    /// How segments' downloads measure (none: not over the network).
    let transfers: [URL: TransferSample]

    init(
        playlists: [URL: String], bodies: [URL: Data], slow: Set<URL> = [], blobs: [URL: Data] = [:],
        transfers: [URL: TransferSample] = [:], failingOpens: [URL: Int] = [:]
    ) {
        self.transfers = transfers
        self.failingOpens = failingOpens
        self.playlists = Mutex(playlists)
        self.bodies = bodies
        self.slow = slow
        self.blobs = blobs
    }

    func source(_ url: URL) -> HLSByteSource {
        HLSByteSource(
            url: url,
            fetchPlaylist: { [self] address, _ throws(MediaSourceError) in
                fetched.withLock { $0.append(address) }
                if let blob = blobs[address] { return blob }
                guard let text = playlists.withLock({ $0[address] }) else { throw MediaSourceError.gone(address.path) }
                return Data(text.utf8)
            },
            makeSource: { [self] address, live throws(MediaSourceError) in
                guard let body = bodies[address] else { throw MediaSourceError.gone(address.path) }
                let madeBefore = made(address).count
                let source = HeldSource(
                    body, available: slow.contains(address) ? 0 : nil, transfer: transfers[address],
                    failsToOpen: madeBefore < failingOpens[address, default: 0])
                sources.withLock { $0[address, default: []].append(source) }
                liveFlags.withLock { $0.append(live) }
                return source
            })
    }

    func made(_ url: URL) -> [HeldSource] { sources.withLock { $0[url] ?? [] } }
}

func url(_ path: String) -> URL { URL(string: "http://hls.example/\(path)")! }

func open(_ source: HLSByteSource) async -> Result<ResourceInfo, MediaSourceError> {
    await withCheckedContinuation { continuation in source.open { continuation.resume(returning: $0) } }
}

/// Reads the whole stream with reads of `chunk` bytes, waiting for each wake-up.
/// One read at `offset`, waiting until it is answered.
func readOnce(_ source: HLSByteSource, at offset: Int64, maxLength: Int) async -> ReadOutcome {
    while true {
        let outcome = await withCheckedContinuation { continuation in
            let once = Mutex(false)
            let resume = { @Sendable (outcome: ReadOutcome) in
                if !once.withLock({ done in
                    defer { done = true }
                    return done
                }) {
                    continuation.resume(returning: outcome)
                }
            }
            let first = source.read(at: offset, maxLength: maxLength) { resume(.pending) }
            if case .pending = first { return }
            resume(first)
        }
        if case .pending = outcome { continue }
        return outcome
    }
}

func readAll(_ source: HLSByteSource, chunk: Int = 7) async -> Result<Data, MediaSourceError> {
    var collected = Data()
    while true {
        let outcome = await withCheckedContinuation { continuation in
            let once = Mutex(false)
            let wake: @Sendable () -> Void = {
                if !once.withLock({ done in
                    defer { done = true }
                    return done
                }) {
                    continuation.resume(returning: ReadOutcome.pending)
                }
            }
            let first = source.read(at: Int64(collected.count), maxLength: chunk, wake: wake)
            if case .pending = first { return }
            if !once.withLock({ done in
                defer { done = true }
                return done
            }) {
                continuation.resume(returning: first)
            }
        }
        switch outcome {
        case .data(let bytes): collected.append(bytes)
        case .endOfStream: return .success(collected)
        case .failed(let error): return .failure(error)
        case .pending: continue
        }
    }
}
