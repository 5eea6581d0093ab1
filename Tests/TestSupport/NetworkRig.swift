import Foundation
import Synchronization

// A rig for measuring a real player (the `spool daemon`, or mpv with mpv-mpris) over MPRIS
// against the fault origin under network conditions: a link-wide bandwidth cap, latency,
// chunked bodies, no Range, wrong lengths. Used by bench/NetworkBench and
// Tests/EndToEndTests/NetworkConditionsTests.
//
// TestSupport does not depend on DBusKit, so the rig reaches the player through
// `MPRISRemote`, which the bench and the tests implement with DBusKit (a few lines each).
//
// Signals measured:
// - first audio: the first non-silent sample in a recording of the private PulseAudio
//   server's null-sink monitor (parec), dated by how much was recorded after it (the
//   recording's own clock), so the poll interval does not add to it; parec's 20 ms capture
//   latency does (±20 ms). Needs the rig's PulseServer and a player that plays into it.
// - advancing: MPRIS Position polled every 10 ms; the first read greater than the one
//   before it (inside the target window, for a seek) dates it.

/// The MPRIS calls the rig needs, implemented by the caller with its D-Bus library.
public protocol MPRISRemote: Sendable {
    /// Whether the player owns its bus name.
    func isOnBus() async throws -> Bool
    /// Player.OpenUri.
    func openURI(_ uri: String) async throws
    /// Player.SetPosition.
    func setPosition(trackID: String, microseconds: Int64) async throws
    /// Player.Next, Player.Stop, Player.Play, Player.Pause.
    func next() async throws
    func stop() async throws
    func play() async throws
    func pause() async throws
    /// Player.Position in microseconds.
    func positionMicroseconds() async throws -> Int64
    /// Player.PlaybackStatus.
    func playbackStatus() async throws -> String
    /// Player.Metadata: `mpris:trackid`, `xesam:url`, `mpris:length` (µs), `xesam:title`, `xesam:artist`.
    func metadata() async throws -> MPRISTrack
}

/// What Metadata says about the current track.
public struct MPRISTrack: Sendable, Equatable {
    public var trackID: String?
    public var url: String?
    public var lengthMicroseconds: Int64?
    /// `xesam:title` and `xesam:artist`.
    public var title: String?
    public var artists: [String]
    public init(
        trackID: String?, url: String?, lengthMicroseconds: Int64?, title: String? = nil, artists: [String] = []
    ) {
        self.trackID = trackID
        self.url = url
        self.lengthMicroseconds = lengthMicroseconds
        self.title = title
        self.artists = artists
    }
    /// The length in seconds, when known.
    public var length: Double? { lengthMicroseconds.map { Double($0) / 1e6 } }
}

