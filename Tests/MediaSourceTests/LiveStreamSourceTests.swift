import ByteSourceAPI
import Fetcher
import Foundation
import MediaSource
import RangeCache
import Synchronization
import TestSupport
import Testing

// `HTTPByteSource` against a fault-injecting radio station on loopback, read as the engine's
// feeder reads a pushed stream. What a reader gets must be exactly the station's audio from
// where each connection began: one byte of a metadata block reaching the decoder would shift
// every byte after it. Titles must come in order, decoded, with the offset of the first audio
// byte after their block.

/// Where a live source under test may keep bytes: nowhere but memory, or also a cache entry
/// (which a live stream must leave empty).
enum LiveStore: String, CaseIterable, Sendable, CustomStringConvertible {
    case memoryOnly
    case cacheEntry

    var description: String { rawValue }
}

/// A title a source reported, with the offset of the first audio byte it applies to.
struct ReportedTitle: Sendable, Equatable {
    let title: StreamTitle
    let offset: Int64
}

/// The titles a source reported, in order, collected on the fetcher's thread.
final class ReportedTitles: Sendable {
    private let titles = Mutex<[ReportedTitle]>([])

    func append(_ title: ReportedTitle) { titles.withLock { $0.append(title) } }

    /// The titles reported for offsets before `offset`: a block at the end of what was read
    /// may have arrived or not, every one before it has (a block is reported before the audio
    /// after it is delivered).
    func before(_ offset: Int64) -> [ReportedTitle] { titles.withLock { $0.filter { $0.offset < offset } } }
}

/// A value handed over once from any thread, awaited with a deadline.
final class Delivery<Value: Sendable>: Sendable {
    private enum State {
        case empty
        case awaited(CheckedContinuation<Value?, Never>)
        case delivered(Value)
        case expired
    }

    private let state = Mutex<State>(.empty)

    /// Hands `value` over; later deliveries are ignored.
    func deliver(_ value: Value) { settle(value) }

    /// The value, or nil when `deadline` passes first.
    func value(before deadline: ContinuousClock.Instant) async -> Value? {
        let timer = Task { [self] in
            // Cancelled once the value came: nothing to expire then.
            guard (try? await Task.sleep(until: deadline)) != nil else { return }
            settle(nil)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let settled: Value?? = state.withLock { state in
                switch state {
                case .delivered(let value): return .some(value)
                case .expired: return .some(nil)
                case .empty, .awaited:
                    state = .awaited(continuation)
                    return nil
                }
            }
            if let settled { continuation.resume(returning: settled) }
        }
    }

    /// Delivers `value`, or expires the wait when nil.
    private func settle(_ value: Value?) {
        let waiter = state.withLock { state -> CheckedContinuation<Value?, Never>? in
            var waiter: CheckedContinuation<Value?, Never>?
            switch state {
            case .delivered, .expired: return nil
            case .awaited(let continuation): waiter = continuation
            case .empty: break
            }
            state = value.map { .delivered($0) } ?? .expired
            return waiter
        }
        waiter?.resume(returning: value)
    }
}

/// Reads a source from byte 0 on as the engine's feeder reads a pushed stream (a live one is
/// never pulled): one read at a time at the next offset, up to 4 KiB and answered as soon as a
/// byte is here, and after `.pending` nothing until that read's wake-up.
final class LiveReader {
    let source: any ByteSource
    /// Every byte read so far, from offset 0.
    private(set) var bytes = Data()

    /// What appsrc asks for at a time.
    static let blockSize = 4096

    init(_ source: any ByteSource) { self.source = source }

    /// Opens the source; throws its error, or when it does not answer within `timeout`.
    func open(timeout: Duration = .seconds(5)) async throws -> ResourceInfo {
        let opened = Delivery<Result<ResourceInfo, MediaSourceError>>()
        source.open { opened.deliver($0) }
        guard let result = await opened.value(before: .now + timeout) else {
            throw RigError("the source did not open within \(timeout)")
        }
        return try result.get()
    }

