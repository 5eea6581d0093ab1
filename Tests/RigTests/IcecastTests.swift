import Foundation
import Synchronization
import TestSupport
import Testing

@Suite("Icecast test server", .serialized)
struct IcecastTests {
    @Test func aListenerGetsTheStationHeadersAndMP3() async throws {
        let started = ContinuousClock.now
        let icecast = try IcecastServer()
        let source = try icecast.startSource(mount: "/jazz.mp3", name: "Spool Test FM", genre: "Jazz", bitrate: 128)
        try await icecast.waitUntilMounted("/jazz.mp3")
        #expect(ContinuousClock.now - started < .seconds(10))

        let listener = try await IcyReader.connect(to: icecast.streamURL(mount: "jazz.mp3"))
        #expect(listener.status == 200)
        #expect(listener.headers["content-type"] == "audio/mpeg")
        #expect(listener.headers["icy-metaint"] == "16000")
        #expect(listener.headers["icy-name"] == "Spool Test FM")
        #expect(listener.headers["icy-genre"] == "Jazz")
        #expect(listener.headers["icy-br"] == "128")
        #expect(listener.headers["content-length"] == nil)
        let frames = try #require(MP3Frames(in: try await listener.audio(count: 8192)))
        #expect(frames.firstOffset < 418)  // the burst starts mid-frame; the next frame begins within one frame
        #expect(frames.count >= 18)
        #expect(frames.bitrates == [128])
        #expect(try icecast.listenerCount(mount: "/jazz.mp3") == 1)

        listener.close()
        let log = try await icecast.accessLog(atLeast: 1)
        #expect(log.map(\.method) == ["GET"])
        #expect(log.map(\.path) == ["/jazz.mp3"])
        #expect(log.map(\.status) == [200])
        #expect(log.map(\.userAgent) == [IcyReader.userAgent])
        #expect(source.isStreaming)
    }

    @Test func aTitleSetByTheAdminReachesListenersInBand() async throws {
        let (icecast, source) = try await mountedServer(mount: "/talk.mp3")
        let listener = try await IcyReader.connect(to: icecast.streamURL(mount: "/talk.mp3"))
        #expect(try await listener.nextMetadata() == Data("StreamTitle='';".utf8))

        try icecast.setTitle("Artist One - Song One", mount: "/talk.mp3")
        #expect(try await listener.nextMetadata(timeout: 5) == Data("StreamTitle='Artist One - Song One';".utf8))
        #expect(source.isStreaming)
    }

    @Test func aNonASCIITitleArrivesAsUTF8UnlessACharsetIsDeclared() async throws {
        let (icecast, source) = try await mountedServer(mount: "/world.mp3")
        let listener = try await IcyReader.connect(to: icecast.streamURL(mount: "/world.mp3"))
        _ = try await listener.nextMetadata()
        let title = "Café – Müller 日本"

        try icecast.setTitle(title, mount: "/world.mp3")
        let utf8: [UInt8] = [
            0x43, 0x61, 0x66, 0xC3, 0xA9, 0x20, 0xE2, 0x80, 0x93, 0x20, 0x4D, 0xC3, 0xBC, 0x6C, 0x6C, 0x65, 0x72, 0x20,
            0xE6, 0x97, 0xA5, 0xE6, 0x9C, 0xAC,
        ]
        let passedThrough = try await listener.nextMetadata(timeout: 5)
        #expect(passedThrough == streamTitle(utf8))
        #expect(String(validating: passedThrough, as: UTF8.self) == "StreamTitle='\(title)';")

        // Declaring the bytes UTF-8 makes Icecast convert them to the mount's Latin-1.
        try icecast.setTitle(title, mount: "/world.mp3", charset: "UTF-8")
        let latin1: [UInt8] =
            [0x43, 0x61, 0x66, 0xE9] + Array(" &#8211; M".utf8) + [0xFC] + Array("ller &#26085;&#26412;".utf8)
        #expect(try await listener.nextMetadata(timeout: 5) == streamTitle(latin1))
        #expect(source.isStreaming)
    }

    @Test func playsAFileInRealTimeThenDropsTheMount() async throws {
        let files = try TemporaryDirectory(prefix: "spool-icecast-file")
        // Six seconds: a listener that a loaded machine connects late still hears the stream.
        let file = files.file("six-seconds.mp3")
        let encoded = try await runCommandAwaiting(
            "gst-launch-1.0",
            [
                "-q", "audiotestsrc", "num-buffers=258", "!", "audio/x-raw,rate=44100,channels=2", "!", "lamemp3enc",
                "!", "filesink", "location=\(file.path)",
            ])
        try #require(encoded.status == 0, "\(encoded.stderr)")
        let icecast = try IcecastServer()
        let started = ContinuousClock.now
        let source = try icecast.startSource(mount: "/file.mp3", name: "File FM", genre: "Test", playing: file)
        try await icecast.waitUntilMounted("/file.mp3")
        let listener = try await IcyReader.connect(to: icecast.streamURL(mount: "/file.mp3"))

        let audioBytes = try await listener.audioUntilEnd(timeout: 15)
        #expect(ContinuousClock.now - started > .seconds(1.8))  // 2 s of audio, not sent at once
        #expect(audioBytes > 16_000)
        #expect(await eventually(timeout: 5) { !source.isStreaming })
        #expect(throws: (any Error).self) { try icecast.listenerCount(mount: "/file.mp3") }
    }

