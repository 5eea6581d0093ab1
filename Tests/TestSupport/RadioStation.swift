import Dispatch
import Foundation
import Synchronization

/// A change of the stream title at a point of the station's endless stream.
public struct TitleChange: Sendable, Equatable {
    /// The absolute audio byte (endless-stream coordinates, not per connection) from which
    /// the title is in force.
    public var atAudioByte: Int64
    /// The title's bytes as sent between `StreamTitle='` and `';`: any encoding, or broken bytes.
    public var raw: Data

    /// A change to the bytes `raw` at `atAudioByte`.
    public init(atAudioByte: Int64, raw: Data) {
        self.atAudioByte = atAudioByte
        self.raw = raw
    }

    /// A change to `title`, encoded as UTF-8, at `atAudioByte`.
    public init(atAudioByte: Int64, _ title: String) {
        self.init(atAudioByte: atAudioByte, raw: Data(title.utf8))
    }
}

/// What a ``RadioStation`` announces and how it streams; fixed for the station's life.
public struct RadioSettings: Sendable, Equatable {
    /// The response's first line: `HTTP/1.0 200 OK`, or `ICY 200 OK` as old SHOUTcast servers send.
    public var statusLine: String
    /// `icy-name`; nil omits the header.
    public var icyName: String?
    /// `icy-genre`; nil omits the header.
    public var icyGenre: String?
    /// `icy-url` (the station's home page); nil omits the header.
    public var icyURL: String?
    /// `icy-br` in kbit/s; nil omits the header.
    public var icyBitrate: Int?
    /// `icy-description`; nil omits the header.
    public var icyDescription: String?
    /// Audio bytes a new connection gets at once from behind the live point (a server's
    /// burst-on-connect; less while the station has played less).
    public var burstBytes: Int
    /// Audio bytes between metadata blocks (`icy-metaint`), for clients that ask for metadata.
    public var metaInterval: Int
    /// The title schedule. A metadata block carries the latest change at or before the
    /// absolute audio byte that follows it; before the first change the title is empty.
    public var titles: [TitleChange]

    /// Settings; by default an Icecast-like station announcing every `icy-` header, with no
    /// burst, a block every 16,000 bytes and no titles.
    public init(
        statusLine: String = "HTTP/1.0 200 OK", icyName: String? = "Spool Test Radio", icyGenre: String? = "Test",
        icyURL: String? = "http://radio.invalid/", icyBitrate: Int? = 128,
        icyDescription: String? = "A looping stream for tests", burstBytes: Int = 0, metaInterval: Int = 16_000,
        titles: [TitleChange] = []
    ) {
        self.statusLine = statusLine
        self.icyName = icyName
        self.icyGenre = icyGenre
        self.icyURL = icyURL
        self.icyBitrate = icyBitrate
        self.icyDescription = icyDescription
        self.burstBytes = burstBytes
        self.metaInterval = metaInterval
        self.titles = titles
    }
}

/// Misbehaviours of a ``RadioStation``; all off by default. A connection takes the faults in
/// force when it opens, except `dropAfterSeconds` and `stall`, which every open connection
/// follows as they change (times counted from the connection's opening), so a test can
/// stall or drop a stream it is already reading.
public struct RadioFaults: Sendable, Equatable {
    /// A pause in sending that keeps the connection open, as a congested network gives.
    /// Afterwards the connection catches up with the live point at once, as a server's
    /// queue for a slow client drains; no byte is skipped.
    public struct Stall: Sendable, Equatable {
        /// Seconds after the connection opened when the pause begins (at once if already past).
        public var afterSeconds: Double
        /// How long it lasts; nil: until the client goes, the station stops or the stall is
        /// lifted with `setFaults`.
        public var duration: Double?

        /// Creates the stall. A connection pauses once for each distinct stall.
        public init(afterSeconds: Double, duration: Double? = nil) {
            self.afterSeconds = afterSeconds
            self.duration = duration
        }
    }