    /// One read at the next offset, waiting out its `.pending`: the bytes (also added to
    /// ``bytes``), the end or a failure; nil when `deadline` passes first.
    func step(before deadline: ContinuousClock.Instant) async -> ReadOutcome? {
        while true {
            let woken = Delivery<Void>()
            let outcome = source.read(
                at: Int64(bytes.count), maxLength: Self.blockSize, minLength: 1, wake: { woken.deliver(()) })
            guard outcome == .pending else {
                if case .data(let data) = outcome { bytes += data }
                return outcome
            }
            guard await woken.value(before: deadline) != nil else {
                source.cancelPendingReads()
                return nil
            }
        }
    }

    /// Reads until at least `count` bytes are in; throws when a read fails, the stream ends
    /// or `timeout` passes first.
    func read(atLeast count: Int, timeout: Duration = .seconds(10)) async throws {
        let started = ContinuousClock.now
        while bytes.count < count {
            let outcome = await step(before: started + timeout)
            switch outcome {
            case .data?, .pending?:
                continue
            case .failed(let error)?:
                throw RigError("read \(bytes.count) of \(count) bytes, then: \(error)")
            case .endOfStream?:
                throw RigError("read \(bytes.count) of \(count) bytes, then the stream ended")
            case nil:
                throw RigError("read \(bytes.count) of \(count) bytes in \(timeout)")
            }
        }
    }

    /// The bytes read in `range` of offsets.
    func bytes(in range: Range<Int>) -> Data { Data(bytes[range]) }
}

/// A radio station on loopback, a fetcher and an `HTTPByteSource` for the station's stream,
/// over a cache entry or memory only, with the titles the source reports.
final class LiveSourceRig {
    let station: RadioStation
    let source: HTTPByteSource
    let titles = ReportedTitles()
    let reader: LiveReader
    /// The cache and the stream's entry, when the source has one.
    let cache: RangeCache?
    let entry: CacheEntry?
    private let directory: TemporaryDirectory?

    /// A block every 4,000 audio bytes, 40,000 bytes a second: ten blocks a second.
    static let metaInterval = 4_000
    static let byteRate = 40_000
    /// The station's loop; its length is no multiple of the interval, so no block falls on
    /// the same audio twice.
    static let audio = patternedBody(100_003)

    init(
        store: LiveStore, settings: RadioSettings = RadioSettings(), faults: RadioFaults = RadioFaults(),
        fetcher configure: (inout FetcherConfiguration) -> Void = { _ in }
    ) throws {
        var settings = settings
        settings.metaInterval = Self.metaInterval
        station = try RadioStation(audio: Self.audio, bytesPerSecond: Self.byteRate, lifetime: 60, settings: settings)
        station.setFaults(faults)
        var configuration = FetcherConfiguration(userAgent: "Spool/test")
        configure(&configuration)
        if store == .cacheEntry {
            let directory = try TemporaryDirectory(prefix: "spool-live-cache")
            let cache = try RangeCache(directory: directory.url)
            self.directory = directory
            self.cache = cache
            entry = try cache.entry(for: station.url)
        } else {
            directory = nil
            cache = nil
            entry = nil
        }
        source = HTTPByteSource(url: station.url, entry: entry, fetcher: Fetcher(configuration: configuration))
        reader = LiveReader(source)
        let titles = titles
        source.whenStreamTitle { title, offset in titles.append(ReportedTitle(title: title, offset: offset)) }
    }

    deinit {
        source.close()
        cache?.close()
    }

    /// The titles a connection that began at the station's audio byte `start`, at `base` in
    /// the source's bytes, carries in its blocks before source offset `end`: block k follows
    /// k × metaint audio bytes of the connection and names the title in force at the audio
    /// byte after it, when that differs from the last one the connection named (the first
    /// block always names one).
    func titlesSent(from start: Int64, at base: Int64 = 0, before end: Int64) -> [(offset: Int64, raw: Data)] {
        var sent: [(offset: Int64, raw: Data)] = []
        var block = Int64(Self.metaInterval)
        while base + block < end {
            let raw = station.title(atAudioByte: start + block)
            if raw != sent.last?.raw || sent.isEmpty { sent.append((base + block, raw)) }
            block += Int64(Self.metaInterval)
        }
        return sent
    }

