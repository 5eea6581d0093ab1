import Foundation
import Synchronization

/// The station's shared state, owned by its threads (the public wrapper's release stops it).
final class RadioCore: Sendable {
    private struct State {
        var faults = RadioFaults()
        var errorResponsesLeft = 0
        var requestsSinceFaults = 0
        /// Sorted by byte; among changes at one byte, the later added wins.
        var titles: [TitleChange]
        var requests: [RadioRequest] = []
        var openConnections = 0
        var refusedConnections = 0
    }

    let server: LoopbackServer
    let audio: Data
    let bytesPerSecond: Int
    let settings: RadioSettings
    /// The instant the live point was at byte 0.
    let started = ContinuousClock.now
    /// The number of each request as it arrives, for awaiting a count.
    let arrivals = AwaitableLog<Int>()
    private let state: Mutex<State>

    init(server: LoopbackServer, audio: Data, bytesPerSecond: Int, settings: RadioSettings) {
        self.server = server
        self.audio = Data(audio)  // indices from 0, whatever slice the caller passed
        self.bytesPerSecond = bytesPerSecond
        self.settings = settings
        let titles = settings.titles.enumerated().sorted {
            ($0.element.atAudioByte, $0.offset) < ($1.element.atAudioByte, $1.offset)
        }.map(\.element)
        state = Mutex(State(titles: titles))
    }

    var isStopped: Bool { server.isStopped }
    var faults: RadioFaults { state.withLock { $0.faults } }
    var openConnections: Int { state.withLock { $0.openConnections } }
    var refusedConnections: Int { state.withLock { $0.refusedConnections } }

    /// The absolute audio byte played at `instant`.
    func livePoint(at instant: ContinuousClock.Instant = .now) -> Int64 {
        Int64(max(0, RadioTime.seconds(instant - started)) * Double(bytesPerSecond))
    }

    /// The instant the live point reaches `byte`.
    func instant(whenLiveReaches byte: Int64) -> ContinuousClock.Instant {
        started + .seconds(Double(byte) / Double(bytesPerSecond))
    }

    func audioBytes(from offset: Int64, count: Int) -> Data {
        precondition(offset >= 0 && count >= 0, "the endless stream starts at byte 0")
        var bytes = Data(capacity: count)
        var index = Int(offset % Int64(audio.count))
        while bytes.count < count {
            let end = min(audio.count, index + count - bytes.count)
            bytes += audio[index..<end]
            index = 0
        }
        return bytes
    }

    func title(atAudioByte byte: Int64) -> Data {
        state.withLock { state in state.titles.last { $0.atAudioByte <= byte }?.raw ?? Data() }
    }

    func setTitle(_ raw: Data) {
        let change = TitleChange(atAudioByte: livePoint(), raw: raw)
        state.withLock { state in
            let index = state.titles.firstIndex { $0.atAudioByte > change.atAudioByte } ?? state.titles.count
            state.titles.insert(change, at: index)
        }
    }

    func setFaults(_ faults: RadioFaults) {
        state.withLock { state in
            state.faults = faults
            state.errorResponsesLeft = faults.errorResponses?.count ?? 0
            state.requestsSinceFaults = 0
        }
    }

    /// The error a request gets instead of the stream, if the plan has one left (counting it).
    func claimErrorResponse() -> RadioFaults.ErrorResponses? {
        state.withLock { state in
            state.requestsSinceFaults += 1
            guard state.requestsSinceFaults > state.faults.errorResponsesAfterRequests, state.errorResponsesLeft > 0,
                let plan = state.faults.errorResponses
            else { return nil }
            state.errorResponsesLeft -= 1
            return plan
        }
    }

    func requests() -> [RadioRequest] { state.withLock { $0.requests } }

