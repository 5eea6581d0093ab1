import Foundation
import Synchronization

/// Debian's Icecast 2.4 on a free 127.0.0.1 port, for the internet-radio tests: sources feed it
/// MP3 in real time and listeners get what a real station sends. Its config, logs and random
/// passwords live in its own temporary directory; nothing under /etc/icecast2 or
/// /usr/share/icecast2 is needed. The process ends by itself after `lifetime` seconds even if the
/// test process dies, and on ``stop()`` or release, which stop its sources too.
///
/// What a listener asking for `Icy-MetaData: 1` gets from Icecast 2.4.4: `HTTP/1.0 200 OK`,
/// `Content-Type: audio/mpeg`, `icy-br`, `ice-audio-info`, `icy-genre`, `icy-name` (the source's
/// bytes unchanged, so a UTF-8 name stays UTF-8), `icy-pub: 0`, `icy-metaint: 16000` and no
/// Content-Length; then a burst of up to the last ``burstSize`` bytes, which starts mid-frame.
/// The first metadata block, 16000 bytes in, is `StreamTitle='';` until a title is set; later
/// blocks are empty (a zero length byte) until the title changes.
///
/// Icecast refuses to run as root, so as root the config hands the process to `nobody` (after it
/// binds the port) and the log directory is made writable for that user.
public final class IcecastServer: Sendable {
    /// The port Icecast listens on.
    public let port: UInt16
    /// The password sources log in with (user `source`).
    public let sourcePassword: String
    /// The password of the admin interface (user `admin`).
    public let adminPassword: String
    /// Bytes of recent audio a new listener gets at once. About one second of 128 kbit/s: a
    /// listener starts without waiting for the encoder, yet lags the source by only that much,
    /// so a title set by ``setTitle(_:mount:charset:)`` reaches it within about two seconds
    /// (Icecast's default, 64 KB, would add three more).
    public static let burstSize = 16_384
    /// The User-Agent of the rig's own requests, which ``accessLog()`` leaves out.
    static let rigUserAgent = "spool-icecast-rig"

    private let workspace: TemporaryDirectory
    private let process: ChildProcess
    private let stopsAt: Date
    private let sources = Mutex<[WeakSource]>([])
    private var logDirectory: URL { workspace.file("log") }