    /// Error answers for the next requests, as the fault origin plans them.
    public typealias ErrorResponses = OriginFaults.ErrorResponses

    /// Writes every metadata block one byte per `send`, each sent at once and followed by a
    /// short pause, after a write boundary right before the length byte, so that a reader
    /// sees blocks cut across its reads. (A pause of 0.2 ms a byte: 0.8 s for an oversize block.)
    public var splitMetadataWrites: Bool
    /// Pads every non-empty block to L = 255 (4,080 bytes).
    public var oversizeBlocks: Bool
    /// Closes every connection this many seconds after it opened (open ones included).
    public var dropAfterSeconds: Double?
    /// Closes a connection after it sent this many audio bytes.
    public var dropAfterAudioBytes: Int?
    /// Stops sending for a while (open connections included).
    public var stall: Stall?
    /// Answers the next requests with an error instead of the stream.
    public var errorResponses: ErrorResponses?
    /// How many requests get the stream before ``errorResponses`` begin: a plan made up front
    /// for a reconnection, whenever that comes.
    public var errorResponsesAfterRequests: Int
    /// Closes every accepted connection at once, before reading its request.
    public var refuseConnections: Bool

    /// Creates a set of faults; with no arguments, none.
    public init(
        splitMetadataWrites: Bool = false, oversizeBlocks: Bool = false, dropAfterSeconds: Double? = nil,
        dropAfterAudioBytes: Int? = nil, stall: Stall? = nil, errorResponses: ErrorResponses? = nil,
        errorResponsesAfterRequests: Int = 0, refuseConnections: Bool = false
    ) {
        self.splitMetadataWrites = splitMetadataWrites
        self.oversizeBlocks = oversizeBlocks
        self.dropAfterSeconds = dropAfterSeconds
        self.dropAfterAudioBytes = dropAfterAudioBytes
        self.stall = stall
        self.errorResponses = errorResponses
        self.errorResponsesAfterRequests = errorResponsesAfterRequests
        self.refuseConnections = refuseConnections
    }
}

/// One request a ``RadioStation`` answered, updated while its stream runs.
public struct RadioRequest: Sendable, Equatable {
    /// Order of arrival, from 0.
    public let number: Int
    /// The request method.
    public let method: String
    /// The request target as sent.
    public let target: String
    /// The request headers by lower-cased name.
    public let headers: [String: String]
    /// When the request head was read.
    public let arrived: ContinuousClock.Instant
    /// The status sent.
    public let status: Int
    /// The absolute audio byte the stream started at (0 for an error answer).
    public let startAudioByte: Int64
    /// How far behind the live point the stream started (the burst the connection got).
    public let burstBytes: Int
    /// Audio bytes written so far.
    public internal(set) var audioBytesSent = 0
    /// Metadata blocks written so far, empty ones (L = 0) included.
    public internal(set) var metadataBlocksSent = 0
    /// The titles of the non-empty blocks written so far, in order.
    public internal(set) var titlesSent: [Data] = []
    /// `send` calls made for the response (one per metadata byte under `splitMetadataWrites`).
    public internal(set) var writes = 0
    /// When the station closed the connection or saw the client go; nil while it streams.
    public internal(set) var closed: ContinuousClock.Instant?

    /// The `Icy-MetaData` header, if sent.
    public var icyMetaData: String? { headers["icy-metadata"] }
    /// The `Range` header, if sent (the station ignores it).
    public var range: String? { headers["range"] }
}

/// An Icecast/SHOUTcast-like internet radio station on 127.0.0.1 for tests: one endless MP3
/// stream (an MP3 played in a loop as a live source) on every path, with ICY metadata for
/// clients that ask, a title schedule, and faults a test switches on (``RadioFaults``).
///
/// The live point advances with wall time at `bytesPerSecond` from the station's start; audio
/// byte `k` of the endless stream is `audio[k % audio.count]`. A new connection gets
/// `burstBytes` from before the live point at once, then the stream in real time.
/// One thread accepts, one serves each connection. The station stops by itself after
/// `lifetime` seconds, on ``stop()`` and when released, closing every connection.
public final class RadioStation: Sendable {
    /// The port the station listens on.
    public let port: UInt16
    /// `http://127.0.0.1:port/stream.mp3` (every path serves the same stream).
    public let url: URL
    /// The stream's rate in audio bytes per second.
    public let bytesPerSecond: Int
    /// The settings it was started with.
    public let settings: RadioSettings
    private let core: RadioCore