    @Test func aToneWithSecondsEndsByItself() async throws {
        let icecast = try IcecastServer()
        let source = try icecast.startSource(mount: "/brief.mp3", name: "Brief", genre: "Test", seconds: 1)
        try await icecast.waitUntilMounted("/brief.mp3")
        #expect(await eventually(timeout: 10) { !source.isStreaming })
        #expect(await eventually(timeout: 5) { (try? icecast.listenerCount(mount: "/brief.mp3")) == nil })
    }

    @Test func stopEndsTheServerAndItsSources() async throws {
        let (icecast, source) = try await mountedServer(mount: "/gone.mp3")
        let port = icecast.port
        await onOwnThread { icecast.stop() }
        #expect(!icecast.isRunning)
        #expect(!source.isStreaming)
        #expect(throws: (any Error).self) { try HTTPConnection(port: port) }
    }

    @Test func endsByItselfAfterItsLifetime() async throws {
        let icecast = try IcecastServer(lifetime: 2)
        let port = icecast.port
        #expect(icecast.isRunning)
        #expect(await eventually(timeout: 15) { !icecast.isRunning })
        #expect(throws: (any Error).self) { try HTTPConnection(port: port) }
    }

    private func mountedServer(mount: String) async throws -> (IcecastServer, IcecastSource) {
        let icecast = try IcecastServer()
        let source = try icecast.startSource(mount: mount, name: "Spool Test FM", genre: "Talk")
        try await icecast.waitUntilMounted(mount)
        return (icecast, source)
    }

    private func streamTitle(_ title: [UInt8]) -> Data {
        Data("StreamTitle='".utf8) + title + Data("';".utf8)
    }
}

/// The MPEG-1 Layer III frames of a stretch of audio that may start mid-frame: where the
/// first frame begins (a header whose successor header sits one frame length further) and the
/// bit rate of every whole frame after it. Only 44.1 kHz, the rig's rate.
private struct MP3Frames {
    let firstOffset: Int
    let count: Int
    let bitrates: Set<Int>

    init?(in audio: Data) {
        let bytes = [UInt8](audio)
        guard
            let first = (0..<min(2048, bytes.count)).first(where: { offset in
                Self.frame(in: bytes, at: offset).map { Self.frame(in: bytes, at: offset + $0.length) != nil } ?? false
            })
        else { return nil }
        var offset = first
        var rates = Set<Int>()
        var count = 0
        while let frame = Self.frame(in: bytes, at: offset), offset + frame.length <= bytes.count {
            rates.insert(frame.bitrate)
            count += 1
            offset += frame.length
        }
        firstOffset = first
        self.count = count
        bitrates = rates
    }

    private static func frame(in bytes: [UInt8], at offset: Int) -> (length: Int, bitrate: Int)? {
        guard offset + 4 <= bytes.count, bytes[offset] == 0xFF, bytes[offset + 1] & 0xFE == 0xFA else { return nil }
        let kilobits = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0]
        let bitrate = kilobits[Int(bytes[offset + 2] >> 4)]
        guard bitrate > 0, (bytes[offset + 2] >> 2) & 3 == 0 else { return nil }
        return (144_000 * bitrate / 44_100 + Int((bytes[offset + 2] >> 1) & 1), bitrate)
    }
}

/// A listener that reads an Icecast stream the way a radio player does, on a raw socket: it
/// asks for in-band metadata and separates the audio from the blocks by `icy-metaint`. Blocking
/// reads run on threads of their own; it is for one test at a time.
private final class IcyReader: Sendable {
    static let userAgent = "SpoolRigTests/1.0"
    let status: Int
    /// Response headers by lower-cased name.
    let headers: [String: String]
    private let stream: Mutex<StreamState>

    private struct StreamState {
        let fd: Int32
        let metadataInterval: Int?
        var buffer: Data
        var audioBeforeMetadata: Int
        var isOpen = true
    }

    private enum Piece {
        case audio(Data)
        case metadata(Data)
        case end
    }