    /// Starts Icecast and returns once it answers HTTP requests; retries on a fresh port when
    /// the chosen one was taken in the meantime. `lifetime` is rounded up to whole seconds.
    public init(lifetime: Double = 300) throws {
        let workspace = try TemporaryDirectory(prefix: "spool-icecast")
        self.workspace = workspace
        let passwords = (source: Self.randomPassword(), admin: Self.randomPassword())
        sourcePassword = passwords.source
        adminPassword = passwords.admin
        stopsAt = Date().addingTimeInterval(lifetime)
        var lastError: Error = RigError("icecast did not start")
        for _ in 0..<5 {
            do {
                let port = try freeLoopbackPort()
                let config = try Self.writeConfig(
                    port: port, workspace: workspace, sourcePassword: passwords.source, adminPassword: passwords.admin)
                process = try Self.start(config: config, port: port, workspace: workspace, lifetime: lifetime)
                self.port = port
                return
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// Whether the Icecast process is still running.
    public var isRunning: Bool { process.isRunning }

    /// `http://127.0.0.1:port/mount`, what a player opens.
    public func streamURL(mount: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(Self.normalized(mount))")!
    }

    /// Starts a source that feeds `mount` a sine tone of `frequency` Hz, encoded by GStreamer's
    /// LAME to constant-bit-rate MP3 in real time, and returns once Icecast has accepted it (use
    /// ``waitUntilMounted(_:timeout:)`` before listening). `name` and `genre` reach listeners as
    /// `icy-name` and `icy-genre`, `bitrate` (one of MP3's, e.g. 128) as `icy-br`. With `seconds`
    /// the tone ends after that long and the mount goes away; without, it runs until stopped.
    public func startSource(
        mount: String, name: String, genre: String, bitrate: Int = 128, seconds: Double? = nil, frequency: Int = 440
    ) throws -> IcecastSource {
        let length = seconds.map { ["num-buffers=\(max(1, Int(($0 * 44_100 / 1024).rounded(.up))))"] } ?? []
        let tone = ["audiotestsrc", "wave=sine", "freq=\(frequency)", "is-live=true"] + length
        return try startSource(
            mount: mount, name: name, genre: genre, bitrate: bitrate, audio: tone, paced: false)
    }

    /// Starts a source that plays `file` (any audio GStreamer decodes) once onto `mount`,
    /// re-encoded to MP3 at `bitrate` and sent at the speed it plays; the mount goes away when
    /// the file ends. Otherwise as ``startSource(mount:name:genre:bitrate:seconds:frequency:)``.
    public func startSource(
        mount: String, name: String, genre: String, bitrate: Int = 128, playing file: URL
    ) throws -> IcecastSource {
        let decoder = ["filesrc", "location=\"\(file.path)\"", "!", "decodebin", "!", "audioresample"]
        return try startSource(mount: mount, name: name, genre: genre, bitrate: bitrate, audio: decoder, paced: true)
    }

    /// Returns once `mount` streams audio to a listener; throws after `timeout` seconds.
    public func waitUntilMounted(_ mount: String, timeout: Double = 10) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if await onOwnThread({ self.streamsAudio(mount) }) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        let encoderErrors = sources.withLock { $0.compactMap(\.source) }
            .filter { $0.mount == Self.normalized(mount) }.map(\.encoderErrors).joined(separator: "\n")
        throw RigError("\(streamURL(mount: mount)) did not stream within \(timeout) s: \(encoderErrors) \(errorLog)")
    }

    /// Sets the title in-band listeners get as `StreamTitle` (the admin `metadata` update a
    /// source client makes). Without `charset` Icecast 2.4.4 passes the title's UTF-8 bytes
    /// through unchanged. With `charset` (what the bytes are in) it converts them to the mount's
    /// charset, Latin-1 by default: `charset: "UTF-8"` makes "é" the byte E9 and turns characters
    /// outside Latin-1 into `&#NNNN;` entities, which is what Spool meets on many real stations.
    /// A listener sees the new title at its next metadata block after the audio queued before
    /// the change, within about two seconds.
    public func setTitle(_ title: String, mount: String, charset: String? = nil) throws {
        let mountQuery = "mount=\(Self.percentEncoded(Self.normalized(mount)))"
        var query = "\(mountQuery)&mode=updinfo&song=\(Self.percentEncoded(title))"
        if let charset { query += "&charset=\(Self.percentEncoded(charset))" }
        let response = try adminRequest("/admin/metadata?\(query)")
        let body = String(decoding: response.body, as: UTF8.self)
        guard response.status == 200, body.contains("<return>1</return>") else {
            throw RigError("icecast refused the title for \(mount): \(response.status) \(body)")
        }
    }

    /// How many listeners are connected to `mount` now (the rig's own probes left out), from the
    /// admin interface; throws when the mount has no source.
    public func listenerCount(mount: String) throws -> Int {
        let response = try adminRequest("/admin/listclients?mount=\(Self.percentEncoded(Self.normalized(mount)))")
        let body = String(decoding: response.body, as: UTF8.self)
        guard response.status == 200 else { throw RigError("no listener list for \(mount): \(body)") }
        return body.components(separatedBy: "<listener>").dropFirst()
            .filter { !$0.contains("<UserAgent>\(Self.rigUserAgent)</UserAgent>") }.count
    }

    /// The finished requests of the access log, oldest first, without the rig's own (its
    /// sources, probes and admin requests). Icecast writes a listener's line when its
    /// connection ends, and logs paths without their query.
    public func accessLog() -> [IcecastRequest] {
        let text = (try? String(contentsOf: logDirectory.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap(IcecastRequest.init(logLine:))
            .filter { $0.userAgent != Self.rigUserAgent }
    }

    /// The access log once it holds at least `count` entries; throws after `timeout` seconds.
    public func accessLog(atLeast count: Int, timeout: Double = 5) async throws -> [IcecastRequest] {
        try await awaitLogEntries(of: "icecast", atLeast: count, timeout: timeout) { accessLog() }
    }

    /// Stops the sources, then Icecast (also done when the server is released). Icecast takes
    /// about a second to shut down, logging the listeners still connected.
    public func stop() {
        for source in sources.withLock({ $0.compactMap(\.source) }) { source.stop() }
        process.stop(grace: 3)
    }

    deinit { stop() }

    private var errorLog: String {
        (try? String(contentsOf: logDirectory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    private func startSource(
        mount: String, name: String, genre: String, bitrate: Int, audio: [String], paced: Bool
    ) throws -> IcecastSource {
        let bitrates: Set = [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
        guard bitrates.contains(bitrate) else { throw RigError("\(bitrate) kbit/s is not an MP3 bit rate") }
        let mount = Self.normalized(mount)
        let headers = [
            "Content-Type": "audio/mpeg", "ice-name": name, "ice-genre": genre, "ice-public": "0",
            "ice-audio-info": "bitrate=\(bitrate);samplerate=44100;channels=2",
        ]
        let remaining = max(1, Int(stopsAt.timeIntervalSinceNow.rounded(.up)))
        let source = try IcecastSource(
            mount: mount, serverPort: port, password: sourcePassword, headers: headers,
            encoder: audio + [
                "!", "audioconvert", "!", "audio/x-raw,rate=44100,channels=2", "!",
                "lamemp3enc", "target=bitrate", "bitrate=\(bitrate)", "cbr=true",
            ], paced: paced, logDirectory: workspace.url, lifetime: remaining)
        sources.withLock { list in
            list.removeAll { $0.source == nil }
            list.append(WeakSource(source: source))
        }
        return source
    }

    private func adminRequest(_ path: String) throws -> HTTPResponse {
        let credentials = Data("admin:\(adminPassword)".utf8).base64EncodedString()
        return try HTTPConnection(port: port).request(
            path, headers: ["Authorization": "Basic \(credentials)", "User-Agent": Self.rigUserAgent])
    }

    /// Whether a listener of `mount` gets a 200 and a first audio byte, each within a second.
    private func streamsAudio(_ mount: String) -> Bool {
        guard let fd = try? Sockets.connectLoopback(port: port, receiveTimeout: 1) else { return false }
        defer { close(fd) }
        let request = "GET \(Self.normalized(mount)) HTTP/1.0\r\nUser-Agent: \(Self.rigUserAgent)\r\n\r\n"
        guard Sockets.sendAll(fd, Data(request.utf8)) else { return false }
        var received = Data()
        while let more = Sockets.receive(fd), !more.isEmpty {
            received += more
            if let head = received.range(of: Data("\r\n\r\n".utf8)), head.upperBound < received.endIndex {
                return received.starts(with: Data("HTTP/1.0 200".utf8))
            }
        }
        return false
    }

    private static func start(config: URL, port: UInt16, workspace: TemporaryDirectory, lifetime: Double) throws
        -> ChildProcess
    {
        let process = try ChildProcess(
            "icecast2", ["-c", config.path], logDirectory: workspace.url,
            selfStopAfter: max(1, Int(lifetime.rounded(.up))))
        var exited = false
        let ready = eventuallyBlocking(timeout: 10) {
            exited = !process.isRunning
            let response = try? HTTPConnection(port: port, receiveTimeout: 2).request(
                "/", headers: ["User-Agent": rigUserAgent])
            return exited || response?.header("Server")?.hasPrefix("Icecast") == true
        }
        guard ready, !exited else {
            process.stop(grace: 1)
            let log = (try? String(contentsOf: workspace.file("log/error.log"), encoding: .utf8)) ?? ""
            throw RigError("icecast on port \(port) did not start: \(process.standardError) \(log)")
        }
        return process
    }

    /// Writes the config: Icecast's defaults except the port, the passwords, a small burst and
    /// paths inside `workspace` (empty web and admin roots: the raw admin commands need no XSL).
    private static func writeConfig(
        port: UInt16, workspace: TemporaryDirectory, sourcePassword: String, adminPassword: String
    ) throws -> URL {
        let dir = workspace.path
        for name in ["log", "web", "admin"] {
            try FileManager.default.createDirectory(at: workspace.file(name), withIntermediateDirectories: true)
        }
        var security = "<chroot>0</chroot>"
        if geteuid() == 0 {
            // Icecast drops to nobody after binding, then opens its logs as that user.
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: dir)
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: workspace.file("log").path)
            security += "<changeowner><user>nobody</user><group>nogroup</group></changeowner>"
        }
        let config = """
            <icecast>
                <location>Spool tests</location>
                <admin>spool@localhost</admin>
                <hostname>127.0.0.1</hostname>
                <limits>
                    <clients>64</clients>
                    <sources>8</sources>
                    <queue-size>524288</queue-size>
                    <header-timeout>5</header-timeout>
                    <source-timeout>5</source-timeout>
                    <burst-size>\(burstSize)</burst-size>
                </limits>
                <authentication>
                    <source-password>\(sourcePassword)</source-password>
                    <relay-password>\(randomPassword())</relay-password>
                    <admin-user>admin</admin-user>
                    <admin-password>\(adminPassword)</admin-password>
                </authentication>
                <listen-socket>
                    <port>\(port)</port>
                    <bind-address>127.0.0.1</bind-address>
                </listen-socket>
                <fileserve>0</fileserve>
                <paths>
                    <basedir>\(dir)</basedir>
                    <logdir>\(dir)/log</logdir>
                    <webroot>\(dir)/web</webroot>
                    <adminroot>\(dir)/admin</adminroot>
                </paths>
                <logging>
                    <accesslog>access.log</accesslog>
                    <errorlog>error.log</errorlog>
                    <loglevel>3</loglevel>
                </logging>
                <security>\(security)</security>
            </icecast>
            """
        let url = workspace.file("icecast.xml")
        try config.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    private static func randomPassword() -> String {
        String(UUID().uuidString.filter { $0 != "-" }.prefix(20))
    }

    static func normalized(_ mount: String) -> String {
        mount.hasPrefix("/") ? mount : "/\(mount)"
    }

    private static func percentEncoded(_ text: String) -> String {
        let letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
        let unreserved = CharacterSet(charactersIn: letters + "0123456789-._~")
        return text.addingPercentEncoding(withAllowedCharacters: unreserved)!
    }

    private struct WeakSource: Sendable {
        weak var source: IcecastSource?
    }
}

/// One finished request from Icecast's access log (its combined log format).
public struct IcecastRequest: Sendable, Equatable {
    /// The request method, `GET` for a listener.
    public let method: String
    /// The path requested, without its query (Icecast logs none).
    public let path: String
    /// The status Icecast answered.
    public let status: Int
    /// The bytes Icecast counted as sent on the connection.
    public let bytesSent: Int
    /// The client's User-Agent; nil when it sent none.
    public let userAgent: String?
    /// How long the connection lasted, in whole seconds.
    public let seconds: Int

    /// Parses `127.0.0.1 - - [date] "GET /m HTTP/1.1" 200 1234 "referrer" "agent" 3`.
    init?(logLine line: Substring) {
        let parts = line.split(separator: "\"", omittingEmptySubsequences: false)
        guard parts.count == 7 else { return nil }
        let request = parts[1].split(separator: " ")
        let numbers = parts[2].split(separator: " ")
        guard request.count >= 2, numbers.count == 2, let status = Int(numbers[0]), let bytes = Int(numbers[1]),
            let seconds = Int(parts[6].trimmingCharacters(in: .whitespaces))
        else { return nil }
        method = String(request[0])
        path = String(request[1])
        self.status = status
        bytesSent = bytes
        userAgent = parts[5] == "-" ? nil : String(parts[5])
        self.seconds = seconds
    }
}

/// A source client on an ``IcecastServer`` mount: `gst-launch-1.0` encodes MP3 in real time
/// into a local socket and a thread relays it to Icecast after the rig's own `SOURCE` login.
/// GStreamer's `shout2send` would log in by itself, but libshout as it drives it announces no
/// bit rate, so listeners would get no `icy-br`. Stops on ``stop()`` and when released.
public final class IcecastSource: Sendable {
    /// The mount it feeds, with its leading slash.
    public let mount: String
    private let encoder: ChildProcess
    private let relay: SourceRelay

    init(
        mount: String, serverPort: UInt16, password: String, headers: [String: String], encoder elements: [String],
        paced: Bool, logDirectory: URL, lifetime: Int
    ) throws {
        self.mount = mount
        let listener = try Sockets.listenLoopback(port: 0, backlog: 1)
        let upstream: Int32
        do {
            upstream = try Self.logIn(mount: mount, port: serverPort, password: password, headers: headers)
        } catch {
            close(listener.fd)
            throw error
        }
        let relay = SourceRelay(listener: listener.fd, upstream: upstream)
        let sink = ["!", "tcpclientsink", "host=127.0.0.1", "port=\(listener.port)", "sync=\(paced)"]
        do {
            encoder = try ChildProcess(
                "gst-launch-1.0", ["-q"] + elements + sink, logDirectory: logDirectory, selfStopAfter: lifetime)
        } catch {
            relay.closeAll()
            throw error
        }
        self.relay = relay
        Thread { relay.run() }.start()
    }

    /// Whether audio still flows to Icecast (false once stopped or once a finite feed ended).
    public var isStreaming: Bool { relay.isOpen }

    /// What the encoder wrote to stderr, for failure messages.
    public var encoderErrors: String { encoder.standardError }

    /// Ends the source; Icecast then drops the mount and its listeners.
    public func stop() {
        relay.stop()
        encoder.stop(grace: 1)
    }

    deinit { stop() }

    /// Connects and logs in as Icecast's source clients do; returns the socket to send audio on.
    private static func logIn(mount: String, port: UInt16, password: String, headers: [String: String]) throws
        -> Int32
    {
        let credentials = Data("source:\(password)".utf8).base64EncodedString()
        let fields = headers.merging(["Authorization": "Basic \(credentials)"]) { $1 }
        guard !fields.values.contains(where: { $0.contains("\r") || $0.contains("\n") }) else {
            throw RigError("a source header holds a line break: \(headers)")
        }
        let request = fields.sorted { $0.key < $1.key }.reduce("SOURCE \(mount) HTTP/1.0\r\n") {
            $0 + "\($1.key): \($1.value)\r\n"
        }
        let fd = try Sockets.connectLoopback(port: port, receiveTimeout: 5)
        var answer = Data()
        if Sockets.sendAll(fd, Data((request + "\r\n").utf8)) {
            while answer.range(of: Data("\r\n\r\n".utf8)) == nil, let more = Sockets.receive(fd), !more.isEmpty {
                answer += more
            }
        }
        let head = String(decoding: answer, as: UTF8.self)
        guard head.hasPrefix("HTTP/1.0 200") || head.hasPrefix("HTTP/1.1 200") else {
            close(fd)
            throw RigError("icecast refused a source on \(mount): \(head)")
        }
        return fd
    }
}

/// Copies the encoder's bytes to Icecast on a thread of its own. The sockets are closed only
/// under the lock, so ``stop()`` never shuts down a descriptor number already reused.
private final class SourceRelay: Sendable {
    private struct Descriptors {
        var listener: Int32
        var encoder: Int32?
        var upstream: Int32
        var isOpen = true
    }

    private let descriptors: Mutex<Descriptors>

    init(listener: Int32, upstream: Int32) {
        descriptors = Mutex(Descriptors(listener: listener, upstream: upstream))
    }

    var isOpen: Bool { descriptors.withLock { $0.isOpen } }

    /// Accepts the encoder (giving it 10 s to start) and relays until either side ends.
    func run() {
        defer { closeAll() }
        let endpoints = descriptors.withLock { sockets -> (listener: Int32, upstream: Int32)? in
            sockets.isOpen ? (sockets.listener, sockets.upstream) : nil
        }
        guard let endpoints else { return }
        // A signal (a child process of the test ending: SIGCHLD) interrupts the wait and the
        // accept: they go on, or the encoder, already connected, would find its socket reset.
        let deadline = ContinuousClock.now + .seconds(10)
        var ready: Int32
        repeat {
            var waiting = pollfd(fd: endpoints.listener, events: Int16(POLLIN), revents: 0)
            let left = max(0, (deadline - .now) / .milliseconds(1))
            ready = poll(&waiting, 1, Int32(left.rounded(.up)))
        } while ready < 0 && errno == EINTR
        guard ready == 1 else { return }
        var encoder: Int32
        repeat { encoder = accept(endpoints.listener, nil, nil) } while encoder < 0 && errno == EINTR
        guard encoder >= 0 else { return }
        let accepted = descriptors.withLock { sockets in
            if sockets.isOpen { sockets.encoder = encoder } else { close(encoder) }
            return sockets.isOpen
        }
        guard accepted else { return }
        while let audio = Sockets.receive(encoder), !audio.isEmpty, Sockets.sendAll(endpoints.upstream, audio) {}
    }

    /// Wakes the relay thread, which then closes everything.
    func stop() {
        descriptors.withLock { sockets in
            guard sockets.isOpen else { return }
            for fd in [sockets.listener, sockets.upstream] + (sockets.encoder.map { [$0] } ?? []) {
                shutdown(fd, Int32(SHUT_RDWR))
            }
        }
    }

    /// Closes every socket; for the relay thread's end, or when it never started.
    func closeAll() {
        descriptors.withLock { sockets in
            guard sockets.isOpen else { return }
            sockets.isOpen = false
            for fd in [sockets.listener, sockets.upstream] + (sockets.encoder.map { [$0] } ?? []) { close(fd) }
        }
    }
}