    /// Bytes in the cache's data files (the index and its journal are not counted).
    func bytesInDataFiles() -> Int {
        guard let directory else { return 0 }
        let data = directory.url.appendingPathComponent("data")
        let files = (try? FileManager.default.subpathsOfDirectory(atPath: data.path)) ?? []
        return files.reduce(0) { total, file in
            let attributes = try? FileManager.default.attributesOfItem(atPath: data.appendingPathComponent(file).path)
            let isFile = attributes?[.type] as? FileAttributeType == .typeRegular
            return total + (isFile ? (attributes?[.size] as? Int ?? 0) : 0)
        }
    }
}

@Suite("A live stream through HTTPByteSource, under the station's faults")
struct LiveStreamSourceTests {
    static let interval = LiveSourceRig.metaInterval

    /// "Café Tacvba - Eres" in Latin-1, as older stations send it (é is the single byte 0xE9).
    static let latin1Title = Data("Caf".utf8) + Data([0xE9]) + Data(" Tacvba - Eres".utf8)

    @Test(arguments: LiveStore.allCases)
    func splitOversizeBlocksNeverReachTheReaderAndTitlesComeDecodedAtTheirOffsets(store: LiveStore) async throws {
        // Latin-1 from the start, then an empty title (the station names no song), then UTF-8.
        let emptyAt: Int64 = 40_000
        let lastAt: Int64 = 80_000
        let rig = try LiveSourceRig(
            store: store,
            settings: RadioSettings(titles: [
                TitleChange(atAudioByte: 0, raw: Self.latin1Title), TitleChange(atAudioByte: emptyAt, raw: Data()),
                TitleChange(atAudioByte: lastAt, "Nina Simone - Sinnerman"),
            ]),
            faults: RadioFaults(splitMetadataWrites: true, oversizeBlocks: true))
        _ = try await rig.reader.open()
        let request = try #require(try await rig.station.waitForRequests(atLeast: 1).first)
        let start = request.startAudioByte
        try #require(start + Int64(Self.interval) < emptyAt, "the stream began at \(start), after the first title")

        // Two intervals past the block that names the last title, and at least five in all.
        let lastBlock = (lastAt - start + Int64(Self.interval) - 1) / Int64(Self.interval) * Int64(Self.interval)
        let count = max(5 * Self.interval, Int(lastBlock) + 2 * Self.interval)
        try await rig.reader.read(atLeast: count, timeout: .seconds(20))

        let read = rig.reader.bytes(in: 0..<count)
        let audio = rig.station.audioBytes(from: start, count: count)
        #expect(firstDifference(read, audio) == nil, "\(describeDifference(read, audio))")

        let reported = rig.titles.before(Int64(count))
        let expected = rig.titlesSent(from: start, before: Int64(count))
        #expect(reported.map(\.offset) == expected.map(\.offset), "block k follows k × \(Self.interval) audio bytes")
        #expect(expected.map(\.raw) == [Self.latin1Title, Data(), Data("Nina Simone - Sinnerman".utf8)])
        #expect(
            reported.map(\.title) == [
                StreamTitle(text: "Café Tacvba - Eres", artist: "Café Tacvba", title: "Eres"),
                StreamTitle(text: "", artist: nil, title: ""),
                StreamTitle(text: "Nina Simone - Sinnerman", artist: "Nina Simone", title: "Sinnerman"),
            ])
        let sent = try #require(rig.station.requests().first)
        #expect(sent.writes > 3 * 255 * 16, "every block went out a byte per write: \(sent.writes) writes")
        if let entry = rig.entry { #expect(entry.cachedRanges.isEmpty, "a live stream is never stored") }
    }