/// Seconds from `start` to `end`.
public func seconds(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant = .now) -> Double {
    let duration = end - start
    return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// An origin, a private bus and (optionally) a private PulseAudio server recording its output;
/// players are started on the bus with their own home folders. Every server stops by itself
/// (`lifetime` seconds at most).
public final class NetworkRig: Sendable {
    /// The fault origin (link cap set with `origin.setLinkRate`).
    public let origin: FaultOrigin
    /// The private session bus the players own their names on.
    public let bus: PrivateBus
    /// The private sound server, when the rig records output.
    public let pulse: PulseServer?
    /// The recording of the sound server's output, when there is one.
    public let monitor: AudioMonitor?
    /// Media and playlists written by the rig or its user.
    public let files: TemporaryDirectory

    /// Starts the origin (with a link-wide cap of `linkRate` bytes per second, nil for none),
    /// the bus and, when `recordAudio`, a PulseAudio server whose output is recorded.
    public init(linkRate: Int? = nil, recordAudio: Bool = false, lifetime: Int = 300) throws {
        origin = try FaultOrigin(lifetime: Double(lifetime))
        origin.setLinkRate(linkRate)
        bus = try PrivateBus(selfStopAfter: lifetime)
        files = try TemporaryDirectory(prefix: "spool-netrig")
        if recordAudio {
            let pulse = try PulseServer(selfStopAfter: lifetime)
            self.pulse = pulse
            monitor = try AudioMonitor(pulse: pulse, in: files, lifetime: lifetime)
        } else {
            pulse = nil
            monitor = nil
        }
    }

    /// Serves `file`'s bytes at `/name` under `faults`, with `headers` (stale at once unless
    /// said otherwise); returns its URL.
    @discardableResult
    public func serve(
        _ file: URL, as name: String? = nil, faults: OriginFaults = OriginFaults(),
        headers: [String: String] = OriginResource.staleAtOnce
    ) throws -> URL {
        let name = name ?? file.lastPathComponent
        origin.serve(
            OriginResource(try Data(contentsOf: file), contentType: Self.mimeType(file), headers: headers),
            at: "/" + name, faults: faults)
        return origin.url(for: name)
    }

    /// Writes a local M3U playlist of `urls` and returns its file URL.
    public func playlist(_ urls: [URL], name: String = "list.m3u") throws -> URL {
        let file = files.file(name)
        try Data((["#EXTM3U"] + urls.map(\.absoluteString)).joined(separator: "\n").appending("\n").utf8).write(
            to: file)
        return file
    }

    /// Starts `spool daemon` on the bus with its XDG folders in `home` (a fresh one by default).
    /// - Parameters:
    ///   - audioSink: the `--audio-sink`; nil plays into the rig's PulseAudio server when there
    ///     is one (`pulsesink`), else into `fakesink sync=true` (a null sink in real time).
    ///   - logLevel: `SPOOL_LOG` (`debug`, `trace`), nil for the default.
    public func startSpool(
        executable: String, home: TemporaryDirectory? = nil, audioSink: String? = nil, logLevel: String? = "debug",
        extraArguments: [String] = [], extraEnvironment: [String: String] = [:], lifetime: Int = 240
    ) throws -> PlayerProcess {
        let home = try home ?? TemporaryDirectory(prefix: "spool-netrig-home")
        var launch = SpoolDaemonLaunch(
            busEnvironment: bus.environment, home: home.url, logDirectory: home.url, lifetime: lifetime,
            audioSink: audioSink ?? (pulse != nil ? "pulsesink" : "fakesink sync=true"), logLevel: logLevel)
        launch.extraArguments = extraArguments
        // No ALSA: the sound goes to the rig's PulseAudio server, or nowhere.
        launch.extraEnvironment = ["ALSA_CONFIG_PATH": "/dev/null"].merging(
            pulse.map { ["PULSE_SERVER": $0.server] } ?? [:]
        ) { _, new in new }.merging(extraEnvironment) { _, new in new }
        let process = try launch.start(executable: executable)
        return PlayerProcess(kind: "spool", busName: "org.mpris.MediaPlayer2.spool", process: process, home: home)
    }

    /// Where Debian's mpv-mpris put its plugin, if installed.
    public static func mpvMPRISPlugin() -> String? {
        ["/usr/lib/mpv-mpris/mpris.so", "/etc/mpv/scripts/mpris.so", "/usr/lib/x86_64-linux-gnu/mpv/scripts/mpris.so"]
            .first { FileManager.default.fileExists(atPath: $0) }
    }

    /// Starts mpv idle with the MPRIS plugin on the bus (it owns `org.mpris.MediaPlayer2.mpv`),
    /// its default cache settings, no user configuration, playing into the rig's PulseAudio server
    /// when there is one, else into the null output.
    public func startMPV(plugin: String, lifetime: Int = 240) throws -> PlayerProcess {
        let home = try TemporaryDirectory(prefix: "spool-netrig-mpv")
        var environment = bus.environment
        if let pulse { environment["PULSE_SERVER"] = pulse.server }
        environment["HOME"] = home.path
        environment["XDG_CONFIG_HOME"] = home.file("config").path
        environment["XDG_CACHE_HOME"] = home.file("cache").path
        let process = try ChildProcess(
            "mpv",
            [
                "--no-config", "--no-video", "--idle=yes", "--no-terminal", "--script=\(plugin)",
                "--ao=\(pulse != nil ? "pulse" : "null")", "--log-file=\(home.file("mpv.log").path)",
            ],
            environment: environment, logDirectory: home.url, selfStopAfter: lifetime)
        return PlayerProcess(kind: "mpv", busName: "org.mpris.MediaPlayer2.mpv", process: process, home: home)
    }

    static func mimeType(_ file: URL) -> String {
        switch file.pathExtension.lowercased() {
        case "mp3": "audio/mpeg"
        case "flac": "audio/flac"
        case "ogg", "opus": "audio/ogg"
        case "m4a": "audio/mp4"
        case "wav": "audio/wav"
        default: "application/octet-stream"
        }
    }
}

/// A player the rig started.
public final class PlayerProcess: Sendable {
    /// `spool` or `mpv`.
    public let kind: String
    /// The MPRIS bus name it owns.
    public let busName: String
    /// The process.
    public let process: ChildProcess
    /// Its home (XDG folders; logs).
    public let home: TemporaryDirectory

    init(kind: String, busName: String, process: ChildProcess, home: TemporaryDirectory) {
        self.kind = kind
        self.busName = busName
        self.process = process
        self.home = home
    }

    /// Its log so far (stderr; mpv's log file).
    public var log: String {
        let mpvLog = (try? String(contentsOf: home.file("mpv.log"), encoding: .utf8)) ?? ""
        return process.standardError + mpvLog
    }

    /// The last `lines` lines of its log.
    public func logTail(_ lines: Int = 40) -> String {
        log.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// Stops it (SIGTERM, then SIGKILL).
    public func stop() { process.stop(grace: 3) }

    deinit { process.stop(grace: 3) }
}

/// Measurements on one player through its MPRIS remote. Every wait polls the other process
/// (Position every 10 ms) or the recording; none sleeps a fixed time.
public struct PlayerProbe: Sendable {
    public let remote: any MPRISRemote
    public let player: PlayerProcess
    public let rig: NetworkRig
    /// The poll interval for Position.
    public var interval = Duration.milliseconds(10)

    public init(remote: any MPRISRemote, player: PlayerProcess, rig: NetworkRig) {
        self.remote = remote
        self.player = player
        self.rig = rig
    }

    /// Waits until the player owns its bus name.
    public func waitUntilReady(timeout: Double = 10) async throws {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while ContinuousClock.now < deadline {
            if try await remote.isOnBus() { return }
            guard player.process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw RigError("\(player.kind) never took \(player.busName); its log:\n\(player.logTail())")
    }

    /// Calls OpenUri; returns the instant just before the call.
    @discardableResult
    public func open(_ url: URL) async throws -> ContinuousClock.Instant {
        let start = ContinuousClock.now
        try await remote.openURI(url.absoluteString)
        return start
    }

    /// Seconds from `since` until Position advances: the first read greater than the read
    /// before it, both within `tolerance` of `target` when one is given, on a track whose
    /// URL ends with `trackURLSuffix` when one is given. Throws after `timeout` seconds.
    public func awaitAdvancing(
        since: ContinuousClock.Instant, near target: Double? = nil, tolerance: Double = 1,
        trackURLSuffix: String? = nil, timeout: Double = 10
    ) async throws -> Double {
        let deadline = ContinuousClock.now + .seconds(timeout)
        var previous: (position: Double, asked: ContinuousClock.Instant)?
        var seen: [Double] = []
        while ContinuousClock.now < deadline {
            if let suffix = trackURLSuffix, !((try await remote.metadata().url ?? "").hasSuffix(suffix)) {
                previous = nil
            } else {
                let asked = ContinuousClock.now
                let position = Double(try await remote.positionMicroseconds()) / 1e6
                let read = ContinuousClock.now
                if seen.last != position { seen.append(position) }
                let inWindow = { (value: Double) in target.map { abs(value - $0) <= tolerance } ?? true }
                if let previous, position > previous.position + 0.0005, inWindow(previous.position) {
                    // Advancing from near the target: the second read near it too, or no further
                    // past the first than can play between them: from when the first was asked
                    // (its value may be that old) to when the second came back (a loaded machine
                    // may read seconds apart; a seek that lands elsewhere jumps further).
                    let played = seconds(from: previous.asked, to: read) * 1.1 + 0.1
                    if inWindow(position) || position - previous.position <= played {
                        return seconds(from: since, to: read)
                    }
                }
                previous = (position, asked)
            }
            try await Task.sleep(for: interval)
        }
        let goal = target.map { "to advance within \(tolerance) s of \(String(format: "%.2f", $0)) s" } ?? "to advance"
        throw RigError(
            "\(player.kind): Position did not \(goal)\(trackURLSuffix.map { " on \($0)" } ?? "") within \(timeout) s; "
                + "positions read: \(seen.prefix(6).map { String(format: "%.2f", $0) }) … "
                + "\(seen.dropFirst(6).suffix(12).map { String(format: "%.2f", $0) })")
    }

    /// Seconds from `since` until the first non-silent sample reached the sound server,
    /// counting only audio recorded after `offset` (take `rig.monitor!.offset` before opening).
    public func awaitFirstAudio(since: ContinuousClock.Instant, offset: Int, timeout: Double = 10) async throws
        -> Double
    {
        guard let monitor = rig.monitor else { throw RigError("the rig records no audio") }
        return try await monitor.firstSound(after: offset, since: since, timeout: timeout)
    }

    /// The current track's id and length (waiting up to `timeout` for the id, and for the
    /// length too when `needsLength`).
    public func currentTrack(needsLength: Bool = true, timeout: Double = 10) async throws -> MPRISTrack {
        let deadline = ContinuousClock.now + .seconds(timeout)
        var track = try await remote.metadata()
        while track.trackID == nil || (needsLength && (track.lengthMicroseconds ?? 0) <= 0) {
            guard ContinuousClock.now < deadline else {
                throw RigError("\(player.kind): no track id and length in Metadata: \(track)")
            }
            try await Task.sleep(for: interval)
            track = try await remote.metadata()
        }
        return track
    }

    /// SetPosition to `target` seconds on the current track; returns the instant just before the call.
    @discardableResult
    public func setPosition(_ target: Double, track: MPRISTrack) async throws -> ContinuousClock.Instant {
        let start = ContinuousClock.now
        try await remote.setPosition(trackID: track.trackID ?? "/", microseconds: Int64(target * 1e6))
        return start
    }

    /// Waits until PlaybackStatus is `status`; seconds from `since`.
    public func awaitStatus(_ status: String, since: ContinuousClock.Instant = .now, timeout: Double = 10) async throws
        -> Double
    {
        let deadline = ContinuousClock.now + .seconds(timeout)
        var last = ""
        while ContinuousClock.now < deadline {
            last = try await remote.playbackStatus()
            if last == status { return seconds(from: since) }
            try await Task.sleep(for: interval)
        }
        throw RigError("\(player.kind): PlaybackStatus stayed \(last), expected \(status)")
    }

    /// Waits until the current track's URL ends with `suffix`; seconds from `since`.
    public func awaitTrack(urlSuffix suffix: String, since: ContinuousClock.Instant = .now, timeout: Double = 10)
        async throws -> Double
    {
        let deadline = ContinuousClock.now + .seconds(timeout)
        var last: String?
        while ContinuousClock.now < deadline {
            last = try await remote.metadata().url
            if last?.hasSuffix(suffix) == true { return seconds(from: since) }
            try await Task.sleep(for: interval)
        }
        throw RigError("\(player.kind): the track stayed \(last ?? "none"), expected …\(suffix)")
    }

    /// Follows a track to its end and the next one's start: seconds from the last read on which
    /// `current`'s Position advanced to the first on which `next`'s advanced (the audible gap,
    /// ±2 polls). Throws when either does not happen within `timeout`.
    public func awaitHandOver(from current: String, to next: String, timeout: Double) async throws -> Double {
        let deadline = ContinuousClock.now + .seconds(timeout)
        var lastAdvance: ContinuousClock.Instant?
        var previous: (url: String, position: Double)?
        var trail: [String] = []
        while ContinuousClock.now < deadline {
            let url = try await remote.metadata().url ?? ""
            let position = Double(try await remote.positionMicroseconds()) / 1e6
            let read = ContinuousClock.now
            if let previous, previous.url == url, position > previous.position + 0.0005 {
                if url.hasSuffix(current) { lastAdvance = read }
                if url.hasSuffix(next) {
                    guard let lastAdvance else {
                        throw RigError(
                            "\(player.kind): \(next) advanced before \(current) did; reads: \(trail.suffix(10))")
                    }
                    return seconds(from: lastAdvance, to: read)
                }
            }
            let entry = "\(URL(string: url)?.lastPathComponent ?? url)@\(String(format: "%.2f", position))"
            if trail.last != entry { trail.append(entry) }
            previous = (url, position)
            try await Task.sleep(for: interval)
        }
        throw RigError(
            "\(player.kind): no hand-over from \(current) to \(next) within \(timeout) s; reads: \(trail.suffix(10))")
    }
}

/// The recording of a PulseAudio server's output, read while it grows.
public final class AudioMonitor: Sendable {
    /// Bytes per second of the recording (S16LE stereo at 44.1 kHz).
    public static let byteRate = PulseServer.sampleRate * 4
    private let recorder: ChildProcess

    init(pulse: PulseServer, in directory: TemporaryDirectory, lifetime: Int) throws {
        recorder = try ChildProcess(
            "parec",
            [
                "--server=\(pulse.server)", "--device=\(PulseServer.sinkName).monitor", "--raw", "--format=s16le",
                "--rate=\(PulseServer.sampleRate)", "--channels=2", "--latency-msec=5",
            ],
            logDirectory: directory.url, selfStopAfter: lifetime)
        let connected = try eventuallyBlocking(timeout: 10, interval: 0.01) {
            try pulse.pactl("list", "short", "source-outputs").contains("\t")
        }
        guard connected else { throw RigError("parec never connected to \(pulse.server)") }
    }

    /// Bytes recorded so far.
    public var offset: Int {
        ((try? FileManager.default.attributesOfItem(atPath: recorder.stdoutURL.path)[.size]) as? Int) ?? 0
    }

    /// Seconds from `since` to the first sample after byte `offset` whose magnitude exceeds
    /// `threshold` (of 32767; 64 ≈ −54 dBFS), dated by the audio recorded after it.
    public func firstSound(after offset: Int, since: ContinuousClock.Instant, threshold: Int16 = 64, timeout: Double)
        async throws -> Double
    {
        let hit = try await scan(after: offset, timeout: timeout, what: "no sound") { sample, _ in
            sample > threshold || sample < -threshold
        }
        return seconds(from: since, to: hit.observed) - Double(hit.recordedAfter) / Double(Self.byteRate)
    }

    /// The byte offset after `offset` at which the recording has been silent (every sample
    /// within `threshold`) for `duration` seconds: where the audio that was playing has ended.
    public func silence(after offset: Int, lasting duration: Double, threshold: Int16 = 64, timeout: Double)
        async throws -> Int
    {
        let needed = Int(duration * Double(Self.byteRate))
        var silentSince: Int?
        return try await scan(after: offset, timeout: timeout, what: "no silence of \(duration) s") { sample, at in
            guard sample <= threshold && sample >= -threshold else {
                silentSince = nil
                return false
            }
            let start = silentSince ?? at
            silentSince = start
            return at + 2 - start >= needed
        }.offset + 2
    }

    /// Reads the recording from byte `offset` as it grows, sample by sample (S16LE), until
    /// `stop(sample, its byte offset)` holds; throws "`what` within `timeout` s" otherwise.
    /// Returns that sample's offset, how many bytes were recorded after it when it was read, and
    /// when it was read.
    private func scan(
        after offset: Int, timeout: Double, what: String, _ stop: (Int16, Int) -> Bool
    ) async throws -> (offset: Int, recordedAfter: Int, observed: ContinuousClock.Instant) {
        let handle = try FileHandle(forReadingFrom: recorder.stdoutURL)
        defer { try? handle.close() }
        var position = offset - offset % 4
        try handle.seek(toOffset: UInt64(position))
        let deadline = ContinuousClock.now + .seconds(timeout)
        var pending = Data()
        while ContinuousClock.now < deadline {
            let chunk = try handle.readToEnd() ?? Data()
            let observed = ContinuousClock.now
            pending += chunk
            let usable = pending.count - pending.count % 2
            let hit: Int? = pending.withUnsafeBytes { raw in
                var index = 0
                while index + 1 < usable {
                    if stop(raw.loadUnaligned(fromByteOffset: index, as: Int16.self), position + index) { return index }
                    index += 2
                }
                return nil
            }
            if let hit { return (position + hit, pending.count - hit, observed) }
            position += usable
            pending = Data(pending.suffix(from: pending.startIndex + usable))
            try await Task.sleep(for: .milliseconds(5))
        }
        throw RigError("\(what) in the recording within \(timeout) s")
    }
}

/// Long audio files for network tests, generated once per process with GStreamer
/// (a steady sine, 44.1 kHz stereo; the encoders and settings of `Fixtures`).
public enum NetworkMedia {
    private static let made = Mutex<[String: URL]>([:])
    private static let directory = Mutex<TemporaryDirectory?>(nil)

    /// A `seconds`-long tone in `format` (for MP3 CBR, `bitrate` kbps); cached per process.
    public static func tone(_ format: FixtureFormat, seconds: Int, bitrate: Int = 128, frequency: Int = 440) throws
        -> URL
    {
        try encoded(format, key: "\(format.rawValue)-\(seconds)s-\(bitrate)k-\(frequency)") { file, _ in
            let frames = 1024
            return [
                "-q", "audiotestsrc", "wave=sine", "freq=\(frequency)", "num-buffers=\(seconds * 44_100 / frames)",
                "samplesperbuffer=\(frames)", "!", "audio/x-raw,rate=44100,channels=2", "!", "audioconvert", "!",
            ] + encoder(format, bitrate: bitrate) + ["!", "filesink", "location=\(file.path)"]
        }
    }

    /// `silent` seconds of digital silence, then `sounding` seconds of a tone, in `format`:
    /// where playback lands after a seek into the tone shows as the first sound after it in a
    /// recording. Cached per process.
    public static func silenceThenTone(_ format: FixtureFormat, silent: Int, sounding: Int, frequency: Int = 440)
        throws -> URL
    {
        let file = try encoded(format, key: "\(format.rawValue)-silent\(silent)s-tone\(sounding)s-\(frequency)") {
            file, folder in
            // Raw PCM first (S16LE stereo at 44.1 kHz): zeros, then the tone at a quarter of full scale.
            let raw = folder.file("\(file.lastPathComponent).raw")
            var pcm = Data(count: silent * 44_100 * 4)
            pcm.reserveCapacity((silent + sounding) * 44_100 * 4)
            for index in 0..<(sounding * 44_100) {
                let value = Int16(8000 * sin(2 * Double.pi * Double(frequency) * Double(index) / 44_100))
                withUnsafeBytes(of: value.littleEndian) { sample in
                    pcm.append(contentsOf: sample)  // left
                    pcm.append(contentsOf: sample)  // right
                }
            }
            try pcm.write(to: raw)
            return [
                "-q", "filesrc", "location=\(raw.path)", "!", "rawaudioparse", "use-sink-caps=false", "format=pcm",
                "pcm-format=s16le", "sample-rate=44100", "num-channels=2", "!", "audioconvert", "!",
            ] + encoder(format, bitrate: 128) + ["!", "filesink", "location=\(file.path)"]
        }
        try? FileManager.default.removeItem(atPath: file.path + ".raw")  // tens of MB of PCM
        return file
    }

    /// The file `key` in `format`, made once per process by `gst-launch-1.0` with the arguments
    /// `arguments(file, folder)` returns (it may write inputs into the folder first).
    private static func encoded(
        _ format: FixtureFormat, key: String, _ arguments: (URL, TemporaryDirectory) throws -> [String]
    ) throws -> URL {
        if let url = made.withLock({ $0[key] }) { return url }
        let folder = try directory.withLock { folder in
            if let folder { return folder }
            let created = try TemporaryDirectory(prefix: "spool-netmedia")
            folder = created
            return created
        }
        let file = folder.file("\(key).\(format.fileExtension)")
        let result = try runCommand("gst-launch-1.0", try arguments(file, folder), timeout: 120)
        guard result.status == 0 else { throw RigError("generating \(key) failed: \(result.stderr)") }
        made.withLock { $0[key] = file }
        return file
    }

    /// Seconds of `format` that make a file of about `bytes` (from a 4-s probe's size).
    public static func seconds(toFill bytes: Int, _ format: FixtureFormat) throws -> Int {
        let probe = try tone(format, seconds: 4, frequency: 523)
        let size = try Data(contentsOf: probe).count
        return max(1, Int((Double(bytes) / (Double(size) / 4)).rounded()))
    }

    private static func encoder(_ format: FixtureFormat, bitrate: Int) -> [String] {
        switch format {
        case .mp3CBR:
            ["lamemp3enc", "target=bitrate", "bitrate=\(bitrate)", "cbr=true", "!", "xingmux", "!", "id3v2mux"]
        case .mp3VBR: ["lamemp3enc", "target=quality", "quality=4", "!", "xingmux", "!", "id3v2mux"]
        case .flac: ["flacenc"]
        case .oggVorbis: ["vorbisenc", "!", "oggmux"]
        case .oggOpus: ["audioresample", "!", "opusenc", "!", "oggmux"]
        case .m4aFaststart: ["avenc_aac", "!", "mp4mux", "faststart=true"]
        case .m4aMoovAtEnd: ["avenc_aac", "!", "mp4mux", "faststart=false"]
        case .wav: ["wavenc"]
        }
    }
}

/// Checks on what the origin sent for one file.
public struct OriginReport: Sendable, CustomStringConvertible {
    /// The responses that carried the file's bytes.
    public let transfers: [OriginTransfer]
    /// The file's size.
    public let size: Int

    /// The report for `path` on `origin` now.
    public init(_ origin: FaultOrigin, path: String, size: Int) {
        transfers = origin.transfers(of: path)
        self.size = size
    }

    /// Body bytes sent in all.
    public var sent: Int { TransferAccounting.sent(transfers) }
    /// Bytes sent more than once across requests.
    public var sentTwice: Int { TransferAccounting.sentTwice(transfers) }
    /// Bytes sent beyond the file's size (sent − size, at least 0).
    public var beyondFileSize: Int { TransferAccounting.beyondFileSize(transfers, size: size) }
    /// The end of the contiguous bytes sent from byte 0 (what a sequential download reached).
    public var contiguousEnd: Int {
        var end = 0
        for range in transfers.map(\.sentBytes).sorted(by: { $0.lowerBound < $1.lowerBound })
        where range.lowerBound <= end {
            end = max(end, range.upperBound)
        }
        return end
    }
    /// Whether some response sent `byte` already.
    public func hasSent(_ byte: Int) -> Bool { transfers.contains { $0.sentBytes.contains(byte) } }

    /// The first request that arrived after `instant` for the bytes at `byte`: one that asks for
    /// `byte` starting at most `slack` bytes before it (a request from far before the byte is a
    /// restart, not a seek), or one starting within `slack` after it (`byte` is an estimate:
    /// a fraction of the file, while demuxers seek to a frame, block or sample boundary).
    public func firstRequest(for byte: Int, after instant: ContinuousClock.Instant, slack: Int) -> OriginTransfer? {
        transfers.first { transfer in
            let start = transfer.plannedBytes.lowerBound
            return transfer.arrived >= instant && start >= byte - slack
                && (transfer.plannedBytes.contains(byte) || start <= byte + slack)
        }
    }

    public var description: String {
        "\(transfers.count) responses, \(sent) bytes sent of \(size), \(sentTwice) twice: "
            + transfers.map(\.description).joined(separator: "; ")
    }
}
