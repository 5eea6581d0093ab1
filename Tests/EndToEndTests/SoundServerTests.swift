import DBusKit
import Foundation
import TestSupport
import Testing

/// A steady sine tone as stereo FLAC, for measurements on the recorded output.
func steadyTone(frequency: Int, seconds: Double, amplitude: Double, in directory: TemporaryDirectory) throws -> URL {
    let file = directory.file("tone-\(frequency).flac")
    let made = try runCommand(
        "gst-launch-1.0",
        [
            "-q", "audiotestsrc", "wave=sine", "freq=\(frequency)", "volume=\(amplitude)",
            "num-buffers=\(Int(seconds * 44_100 / 1024))", "samplesperbuffer=1024", "!",
            "audio/x-raw,rate=44100,channels=2", "!", "audioconvert", "!", "flacenc", "!", "filesink",
            "location=\(file.path)",
        ])
    guard made.status == 0 else { throw RigError("could not make a tone: \(made.stderr)") }
    return file
}

/// The left channel of S16LE stereo PCM.
func leftChannel(_ pcm: Data) -> [Int16] {
    pcm.withUnsafeBytes { raw in
        stride(from: 0, to: raw.count - 3, by: 4).map { raw.loadUnaligned(fromByteOffset: $0, as: Int16.self) }
    }
}

/// The amplitude of a sine of `frequency` at every sample (from the sample and its
/// neighbours: for a pure sine `y[n+1] − y[n−1] = 2·A·cos(ωn+φ)·sin ω`, so
/// `A² = y[n]² + ((y[n+1] − y[n−1]) / (2 sin ω))²` holds exactly at each sample).
/// A smooth volume change bends this curve gently; a step makes it jump.
func sineEnvelope(_ samples: [Int16], frequency: Double, sampleRate: Double = 44_100) -> [Double] {
    guard samples.count > 2 else { return [] }
    let twoSinOmega = 2 * sin(2 * Double.pi * frequency / sampleRate)
    var envelope = [Double](repeating: 0, count: samples.count)
    for n in 1..<(samples.count - 1) {
        let y = Double(samples[n])
        let slope = (Double(samples[n + 1]) - Double(samples[n - 1])) / twoSinOmega
        envelope[n] = (y * y + slope * slope).squareRoot()
    }
    envelope[0] = envelope[1]
    envelope[samples.count - 1] = envelope[samples.count - 2]
    return envelope
}

/// The median of `values` (nil when empty).
func median(_ values: ArraySlice<Double>) -> Double? {
    guard !values.isEmpty else { return nil }
    return values.sorted()[values.count / 2]
}

/// Tests against a real PulseAudio server: the stream Spool opens there, the
/// output choice with and without a server, and measurements on a recording of
/// what the server played (volume changes without clicks, gapless hand-over).
@Suite("Sound server output", .serialized)
struct SoundServerTests {
    /// A daemon that picks its own output (no `--audio-sink`) with `environment` added.
    func daemon(_ environment: [String: String]) throws -> RunningDaemon {
        try RunningDaemon(standardOptions: false, extraEnvironment: ["SPOOL_LOG": "debug"].merging(environment) { $1 })
    }

    /// Waits (polling the other process) until the MPRIS PlaybackStatus is `status`.
    func waitForStatus(_ daemon: RunningDaemon, _ status: String, timeout: Double = 15) async throws {
        _ = try await awaitValue(
            "PlaybackStatus, to become \(status); daemon log:\n\(daemon.process.standardError)", timeout: timeout,
            interval: .milliseconds(10),
            { try await daemon.property("org.mpris.MediaPlayer2.Player", "PlaybackStatus")?.stringValue },
            until: { $0 == status })
    }