    private init(url: URL, timeout: Double) throws {
        let deadline = Date().addingTimeInterval(timeout)
        let fd = try Self.connect(port: UInt16(url.port ?? 80))
        let request =
            "GET \(url.path) HTTP/1.1\r\nHost: 127.0.0.1\r\nIcy-MetaData: 1\r\nUser-Agent: \(Self.userAgent)\r\n\r\n"
        var received = Data()
        var headEnd: Range<Data.Index>?
        let bytes = Array(request.utf8)
        let sent = send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL))
        while sent == bytes.count, headEnd == nil, let more = try? Self.receive(fd, deadline: deadline),
            !more.isEmpty
        {
            received += more
            headEnd = received.range(of: Data("\r\n\r\n".utf8))
        }
        guard let headEnd else {
            Glibc.close(fd)
            throw RigError("no response head from \(url): \(String(decoding: received, as: UTF8.self))")
        }
        var lines = String(decoding: received[..<headEnd.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        status = Int(lines.removeFirst().split(separator: " ").dropFirst().first ?? "") ?? 0
        headers = Dictionary(
            lines.compactMap { line in
                line.firstIndex(of: ":").map {
                    (line[..<$0].lowercased(), line[line.index(after: $0)...].trimmingCharacters(in: .whitespaces))
                }
            }, uniquingKeysWith: { $1 })
        let interval = headers["icy-metaint"].flatMap { Int($0) }
        stream = Mutex(
            StreamState(
                fd: fd, metadataInterval: interval, buffer: Data(received[headEnd.upperBound...]),
                audioBeforeMetadata: interval ?? 0))
    }

    deinit { close() }

    /// Connects to `url` (on 127.0.0.1) and reads the response head.
    static func connect(to url: URL, timeout: Double = 5) async throws -> IcyReader {
        try await onOwnThread { Result { try IcyReader(url: url, timeout: timeout) } }.get()
    }

    /// The next `count` bytes of audio, metadata taken out; throws when they take over `timeout` s.
    func audio(count: Int, timeout: Double = 5) async throws -> Data {
        try await read(timeout: timeout) { stream, deadline in
            var audio = Data()
            while audio.count < count {
                switch try Self.next(&stream, deadline: deadline) {
                case .audio(let bytes): audio += bytes
                case .metadata: continue
                case .end: throw RigError("the stream ended after \(audio.count) bytes of audio")
                }
            }
            return Data(audio.prefix(count))
        }
    }

    /// The next metadata block that is not empty, without its NUL padding.
    func nextMetadata(timeout: Double = 5) async throws -> Data {
        try await read(timeout: timeout) { stream, deadline in
            while true {
                switch try Self.next(&stream, deadline: deadline) {
                case .audio: continue
                case .metadata(let block) where !block.isEmpty: return block
                case .metadata: continue
                case .end: throw RigError("the stream ended before a metadata block")
                }
            }
        }
    }

    /// Reads until the server closes the stream; returns the bytes of audio read.
    func audioUntilEnd(timeout: Double) async throws -> Int {
        try await read(timeout: timeout) { stream, deadline in
            var count = 0
            while true {
                switch try Self.next(&stream, deadline: deadline) {
                case .audio(let bytes): count += bytes.count
                case .metadata: continue
                case .end: return count
                }
            }
        }
    }

    func close() {
        stream.withLock { stream in
            guard stream.isOpen else { return }
            stream.isOpen = false
            Glibc.close(stream.fd)
        }
    }

    private func read<T: Sendable>(
        timeout: Double, _ body: @escaping @Sendable (inout StreamState, Date) throws -> T
    ) async throws -> T {
        let deadline = Date().addingTimeInterval(timeout)
        return try await onOwnThread {
            Result {
                try self.stream.withLock { stream in
                    guard stream.isOpen else { throw RigError("the listener is closed") }
                    return try body(&stream, deadline)
                }
            }
        }.get()
    }

    private static func next(_ stream: inout StreamState, deadline: Date) throws -> Piece {
        if stream.buffer.isEmpty, try !fill(&stream, deadline: deadline) { return .end }
        guard let interval = stream.metadataInterval else {
            defer { stream.buffer = Data() }
            return .audio(stream.buffer)
        }
        if stream.audioBeforeMetadata > 0 {
            let audio = Data(stream.buffer.prefix(stream.audioBeforeMetadata))
            stream.buffer.removeFirst(audio.count)
            stream.audioBeforeMetadata -= audio.count
            return .audio(audio)
        }
        let length = Int(stream.buffer[stream.buffer.startIndex]) * 16
        while stream.buffer.count < 1 + length {
            if try !fill(&stream, deadline: deadline) { return .end }
        }
        var block = Data(stream.buffer.dropFirst().prefix(length))
        stream.buffer.removeFirst(1 + length)
        stream.audioBeforeMetadata = interval
        while block.last == 0 { block.removeLast() }
        return .metadata(block)
    }

    /// Appends what arrives before `deadline`; false when the server closed the stream.
    private static func fill(_ stream: inout StreamState, deadline: Date) throws -> Bool {
        let more = try receive(stream.fd, deadline: deadline)
        stream.buffer += more
        return !more.isEmpty
    }

    private static func receive(_ fd: Int32, deadline: Date) throws -> Data {
        var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
        guard poll(&waiting, 1, milliseconds) == 1 else { throw RigError("no data before the deadline") }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count >= 0 else { throw RigError("recv failed: errno \(errno)") }
        return Data(buffer[0..<count])
    }

    private static func connect(port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RigError("socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw RigError("connect to port \(port) failed: errno \(errno)")
        }
        return fd
    }
}