    @Test(arguments: LiveStore.allCases)
    func opensAsALiveStationWithNoLengthNoRangesAndStoresNothing(store: LiveStore) async throws {
        let rig = try LiveSourceRig(
            store: store,
            settings: RadioSettings(
                icyName: "Fault FM", icyGenre: "Jazz", icyURL: "http://fault.invalid/", icyBitrate: 96,
                icyDescription: "Faults on air"))
        let info = try await rig.reader.open()
        #expect(
            info.live
                == LiveStation(
                    name: "Fault FM", genre: "Jazz", homepage: "http://fault.invalid/", description: "Faults on air",
                    bitrate: 96))
        #expect(info.length == nil)
        #expect(!info.randomAccess)
        #expect(info.contentType == "audio/mpeg")

        try await rig.reader.read(atLeast: 3 * Self.interval)
        #expect(rig.source.bytesInMemory >= Int64(3 * Self.interval), "a live stream is kept in memory")
        guard let entry = rig.entry, let cache = rig.cache else { return }
        #expect(entry.cachedRanges.isEmpty)
        rig.source.close()
        cache.close()  // waits for what was written to be synced
        #expect(rig.bytesInDataFiles() == 0, "no byte of a live stream reaches the disk")
    }

    @Test func aDroppedConnectionGoesOnAtTheNextByteWithTheNewConnectionsAudioAndTitles() async throws {
        // Each connection ends after `cut` audio bytes; a new one starts 8,000 bytes behind the
        // live point, so its audio overlaps the end of the last one's and must not be skipped.
        let cut = 20_000
        let rig = try LiveSourceRig(
            store: .memoryOnly,
            settings: RadioSettings(
                burstBytes: 8_000, titles: [TitleChange(atAudioByte: 0, "Drop Artist - Drop Song")]),
            faults: RadioFaults(dropAfterAudioBytes: cut))
        _ = try await rig.reader.open()
        let count = 2 * cut + 3 * Self.interval
        try await rig.reader.read(atLeast: count)

        let streams = Array(try await rig.station.waitForRequests(atLeast: 3).prefix(3))
        for (index, request) in streams.enumerated() {
            let piece = index * cut..<min((index + 1) * cut, count)
            let read = rig.reader.bytes(in: piece)
            let audio = rig.station.audioBytes(from: request.startAudioByte, count: piece.count)
            #expect(firstDifference(read, audio) == nil, "connection \(index): \(describeDifference(read, audio))")
        }
        #expect(streams[1].startAudioByte < streams[0].startAudioByte + Int64(cut), "the connections overlap")
        for request in streams.dropFirst() {
            #expect(request.icyMetaData == "1", "a reconnection asks for titles too")
            #expect(request.range == nil, "a live stream is never asked for a range")
        }
        // Every connection's first block names the title after `interval` bytes of its own audio.
        let offsets = rig.titles.before(Int64(count)).map(\.offset)
        #expect(offsets == [0, cut, 2 * cut].map { Int64($0 + Self.interval) })
    }

    @Test func aStalledConnectionIsDroppedAfterTheLiveStallTimeoutAndReadingGoesOn() async throws {
        // The stall ends by itself just before the default timeout (4 s) would end it: only the
        // 1-s setting makes a second connection.
        let rig = try LiveSourceRig(
            store: .memoryOnly, settings: RadioSettings(burstBytes: 8_000),
            faults: RadioFaults(stall: .init(afterSeconds: 1, duration: 3.9))
        ) { $0.liveStallTimeout = 1 }
        _ = try await rig.reader.open()
        // The first connection sends a second of audio (40,000 bytes, and a burst of what the
        // station played before it), then nothing: reading on needs a new connection.
        let count = 70_000
        try await rig.reader.read(atLeast: count, timeout: .seconds(8))

        let requests = rig.station.requests()
        try #require(requests.count >= 2, "reconnected during the stall: \(requests)")
        let (first, second) = (requests[0], requests[1])
        let splice = first.audioBytesSent
        try #require(splice < count - Self.interval, "the first connection sent \(splice) bytes")
        let before = rig.reader.bytes(in: 0..<splice)
        let firstAudio = rig.station.audioBytes(from: first.startAudioByte, count: splice)
        #expect(firstDifference(before, firstAudio) == nil, "\(describeDifference(before, firstAudio))")
        let after = rig.reader.bytes(in: splice..<count)
        let secondAudio = rig.station.audioBytes(from: second.startAudioByte, count: count - splice)
        #expect(firstDifference(after, secondAudio) == nil, "\(describeDifference(after, secondAudio))")
        // The stall began a second after the first request; the source waited its timeout.
        let waited = second.arrived - (first.arrived + .seconds(1))
        #expect(waited >= .milliseconds(900), "reconnected \(waited) into the stall")
        #expect(second.icyMetaData == "1" && second.range == nil)
    }

    @Test func aReconnectionAnsweredWith503AndRetryAfterWaitsThenGoesOn() async throws {
        let cut = 40_000
        // The first connection ends after `cut` bytes; the next request gets the error.
        let faults = RadioFaults(
            dropAfterAudioBytes: cut, errorResponses: .init(count: 1, status: 503, retryAfter: 1),
            errorResponsesAfterRequests: 1)
        let rig = try LiveSourceRig(store: .memoryOnly, faults: faults) { $0.retryBaseDelay = 0.05 }
        _ = try await rig.reader.open()
        let count = cut + 2 * Self.interval
        try await rig.reader.read(atLeast: count, timeout: .seconds(8))

        let requests = rig.station.requests()
        try #require(requests.count >= 3, "\(requests)")
        #expect(requests.map(\.status).prefix(3) == [200, 503, 200])
        // Its own backoff would ask again after 0.05 s; the read's deadline bounds the wait.
        let waited = requests[2].arrived - requests[1].arrived
        #expect(waited >= .milliseconds(950), "Retry-After: 1 honoured: waited \(waited)")
        #expect(requests.dropFirst().allSatisfy { $0.icyMetaData == "1" && $0.range == nil })
        let first = rig.reader.bytes(in: 0..<cut)
        let firstAudio = rig.station.audioBytes(from: requests[0].startAudioByte, count: cut)
        #expect(firstDifference(first, firstAudio) == nil, "\(describeDifference(first, firstAudio))")
        let after = rig.reader.bytes(in: cut..<count)
        let newAudio = rig.station.audioBytes(from: requests[2].startAudioByte, count: count - cut)
        #expect(firstDifference(after, newAudio) == nil, "\(describeDifference(after, newAudio))")
    }

    @Test func aStationThatIsGoneFailsReadsClearlyWithinTheLiveRetryDuration() async throws {
        let retryDuration = 2.0
        let rig = try LiveSourceRig(store: .memoryOnly) { configuration in
            configuration.liveRetryDuration = retryDuration
            configuration.retryBaseDelay = 0.05
            configuration.retryMaxDelay = 0.2
        }
        _ = try await rig.reader.open()
        try await rig.reader.read(atLeast: 2 * Self.interval)
        rig.station.stop()
        let stopped = ContinuousClock.now

        // Read on as the engine would until the source gives up; a deadline far short of the
        // default retry duration (60 s) catches a read left waiting.
        let bound = stopped + .seconds(retryDuration + 10)
        var failures: [(error: MediaSourceError, after: Duration)] = []
        var waitedOut = false
        while failures.last.map({ $0.error.description.contains("still retrying") }) ?? true {
            guard let outcome = await rig.reader.step(before: bound) else {
                waitedOut = true
                break
            }
            if case .failed(let error) = outcome { failures.append((error, ContinuousClock.now - stopped)) }
        }
        #expect(!waitedOut, "a read was still waiting \(bound - stopped) after the station went; failures: \(failures)")
        let first = try #require(failures.first)
        // Told while it still retries, not only once it has given up.
        #expect(
            failures.count >= 2 && first.error.description.contains("still retrying"),
            "the first failure came \(first.after) after the station went: \(failures)")
        // Retried for the live retry duration (each failed attempt telling the reader), then given up.
        let last = try #require(failures.last)
        #expect(last.after >= .seconds(retryDuration * 0.9), "gave up \(last.after) after the station went")
        #expect(last.error != .closed && !last.error.description.isEmpty)
        // Given up: a read fails at once, it does not wait.
        let offset = Int64(rig.reader.bytes.count)
        #expect(rig.source.read(at: offset, maxLength: 4096, minLength: 1) {} == .failed(last.error))
    }
}