    /// Logs a request as it arrives; returns its number.
    func record(
        method: String, target: String, headers: [String: String], arrived: ContinuousClock.Instant, status: Int,
        startAudioByte: Int64 = 0, burstBytes: Int = 0
    ) -> Int {
        let number = state.withLock { state in
            state.requests.append(
                RadioRequest(
                    number: state.requests.count, method: method, target: target, headers: headers, arrived: arrived,
                    status: status, startAudioByte: startAudioByte, burstBytes: burstBytes))
            return state.requests.count - 1
        }
        let arrivals = arrivals
        Task { await arrivals.append(number) }
        return number
    }

    func updateRequest(_ number: Int, _ change: (inout RadioRequest) -> Void) {
        state.withLock { change(&$0.requests[number]) }
    }

    func acceptLoop() {
        server.acceptLoop { [self] client in
            let refused = state.withLock { state in
                if state.faults.refuseConnections {
                    state.refusedConnections += 1
                } else {
                    state.openConnections += 1
                }
                return state.faults.refuseConnections
            }
            guard !refused else { return }
            defer { state.withLock { $0.openConnections -= 1 } }
            Sockets.disableNagle(client)  // heads, audio and split metadata go out as they are written
            var connection = RadioConnection(fd: client, core: self)
            connection.run()
        }
    }

    /// Shuts the listener and every connection down; see ``LoopbackServer/stop(waitingUpTo:)``.
    func stop(waitingUpTo seconds: Double = 0) { server.stop(waitingUpTo: seconds) }
}

/// Durations as seconds.
enum RadioTime {
    /// `duration` in seconds.
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}

/// A request head as the station parsed it.
private struct RadioHTTPRequest {
    let method: String
    let target: String
    /// By lower-cased name.
    let headers: [String: String]

    /// Whether the client asked for ICY metadata (`Icy-MetaData: 1`; Icecast takes any positive number).
    var wantsMetadata: Bool {
        (headers["icy-metadata"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0) > 0
    }
}

/// A metadata block ready to send, and the title it carries (nil for an empty block).
private struct MetadataBlock {
    let bytes: Data
    let title: Data?
}

/// Serves one accepted connection of a ``RadioStation``: reads the request, answers an
/// injected error or the stream, and streams until a fault, the client or the station ends it.
struct RadioConnection {
    private let fd: Int32
    private let core: RadioCore
    private let opened = ContinuousClock.now
    /// The faults in force when the connection opened; `dropAfterSeconds` and `stall` are
    /// read from the core as they change instead.
    private let faults: RadioFaults
    private var number = 0
    /// The absolute audio byte sent next.
    private var position: Int64 = 0
    private var audioSent = 0
    private var metaInterval: Int?
    private var audioUntilBlock = 0
    private var lastTitleSent: Data?
    private var stallsServed: [RadioFaults.Stall] = []
    /// The stall under way and its end (nil: no end).
    private var activeStall: (stall: RadioFaults.Stall, end: ContinuousClock.Instant?)?

    /// Audio is sent in pieces of at least 20 ms of the stream (pacing finer than that
    /// only costs wake-ups) and at most 16 KiB.
    private var smallestPiece: Int { min(Self.largestPiece, max(1, core.bytesPerSecond / 50)) }
    private static let largestPiece = 16_384
    /// How long a wait lasts at most, so that fault changes reach open connections soon.
    private static let longestWait = 0.05

    init(fd: Int32, core: RadioCore) {
        self.fd = fd
        self.core = core
        faults = core.faults
    }

    mutating func run() {
        guard let request = Self.readRequest(fd) else { return }
        let arrived = ContinuousClock.now
        if let error = core.claimErrorResponse() {
            let number = core.record(
                method: request.method, target: request.target, headers: request.headers, arrived: arrived,
                status: error.status)
            let answer = Self.errorAnswer(error)
            let sent = Sockets.sendAll(fd, answer)
            core.updateRequest(number) {
                $0.writes = sent ? 1 : 0
                $0.closed = .now
            }
            return
        }
        let live = core.livePoint(at: arrived)
        position = max(0, live - Int64(core.settings.burstBytes))
        metaInterval = request.wantsMetadata ? core.settings.metaInterval : nil
        audioUntilBlock = metaInterval ?? 0
        number = core.record(
            method: request.method, target: request.target, headers: request.headers, arrived: arrived, status: 200,
            startAudioByte: position, burstBytes: Int(live - position))
        defer { core.updateRequest(number) { $0.closed = .now } }
        guard send(head()), request.method != "HEAD" else { return }
        stream()
    }