    /// Starts a station playing `audio` (an MP3) in a loop at `bytesPerSecond`.
    public init(audio: Data, bytesPerSecond: Int, lifetime: Double = 300, settings: RadioSettings = .init()) throws {
        guard !audio.isEmpty, bytesPerSecond > 0, settings.metaInterval > 0, settings.burstBytes >= 0 else {
            throw RigError("a station needs audio, a positive rate and metaint, and a burst of 0 or more")
        }
        let server = try LoopbackServer(port: 0, backlog: 64)
        port = server.port
        url = URL(string: "http://127.0.0.1:\(port)/stream.mp3")!
        self.bytesPerSecond = bytesPerSecond
        self.settings = settings
        let core = RadioCore(server: server, audio: audio, bytesPerSecond: bytesPerSecond, settings: settings)
        self.core = core
        Thread.detachNewThread { core.acceptLoop() }
        DispatchQueue.global().asyncAfter(deadline: .now() + lifetime) { [weak core] in core?.stop() }
    }

    deinit { core.stop() }

    /// The URL of `path` on the station (with or without a leading slash).
    public func url(for path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)" + (path.hasPrefix("/") ? path : "/" + path))!
    }

    /// `count` bytes of the endless stream from absolute audio byte `offset`: what the station
    /// plays there, to compare with what a client received or decoded.
    public func audioBytes(from offset: Int64, count: Int) -> Data { core.audioBytes(from: offset, count: count) }

    /// The title in force at absolute audio byte `byte` (empty before the first change).
    public func title(atAudioByte byte: Int64) -> Data { core.title(atAudioByte: byte) }

    /// The absolute audio byte being played now.
    public func livePoint() -> Int64 { core.livePoint() }

    /// Changes the title from the live point on (connections behind it, through a burst,
    /// get it when they reach that byte); later scheduled changes still apply.
    public func setTitle(_ raw: Data) { core.setTitle(raw) }

    /// Changes the title to `title`, encoded as UTF-8, from the live point on.
    public func setTitle(_ title: String) { core.setTitle(Data(title.utf8)) }

    /// The faults in force.
    public var faults: RadioFaults { core.faults }

    /// Replaces the faults (and restarts the error-response count); see ``RadioFaults`` for
    /// which ones open connections follow.
    public func setFaults(_ faults: RadioFaults) { core.setFaults(faults) }

    /// Every request so far, in order of arrival, open streams included.
    public func requests() -> [RadioRequest] { core.requests() }

    /// The requests once at least `count` arrived; throws after `timeout` seconds.
    public func waitForRequests(atLeast count: Int, timeout: Double = 5) async throws -> [RadioRequest] {
        guard await core.arrivals.waitFor(timeout: .seconds(timeout), { $0.count >= count }) else {
            throw RigError("the station got \(core.requests().count) requests, expected \(count)")
        }
        return core.requests()
    }

    /// Connections being served now (refused ones are not counted).
    public var openConnections: Int { core.openConnections }

    /// Connections closed at once under `refuseConnections`.
    public var refusedConnections: Int { core.refusedConnections }

    /// Closes the listener and every connection, and waits (up to 2 s) until their sockets
    /// are closed. Idempotent.
    public func stop() { core.stop(waitingUpTo: 2) }
}

/// One ICY metadata block as a client received it.
public struct ICYMetadataBlock: Sendable, Equatable {
    /// Audio bytes of the connection before the block.
    public let audioOffset: Int
    /// The length byte L: the block carries L × 16 bytes.
    public let lengthByte: UInt8
    /// The L × 16 bytes, NUL padding included.
    public let payload: Data

