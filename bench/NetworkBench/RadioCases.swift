// Internet radio: a station on loopback (an endless 128 kbit/s MP3 in real time, ICY titles
// every 4 s of audio, `icy-metaint` 16 000), for spool and mpv alike: open → advancing and
// → first audio, whether each title is shown and how long after its audio is heard, what
// the player writes to its home while listening, and a drop of the connection.
import Foundation
import TestSupport

/// The cases `NetworkBench radio` runs.
enum RadioCases {
    /// The station's audio bytes per second.
    static let byteRate = 16_000

    static func run(_ runner: BenchRunner) async throws {
        let audio = withoutInfoFrame(try Data(contentsOf: try NetworkMedia.tone(.mp3CBR, seconds: 60)))
        let titles = (0..<30).map { index in
            TitleChange(atAudioByte: Int64((3 + 4 * index) * byteRate), "Artist \(index) - Song \(index)")
        }
        await runner.run([
            ("radio: open → advancing", "s", "≤ 0.3"),
            ("radio: open → first audio", "s", ""),
            ("radio: titles shown, of the 4 aired in 16 s", "", "4"),
            ("radio: title shown after its audio, earliest", "s", "≥ 0"),
            ("radio: title shown after its audio, latest", "s", "≤ 0.5"),
            ("radio: titles split into artist and title", "", "4"),
            ("radio: cache and state growth over 16 s of listening", "KiB", "≈ 0"),
        ]) { probe, _ in
            let station = try RadioStation(
                audio: audio, bytesPerSecond: byteRate, lifetime: 120,
                settings: RadioSettings(icyName: "Bench FM", titles: titles))
            defer { station.stop() }
            let offset = runner.rig.monitor!.offset
            let opened = try await probe.open(station.url)
            async let advancing = attempt { try await probe.awaitAdvancing(since: opened, timeout: 20) }
            let audible = await attempt {
                try await probe.awaitFirstAudio(since: opened, offset: offset, timeout: 20)
            }
            let started = await advancing
            guard let stream = station.requests().first(where: { $0.target == "/stream.mp3" && $0.status == 200 })
            else { return [started, audible, .failed("no request for the stream")] }
            // A title applies from the first metadata block at or past its byte; a CBR stream's
            // position p is byte start + p × rate.
            // The cache and the state store from the first audio on (the home also holds the
            // daemon's log; the stores are created as the daemon starts and the track opens).
            let folders = ["cache", "state"].map { probe.player.home.file($0) }
            let before = folders.map(Self.bytes(under:)).reduce(0, +)
            var shown: [(index: Int, delay: Double, split: Bool)] = []
            let listening = Double(ProcessInfo.processInfo.environment["RADIO_SECONDS"] ?? "") ?? 16
            let deadline = ContinuousClock.now + .seconds(listening)
            while ContinuousClock.now < deadline {
                let track = try await probe.remote.metadata()
                let position = Double(try await probe.remote.positionMicroseconds()) / 1e6
                if let title = track.title, let range = title.range(of: "Song "),
                    let index = Int(title[range.upperBound...]), index != shown.last?.index
                {
                    let byte = Int64((3 + 4 * index) * byteRate) - stream.startAudioByte
                    let block = ((byte + 15_999) / 16_000) * 16_000
                    if byte > 0 {
                        shown.append(
                            (index, position - Double(block) / Double(byteRate), track.artists == ["Artist \(index)"]))
                    }
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            let written = folders.map(Self.bytes(under:)).reduce(0, +) - before
            if ProcessInfo.processInfo.environment["NETBENCH_FILES"] != nil {
                for folder in folders {
                    for case let file as URL in FileManager.default.enumerator(
                        at: folder, includingPropertiesForKeys: [.fileSizeKey]) ?? FileManager.DirectoryEnumerator()
                    {
                        let size = (try? file.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0
                        FileHandle.standardError.write(Data("\(file.path): \(size)\n".utf8))
                    }
                }
            }
            return [
                started, audible, .value(Double(shown.count)),
                shown.map { .value($0.delay) }.min { Self.seconds($0) < Self.seconds($1) } ?? .failed("no title"),
                shown.map { .value($0.delay) }.max { Self.seconds($0) < Self.seconds($1) } ?? .failed("no title"),
                .value(Double(shown.filter(\.split).count)), .value(Double(written) / 1024),
            ]
        }
        try await icecast(runner)
        await runner.run([
            ("radio: the connection drops after 3 s → still playing at 8 s", "", "yes"),
            ("radio: longest silence over the drop", "s", "≤ 1"),
        ]) { probe, _ in
            let station = try RadioStation(
                audio: audio, bytesPerSecond: byteRate, lifetime: 120,
                settings: RadioSettings(icyName: "Bench FM", burstBytes: 4 * byteRate))
            defer { station.stop() }
            station.setFaults(RadioFaults(dropAfterSeconds: 3))
            let monitor = runner.rig.monitor!
            let opened = try await probe.open(station.url)
            _ = try await probe.awaitAdvancing(since: opened, timeout: 20)
            let offset = monitor.offset
            try await Task.sleep(for: .seconds(8))
            let playing = try await probe.remote.playbackStatus() == "Playing"
            let before = Double(try await probe.remote.positionMicroseconds()) / 1e6
            try await Task.sleep(for: .milliseconds(500))
            let advancing = Double(try await probe.remote.positionMicroseconds()) / 1e6 > before
            let gap = await attempt { try await Self.longestSilence(monitor, after: offset) }
            return [.value(playing && advancing ? 1 : 0), gap]
        }
    }

    /// A real Icecast 2 with a real source (lamemp3enc, 128 kbit/s): open → advancing, and how
    /// long a title set on the server takes to show in MPRIS (its audio's own delay unknown
    /// here: Icecast's burst and the player's buffer both lie between), and whether it splits.
    static func icecast(_ runner: BenchRunner) async throws {
        await runner.run([
            ("radio, Icecast 2: open → advancing", "s", "≤ 0.3"),
            ("radio, Icecast 2: the server's first audio byte to a new listener (median of 5)", "s", ""),
            ("radio, Icecast 2: title set → shown in MPRIS (median of 3)", "s", ""),
            ("radio, Icecast 2: titles split into artist and title, of 3", "", "3"),
        ]) { probe, _ in
            let server = try IcecastServer(lifetime: 120)
            defer { server.stop() }
            let source = try server.startSource(mount: "/bench.mp3", name: "Bench Icecast", genre: "Test")
            defer { source.stop() }
            try await server.waitUntilMounted("/bench.mp3")
            // What no player can go below: when Icecast sends a new listener its first audio byte
            // (it answers the head at once, and the burst when its source thread next runs).
            var firstBytes: [Double] = []
            for _ in 0..<5 {
                let answer = try runCommand(
                    "python3", ["bench/lib/first_body.py", server.streamURL(mount: "/bench.mp3").absoluteString],
                    timeout: 5)
                if let body = answer.stdout.split(separator: " ").last.flatMap({
                    Double($0.trimmingCharacters(in: .whitespacesAndNewlines))
                }), body > 0 {
                    firstBytes.append(body)
                }
            }
            let serverFirstByte: Outcome =
                firstBytes.count == 5 ? .value(firstBytes.sorted()[2]) : .failed("first body bytes: \(firstBytes)")
            let opened = try await probe.open(server.streamURL(mount: "/bench.mp3"))
            let started = await attempt { try await probe.awaitAdvancing(since: opened, timeout: 20) }
            var delays: [Double] = []
            var split = 0
            for index in 1...3 {
                let set = ContinuousClock.now
                try server.setTitle("Singer \(index) - Tune \(index)", mount: "/bench.mp3")
                while ContinuousClock.now - set < .seconds(10) {
                    let track = try await probe.remote.metadata()
                    if track.title?.hasSuffix("Tune \(index)") == true {
                        delays.append(TestSupport.seconds(from: set))
                        if track.title == "Tune \(index)", track.artists == ["Singer \(index)"] { split += 1 }
                        break
                    }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            let median: Outcome =
                delays.count == 3 ? .value(delays.sorted()[1]) : .failed("\(delays.count) of 3 titles shown")
            return [started, serverFirstByte, median, .value(Double(split))]
        }
    }

    /// The MP3's frames without its ID3v2 tag and its first frame, the encoder's Info frame: a
    /// parser drops both (they hold no audio), so in a station looping the file their bytes would
    /// shift every later frame's time against the bytes, and the delays measured here by as much.
    static func withoutInfoFrame(_ mp3: Data) -> Data {
        var bytes = [UInt8](mp3)
        if bytes.count > 10, bytes[0] == 0x49, bytes[1] == 0x44, bytes[2] == 0x33 {
            let size = bytes[6...9].reduce(0) { $0 << 7 | Int($1 & 0x7F) }
            bytes = Array(bytes.dropFirst(10 + size))
        }
        guard bytes.count > 2_000, bytes[0] == 0xFF, bytes[1] & 0xE0 == 0xE0 else { return mp3 }
        for offset in 100..<1_000 where bytes[offset] == 0xFF && bytes[offset + 1] & 0xE0 == 0xE0 {
            return Data(bytes[offset...])
        }
        return mp3
    }

    /// Bytes in every regular file under `folder`.
    static func bytes(under folder: URL) -> Int {
        var total = 0
        let keys: [URLResourceKey] = [.fileSizeKey, .isRegularFileKey]
        for case let file as URL in FileManager.default.enumerator(at: folder, includingPropertiesForKeys: keys)
            ?? FileManager.DirectoryEnumerator()
        {
            guard let values = try? file.resourceValues(forKeys: Set(keys)), values.isRegularFile == true else {
                continue
            }
            total += values.fileSize ?? 0
        }
        return total
    }

    /// The longest run of silence in the recording after `offset`, in seconds.
    static func longestSilence(_ monitor: AudioMonitor, after offset: Int) async throws -> Double {
        var longest = 0.0
        for threshold in stride(from: 0.1, through: 3.0, by: 0.1) {
            do {
                _ = try await monitor.silence(after: offset, lasting: threshold, timeout: 0.2)
                longest = threshold
            } catch {
                break
            }
        }
        return longest
    }

    private static func seconds(_ outcome: Outcome) -> Double {
        if case .value(let value) = outcome { return value }
        return .infinity
    }
}