    // MARK: streaming

    /// Sends the stream until a fault ends it, the client goes or the station stops.
    private mutating func stream() {
        while !core.isStopped {
            let now = ContinuousClock.now
            let current = core.faults
            let dropAt = current.dropAfterSeconds.map { opened + .seconds($0) }
            if let dropAt, now >= dropAt { return }
            if let active = activeStall, active.stall != current.stall || active.end.map({ now >= $0 }) == true {
                activeStall = nil
            }
            if activeStall == nil, let stall = current.stall, !stallsServed.contains(stall),
                now >= opened + .seconds(stall.afterSeconds)
            {
                stallsServed.append(stall)
                activeStall = (stall, stall.duration.map { now + .seconds($0) })
            }
            if let active = activeStall {
                guard idle(until: Self.earliest(active.end, dropAt)) else { return }
                continue
            }
            if let limit = faults.dropAfterAudioBytes, audioSent >= limit { return }
            if metaInterval != nil, audioUntilBlock == 0 {
                guard sendSplitBlock() else { return }
                continue
            }
            let available = core.livePoint(at: now) - position
            if available < Int64(smallestPiece) {
                let stallStart = current.stall.flatMap {
                    stallsServed.contains($0) ? nil : opened + .seconds($0.afterSeconds)
                }
                let due = core.instant(whenLiveReaches: position + Int64(smallestPiece))
                guard idle(until: Self.earliest(due, dropAt, stallStart)) else { return }
                continue
            }
            var piece = Int(min(available, Int64(Self.largestPiece)))
            if metaInterval != nil { piece = min(piece, audioUntilBlock) }
            if let limit = faults.dropAfterAudioBytes { piece = min(piece, limit - audioSent) }
            guard sendAudio(piece) else { return }
        }
    }

    /// Sends `count` audio bytes; the block due after them goes in the same write unless
    /// blocks are split or the connection is dropped right after them.
    private mutating func sendAudio(_ count: Int) -> Bool {
        var bytes = core.audioBytes(from: position, count: count)
        let endsInterval = metaInterval != nil && count == audioUntilBlock
        let dropsAfter = faults.dropAfterAudioBytes.map { audioSent + count >= $0 } ?? false
        let block =
            endsInterval && !faults.splitMetadataWrites && !dropsAfter ? nextBlock(at: position + Int64(count)) : nil
        if let block { bytes += block.bytes }
        guard send(bytes) else { return false }
        position += Int64(count)
        audioSent += count
        if metaInterval != nil { audioUntilBlock -= count }
        let sent = audioSent
        core.updateRequest(number) { $0.audioBytesSent = sent }
        if let block { blockSent(block) }
        return true
    }

    /// Sends the block due now one byte per write, pausing between bytes so they arrive apart.
    private mutating func sendSplitBlock() -> Bool {
        let block = nextBlock(at: position)
        for byte in block.bytes {
            guard send(Data([byte])) else { return false }
            usleep(200)
        }
        blockSent(block)
        return true
    }

    /// The block due before absolute audio byte `byte`: the title in force there when it
    /// differs from the last one this connection sent (always for the first block), else empty.
    private func nextBlock(at byte: Int64) -> MetadataBlock {
        let title = core.title(atAudioByte: byte)
        guard title != lastTitleSent else { return MetadataBlock(bytes: Data([0]), title: nil) }
        return MetadataBlock(bytes: Self.metadataBlock(title: title, oversize: faults.oversizeBlocks), title: title)
    }