    /// Whether the block is empty (L = 0: the title did not change).
    public var isEmpty: Bool { lengthByte == 0 }

    /// The raw bytes between `StreamTitle='` and `';`, nil when the block carries no title.
    public var streamTitle: Data? {
        guard let opener = payload.range(of: Data("StreamTitle='".utf8)),
            let closer = payload.range(of: Data("';".utf8), in: opener.upperBound..<payload.endIndex)
        else { return nil }
        return Data(payload[opener.upperBound..<closer.lowerBound])
    }
}

/// Splits an ICY response body into audio and metadata blocks, fed in pieces of any size
/// (the same result whatever the pieces), as a client must.
public struct ICYStreamParser: Sendable, Equatable {
    /// The `icy-metaint` of the response; nil: the body is all audio.
    public let metaInterval: Int?
    /// The audio bytes so far, blocks removed.
    public private(set) var audio = Data()
    /// The blocks so far, empty ones included.
    public private(set) var blocks: [ICYMetadataBlock] = []
    private var audioUntilBlock: Int
    /// The length byte of the block being read, nil between blocks.
    private var blockLength: UInt8?
    private var payload = Data()

    /// A parser for a body with a block after every `metaInterval` audio bytes (nil: none).
    public init(metaInterval: Int?) {
        self.metaInterval = metaInterval
        audioUntilBlock = metaInterval ?? .max
    }

    /// Parses the next bytes of the body.
    public mutating func feed(_ data: Data) {
        var index = data.startIndex
        while index < data.endIndex {
            if let length = blockLength {
                let take = min(Int(length) * 16 - payload.count, data.endIndex - index)
                payload += data[index..<index + take]
                index += take
                if payload.count == Int(length) * 16 { finishBlock(length) }
            } else if audioUntilBlock == 0 {
                blockLength = data[index]
                index += 1
                if blockLength == 0 { finishBlock(0) }
            } else {
                let take = min(audioUntilBlock, data.endIndex - index)
                audio += data[index..<index + take]
                index += take
                if metaInterval != nil { audioUntilBlock -= take }
            }
        }
    }

    private mutating func finishBlock(_ length: UInt8) {
        blocks.append(ICYMetadataBlock(audioOffset: audio.count, lengthByte: length, payload: payload))
        payload = Data()
        blockLength = nil
        audioUntilBlock = metaInterval ?? .max
    }
}

/// A raw-socket client of a ``RadioStation`` (or any ICY server on 127.0.0.1) for tests:
/// sends one GET, reads the response head, then reads the body on demand, each read with
/// a deadline, splitting audio from metadata blocks by the `icy-metaint` it announced.
public final class ICYTestReader {
    /// The response's first line (`HTTP/1.0 200 OK`, `ICY 200 OK`, …).
    public let statusLine: String
    /// The status code.
    public let status: Int
    /// Response headers by lower-cased name.
    public let headers: [String: String]
    /// The body so far, split into audio and blocks.
    public private(set) var parser: ICYStreamParser
    /// The raw body bytes so far, blocks included.
    public private(set) var body = Data()
    /// Receives that returned body bytes.
    public private(set) var reads = 0
    /// Whether the server closed (or reset) the connection.
    public private(set) var isClosedByPeer = false
    private let fd: Int32
    private var isOpen = true

    /// Connects to `127.0.0.1:port`, asks for `path` (with `Icy-MetaData: 1` when `metadata`,
    /// plus `headers`) and reads the response head; throws when no head arrives within `timeout`.
    public init(
        port: UInt16, path: String = "/stream.mp3", metadata: Bool = true, headers extra: [String: String] = [:],
        timeout: Double = 5
    ) throws {
        var request = "GET \(path) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\nUser-Agent: spool-icy-test-reader\r\n"
        if metadata { request += "Icy-MetaData: 1\r\n" }
        for (name, value) in extra.sorted(by: { $0.key < $1.key }) { request += "\(name): \(value)\r\n" }
        let (fd, head, rest) = try Self.exchange(port: port, request: request + "\r\n", timeout: timeout)
        self.fd = fd
        var lines = head.components(separatedBy: "\r\n")
        statusLine = lines.removeFirst()
        status = statusLine.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        var headers = [String: String]()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        self.headers = headers
        parser = ICYStreamParser(metaInterval: status == 200 ? headers["icy-metaint"].flatMap { Int($0) } : nil)
        if !rest.isEmpty { accept(rest) }
    }