    @Test func theDaemonPlaysIntoTheSoundServerAsSpoolWithRoleMusicAndItsIcon() async throws {
        let pulse = try PulseServer()
        let recording = try pulse.recordOutput()
        let track = try Fixtures.shared().fixture(.flac)
        let daemon = try daemon(["PULSE_SERVER": pulse.server])
        try await daemon.waitUntilReady()
        #expect(try await daemon.playerctl("open", track.url.absoluteString).status == 0)
        try await waitForStatus(daemon, "Playing")

        var streams: [PulseStream] = []
        #expect(
            try await eventually(timeout: 10, interval: 0.02) {
                streams = try pulse.sinkInputs()
                return !streams.isEmpty
            }, "no stream reached the server; daemon log:\n\(daemon.process.standardError)")
        let stream = try #require(streams.first)
        #expect(streams.count == 1, "\(streams)")
        #expect(stream.properties["application.name"] == "Spool", "\(stream)")
        #expect(stream.properties["application.icon_name"] == "spool", "\(stream)")
        #expect(stream.properties["media.role"] == "music", "\(stream)")
        let client = try pulse.clients().first { $0.index == stream.client }
        #expect(client?.properties["application.name"] == "Spool", "the stream's client: \(String(describing: client))")
        let log = daemon.process.standardError
        #expect(log.contains("audio output: PulseAudio"), "\(log)")
        #expect(!log.contains("null sink"), "\(log)")