    private mutating func blockSent(_ block: MetadataBlock) {
        audioUntilBlock = metaInterval ?? 0
        if let title = block.title { lastTitleSent = title }
        core.updateRequest(number) { request in
            request.metadataBlocksSent += 1
            if let title = block.title { request.titlesSent.append(title) }
        }
    }

    /// Writes `bytes` in one `send` (as far as the socket takes them); false once the client is gone.
    private func send(_ bytes: Data) -> Bool {
        guard Sockets.sendAll(fd, bytes) else { return false }
        core.updateRequest(number) { $0.writes += 1 }
        return true
    }

    /// Waits until `deadline` (nil: without end), but at most ``longestWait`` so that changed
    /// faults apply soon; false when the client hung up or the station stopped (which shuts
    /// the socket down).
    private func idle(until deadline: ContinuousClock.Instant?) -> Bool {
        let wait = min(Self.longestWait, deadline.map { max(0, RadioTime.seconds($0 - .now)) } ?? Self.longestWait)
        var descriptor = pollfd(fd: fd, events: Sockets.peerHangUp, revents: 0)
        let ready = poll(&descriptor, 1, Int32((wait * 1000).rounded(.up)))
        if ready > 0 || core.isStopped { return false }
        return ready == 0 || errno == EINTR
    }

    private static func earliest(_ instants: ContinuousClock.Instant?...) -> ContinuousClock.Instant? {
        instants.compactMap { $0 }.min()
    }

    // MARK: wire format

    /// `StreamTitle='<title>';` behind its length byte, padded with NULs to L × 16 bytes
    /// (L = 255 when `oversize`); a title too long for one block is cut.
    static func metadataBlock(title: Data, oversize: Bool) -> Data {
        let content = Data((Data("StreamTitle='".utf8) + title + Data("';".utf8)).prefix(255 * 16))
        let length = oversize ? 255 : (content.count + 15) / 16
        return Data([UInt8(length)]) + content + Data(count: length * 16 - content.count)
    }

    /// The stream's response head.
    private func head() -> Data {
        let settings = core.settings
        let announced: [(String, String?)] = [
            ("icy-name", settings.icyName), ("icy-genre", settings.icyGenre), ("icy-url", settings.icyURL),
            ("icy-br", settings.icyBitrate.map(String.init)), ("icy-description", settings.icyDescription),
            ("icy-metaint", metaInterval.map(String.init)),
        ]
        let lines =
            [settings.statusLine, "Content-Type: audio/mpeg"]
            + announced.compactMap { name, value in value.map { "\(name): \($0)" } }
            + ["Cache-Control: no-cache", "Server: spool-radio-station", "Connection: close"]
        return Data((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    /// An injected error answer, closed after its short body.
    private static func errorAnswer(_ error: RadioFaults.ErrorResponses) -> Data {
        let body = "injected failure\n"
        var lines = [
            "HTTP/1.0 \(error.status) \(reason(error.status))", "Content-Type: text/plain",
            "Content-Length: \(body.utf8.count)",
        ]
        if let retryAfter = error.retryAfter { lines.append("Retry-After: \(retryAfter)") }
        lines.append("Connection: close")
        return Data((lines.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8)
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "Error"
        }
    }

    /// Reads a request head; nil when the client goes (or the station stops) before it ends.
    private static func readRequest(_ fd: Int32) -> RadioHTTPRequest? {
        let separator = Data("\r\n\r\n".utf8)
        var buffer = Data()
        while buffer.range(of: separator) == nil {
            guard buffer.count < 65_536, let data = Sockets.receive(fd), !data.isEmpty else { return nil }
            buffer += data
        }
        let head = String(decoding: buffer[..<buffer.range(of: separator)!.lowerBound], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ").map(String.init)
        guard requestLine.count >= 2 else { return nil }
        var headers = [String: String]()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        return RadioHTTPRequest(method: requestLine[0], target: requestLine[1], headers: headers)
    }
}