    deinit { close() }

    /// The value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The audio bytes so far.
    public var audio: Data { parser.audio }

    /// The metadata blocks so far.
    public var blocks: [ICYMetadataBlock] { parser.blocks }

    /// Reads until `condition` holds; false when `timeout` seconds pass or the server closes first.
    @discardableResult
    public func read(timeout: Double = 5, until condition: (ICYTestReader) -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while !condition(self) {
            guard isOpen, !isClosedByPeer, let chunk = Self.receive(fd, before: deadline) else { return false }
            if chunk.isEmpty {
                isClosedByPeer = true
            } else {
                accept(chunk)
            }
        }
        return true
    }

    /// Reads until at least `count` audio bytes arrived; throws after `timeout` seconds or a close.
    public func readAudio(atLeast count: Int, timeout: Double = 5) throws {
        guard read(timeout: timeout, until: { $0.audio.count >= count }) else {
            throw RigError("got \(audio.count) of \(count) audio bytes (closed: \(isClosedByPeer))")
        }
    }

    /// Reads until at least `count` metadata blocks arrived; throws after `timeout` seconds or a close.
    public func readBlocks(atLeast count: Int, timeout: Double = 5) throws {
        guard read(timeout: timeout, until: { $0.blocks.count >= count }) else {
            throw RigError("got \(blocks.count) of \(count) metadata blocks (closed: \(isClosedByPeer))")
        }
    }

    /// Reads whatever arrives for `seconds`, or until the server closes.
    public func read(for seconds: Double) { read(timeout: seconds) { $0.isClosedByPeer } }

    /// Reads until the server closes the connection; false when it is still open after `timeout` seconds.
    public func readUntilClosed(timeout: Double = 5) -> Bool { read(timeout: timeout) { $0.isClosedByPeer } }

    /// Closes the connection (the server sees the client go).
    public func close() {
        guard isOpen else { return }
        isOpen = false
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }

    private func accept(_ chunk: Data) {
        body += chunk
        reads += 1
        parser.feed(chunk)
    }

    /// Connects, sends `request` and reads up to the end of the response head: the socket,
    /// the head (without its blank line) and the body bytes read with it.
    private static func exchange(port: UInt16, request: String, timeout: Double) throws -> (Int32, String, Data) {
        let fd = try Sockets.connectLoopback(port: port, receiveTimeout: timeout)
        let deadline = ContinuousClock.now + .seconds(timeout)
        let separator = Data("\r\n\r\n".utf8)
        var buffer = Data()
        if Sockets.sendAll(fd, Data(request.utf8)) {
            while buffer.range(of: separator) == nil, let chunk = receive(fd, before: deadline), !chunk.isEmpty {
                buffer += chunk
            }
        }
        guard let end = buffer.range(of: separator) else {
            Glibc.close(fd)
            throw RigError("no response head from 127.0.0.1:\(port); got \(buffer.count) bytes")
        }
        return (fd, String(decoding: buffer[..<end.lowerBound], as: UTF8.self), Data(buffer[end.upperBound...]))
    }

    /// The next bytes from `fd`: nil when `deadline` passes first, empty on a close or a reset.
    private static func receive(_ fd: Int32, before deadline: ContinuousClock.Instant) -> Data? {
        while true {
            let left = RadioTime.seconds(deadline - .now)
            guard left > 0 else { return nil }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32((left * 1000).rounded(.up)))
            if ready > 0 { return Sockets.receive(fd) ?? Data() }
            if ready < 0 && errno != EINTR { return Data() }
        }
    }
}