        // And the track's tone is what the server plays.
        try await recording.waitToGrow(byMilliseconds: 500)
        let samples = leftChannel(try recording.stop())
        let loud = samples.filter { abs(Int($0)) > 10_000 }.count
        #expect(loud > 2_000, "the recording holds the tone: \(loud) loud samples of \(samples.count)")
    }

    /// The sound server going away mid-track (a crash, a restart) is no track's fault: the
    /// player pauses the track at its place and says so, where it used to retry it, give up on it
    /// and stop with the queue run through in silence. Play then tries the output again.
    @Test func aSoundServerThatGoesAwayPausesTheTrackAtItsPlace() async throws {
        let pulse = try PulseServer()
        let dir = try TemporaryDirectory()
        let tone = try steadyTone(frequency: 440, seconds: 30, amplitude: 0.5, in: dir)
        let daemon = try daemon(["PULSE_SERVER": pulse.server])
        try await daemon.waitUntilReady()
        #expect(try await daemon.playerctl("open", tone.absoluteString).status == 0)
        try await waitForStatus(daemon, "Playing")
        #expect(
            try await eventually(timeout: 10, interval: 0.02) { !(try pulse.sinkInputs()).isEmpty },
            "no stream reached the server; daemon log:\n\(daemon.process.standardError)")
        // Half a second heard, so the place to keep is not the start.
        let heard = try await awaitValue("half a second heard", interval: .milliseconds(10)) {
            try await daemon.property("org.mpris.MediaPlayer2.Player", "Position")?.int64Value ?? 0
        } until: {
            $0 >= 500_000
        }
        #expect(heard >= 500_000, "the track never played half a second")

        pulse.stop()
        try await waitForStatus(daemon, "Paused")
        let url = try await daemon.property("org.mpris.MediaPlayer2.Player", "Metadata")?.stringVariantDictValue?[
            "xesam:url"]?.stringValue
        #expect(url == tone.absoluteString)
        let error = try await daemon.property("org.spool.Spool1", "LastError")?.stringValue ?? ""
        #expect(error.contains("the audio output failed"), "\(error)")
        let position = try await daemon.property("org.mpris.MediaPlayer2.Player", "Position")?.int64Value ?? 0
        #expect(position >= heard - 100_000, "the place is kept: \(position) µs after \(heard) µs heard")
        #expect(daemon.process.isRunning)
    }

    @Test func withNoSoundDeviceTheDaemonPlaysInRealTimeIntoANullSinkWithOneWarning() async throws {
        let dir = try TemporaryDirectory()
        // No PulseAudio server at that address, and an ALSA configuration that defines
        // no device, so the result is the same on a desktop with a sound card.
        let emptyALSAConfig = dir.file("asound.conf")
        try Data().write(to: emptyALSAConfig)
        // Long enough that the measuring window never reaches the end, however late the polls
        // of a loaded machine see the start (the 3.5-s fixture ended inside it, and its
        // position went back to 0).
        let track = try steadyTone(frequency: 523, seconds: 20, amplitude: 0.5, in: dir)
        let daemon = try daemon([
            "PULSE_SERVER": "unix:\(dir.file("no-server").path)", "ALSA_CONFIG_PATH": emptyALSAConfig.path,
        ])
        try await daemon.waitUntilReady()
        #expect(try await daemon.playerctl("open", track.absoluteString).status == 0)
        try await waitForStatus(daemon, "Playing")

        // Positions advance with the wall clock: the null sink keeps real time.
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.2 }
        // Each position is read at some moment between sending the call and its reply, and a
        // loaded machine can stretch that: the wall time between the two readings is known
        // only within those brackets, and the played time must fall inside them.
        let clock = ContinuousClock()
        let firstAsked = clock.now
        let startPosition = try #require(
            try await daemon.property("org.mpris.MediaPlayer2.Player", "Position")?.int64Value)
        let firstAnswered = clock.now
        try await Task.sleep(for: .milliseconds(1500))
        let secondAsked = clock.now
        let endPosition = try #require(
            try await daemon.property("org.mpris.MediaPlayer2.Player", "Position")?.int64Value)
        let secondAnswered = clock.now
        let played = Double(endPosition - startPosition) / 1_000_000
        let shortest = (secondAsked - firstAnswered) / .seconds(1)
        let longest = (secondAnswered - firstAsked) / .seconds(1)
        #expect(
            played > shortest - 0.15 && played < longest + 0.15,
            "played \(played) s in \(shortest)–\(longest) s; daemon log:\n\(daemon.process.standardError.suffix(6000))")

        let log = daemon.process.standardError
        let warnings = log.split(separator: "\n").filter { $0.localizedCaseInsensitiveContains("warn") }
        #expect(warnings.count == 1, "exactly one warning: \(warnings)")
        #expect(warnings.first?.contains("null sink") == true, "\(log)")
        #expect(!log.contains("audio output: PulseAudio"), "\(log)")
    }

    @Test func volumeChangesOverMPRISReachTheOutputWithoutClicks() async throws {
        let media = try TemporaryDirectory()
        // A low, steady tone: its own sample-to-sample change is small (2π·200/44100 of its
        // amplitude), so a step in the gain stands far above it.
        let frequency = 200.0
        let tone = try steadyTone(frequency: Int(frequency), seconds: 8, amplitude: 0.5, in: media)
        let pulse = try PulseServer()
        let recording = try pulse.recordOutput()
        let daemon = try daemon(["PULSE_SERVER": pulse.server])
        try await daemon.waitUntilReady()
        #expect(try await daemon.playerctl("open", tone.absoluteString).status == 0)
        try await waitForStatus(daemon, "Playing")
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.3 }
        try await recording.waitToGrow(byMilliseconds: 300)

        // Abrupt requests, each held long enough to settle: 1.0 → 0.2 → 1.0 → 0.2 → 1.0.
        for volume in [0.2, 1.0, 0.2, 1.0] {
            try await daemon.set("org.mpris.MediaPlayer2.Player", "Volume", .double(volume))
            try await recording.waitToGrow(byMilliseconds: 400)
        }
        let samples = leftChannel(try recording.stop())
        let first = try #require(samples.firstIndex { abs(Int($0)) > 1_000 }, "the recording holds no tone")
        let last = try #require(samples.lastIndex { abs(Int($0)) > 1_000 })
        let toneSamples = Array(samples[first...last])
        let envelope = sineEnvelope(toneSamples, frequency: frequency)
        let full = try #require(median(envelope.prefix(4_410)))  // the first 100 ms, before any change
        #expect(abs(full - 0.5 * 32_767) < 0.05 * 32_767, "the tone plays at full volume first: \(full)")

        // The volume really changed: the quietest stretch is at a fifth of the tone.
        let stretch = 2_205  // 50 ms
        let quietest =
            stride(from: 0, to: envelope.count - stretch, by: stretch)
            .compactMap { median(envelope[$0..<($0 + stretch)]) }.min() ?? full
        #expect(abs(quietest / full - 0.2) < 0.03, "volume 0.2 gives a fifth of the amplitude: \(quietest / full)")

        // No click: the envelope never moves by more than a tenth of the full amplitude
        // within 1 ms (a step from 1.0 to 0.2 moves it by 0.8 at once), and no sample
        // jumps further than the tone itself moves between two samples.
        let millisecond = 44
        var steepest = 0.0
        for n in 0..<(envelope.count - millisecond) {
            steepest = max(steepest, abs(envelope[n + millisecond] - envelope[n]) / full)
        }
        var biggestJump = 0.0
        for n in 1..<toneSamples.count {
            biggestJump = max(biggestJump, abs(Double(toneSamples[n]) - Double(toneSamples[n - 1])))
        }
        let toneStep = full * 2 * sin(Double.pi * frequency / 44_100)
        print(
            "volume ramp: steepest envelope change \(steepest) of full per ms; biggest sample jump \(biggestJump) (tone alone: \(toneStep))"
        )
        #expect(steepest <= 0.1, "the envelope moved \(steepest) of the full amplitude within 1 ms")
        #expect(biggestJump <= toneStep * 1.1 + 8, "a sample jumped \(biggestJump); the tone moves at most \(toneStep)")
    }

    @Test func twoTracksFollowEachOtherOnTheServerWithoutAGap() async throws {
        let fixtures = try Fixtures.shared()
        let first = fixtures.fixture(.flac)
        let second = try #require(fixtures.withCover.first { $0.format == .flac })
        let media = try TemporaryDirectory()
        let firstPCM = try decodedPCM(first.url, in: media)
        let secondPCM = try decodedPCM(second.url, in: media)
        let list = media.file("two.m3u")
        try Data("#EXTM3U\n\(first.url.path)\n\(second.url.path)\n".utf8).write(to: list)
        let pulse = try PulseServer()
        let recording = try pulse.recordOutput()
        let daemon = try daemon(["PULSE_SERVER": pulse.server])
        try await daemon.waitUntilReady()
        try await daemon.mpris("org.mpris.MediaPlayer2.Player", "OpenUri", [.string(list.absoluteString)])
        try await waitForStatus(daemon, "Playing")
        try await waitForStatus(daemon, "Stopped", timeout: 20)
        try await recording.waitToGrow(byMilliseconds: 300)  // the tail the server still held
        let recorded = try recording.stop()

        // At volume 1.0, with the server at the tracks' own rate and format, what the
        // server plays is the decoded samples exactly, so the junction can be found to
        // the sample: the second track starts where its first 10 ms first appear.
        let tenMilliseconds = 441 * 4
        let secondStart = try #require(
            recorded.range(of: secondPCM.prefix(tenMilliseconds))?.lowerBound,
            "the second track is not in the recording")
        let secondPlayed = recorded[secondStart...].prefix(secondPCM.count)
        #expect(
            firstDifference(Data(secondPlayed), secondPCM) == nil,
            "the second track as played: \(describeDifference(Data(secondPlayed), secondPCM))")
        // The first track's last 10 ms, searched backwards from there (the tone repeats
        // every second, so searching forwards would find an earlier period).
        let firstEnd = try #require(
            recorded.range(of: firstPCM.suffix(tenMilliseconds), options: .backwards, in: 0..<secondStart)?.upperBound,
            "the end of the first track is not in the recording")
        let gap = Double((secondStart - firstEnd) / 4) / 44.1
        print("gapless on the sound server: \(gap) ms between the first track's last sample and the second's first")
        #expect(gap == 0, "\(gap) ms between the tracks")
        // The last second of the first track leads into the junction unchanged.
        let oneSecond = 44_100 * 4
        let firstTail = Data(recorded[(firstEnd - oneSecond)..<firstEnd])
        #expect(
            firstDifference(firstTail, firstPCM.suffix(oneSecond)) == nil,
            "the first track's last second: \(describeDifference(firstTail, firstPCM.suffix(oneSecond)))")
    }

    /// `file` decoded to S16LE stereo at 44.1 kHz, the null sink's own format.
    func decodedPCM(_ file: URL, in directory: TemporaryDirectory) throws -> Data {
        let output = directory.file(file.deletingPathExtension().lastPathComponent + ".raw")
        let decoded = try runCommand(
            "gst-launch-1.0",
            [
                "-q", "filesrc", "location=\(file.path)", "!", "decodebin", "!", "audioconvert", "!",
                "audio/x-raw,format=S16LE,channels=2,rate=44100", "!", "filesink", "location=\(output.path)",
            ])
        guard decoded.status == 0 else {
            throw RigError("could not decode \(file.lastPathComponent): \(decoded.stderr)")
        }
        return try Data(contentsOf: output)
    }
}
