import DBusKit
import Foundation
import TestSupport
import Testing

private let playerInterface = "org.mpris.MediaPlayer2.Player"

/// A daemon playing into a private PulseAudio server whose policy corks music during calls
/// (`module-role-cork`), with every PlaybackStatus change it signals logged as it arrives.
final class CallRig {
    let pulse: PulseServer
    let daemon: RunningDaemon
    let media: TemporaryDirectory
    /// The music: a 20 s tone.
    let music: URL
    /// PlaybackStatus as signalled, with when each signal arrived.
    let statuses = AwaitableLog<(at: Date, status: String)>()
    private let listener: Task<Void, Never>

    init(extraArguments: [String] = [], callSeconds: Double = 1) async throws {
        media = try TemporaryDirectory(prefix: "spool-call")
        music = try steadyTone(frequency: 440, seconds: 20, amplitude: 0.5, in: media)
        pulse = try PulseServer()
        try pulse.loadRoleCork()
        daemon = try RunningDaemon(
            extraArguments: extraArguments, standardOptions: false,
            extraEnvironment: ["SPOOL_LOG": "debug", "PULSE_SERVER": pulse.server])
        try await daemon.waitUntilReady()
        let stream = try await daemon.client.subscribe(
            matching:
                "type='signal',path='\(playerPath)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',arg0='\(playerInterface)'"
        )
        let statuses = statuses
        listener = Task {
            for await message in stream {
                if let status = changedProperties(message)["PlaybackStatus"]?.stringValue {
                    await statuses.append((Date(), status))
                }
            }
        }
        try makeCall(seconds: callSeconds)
    }

    deinit { listener.cancel() }

    /// The call's sound: a 1 kHz tone as WAV, for `paplay`.
    var callFile: URL { media.file("call.wav") }

    private func makeCall(seconds: Double) throws {
        let made = try runCommand(
            "gst-launch-1.0",
            [
                "-q", "audiotestsrc", "wave=sine", "freq=1000", "num-buffers=\(Int(seconds * 44_100 / 1024))",
                "samplesperbuffer=1024", "!", "audio/x-raw,format=S16LE,rate=44100,channels=2", "!", "wavenc", "!",
                "filesink", "location=\(callFile.path)",
            ])
        guard made.status == 0 else { throw RigError("could not make the call's sound: \(made.stderr)") }
    }

    /// Opens the music and returns once it has played `seconds`.
    func playMusic(for seconds: Double = 1) async throws {
        try await daemon.mpris(playerInterface, "OpenUri", [.string(music.absoluteString)])
        #expect(await statuses.waitFor { $0.last?.status == "Playing" }, "never Playing; log:\n\(log)")
        #expect(
            try await daemon.waitForProperty(playerInterface, "Position") {
                ($0?.int64Value ?? 0) > Int64(seconds * 1e6)
            })
    }

    /// When PlaybackStatus was first signalled as `status` after `moment`; nil within `timeout`.
    func signalled(_ status: String, after moment: Date, timeout: Duration = .seconds(10)) async -> Date? {
        let seen = await statuses.waitFor(timeout: timeout) { $0.contains { $0.at >= moment && $0.status == status } }
        guard seen else { return nil }
        return await statuses.items.first { $0.at >= moment && $0.status == status }?.at
    }

    /// The position in seconds, as MPRIS reports it.
    func position() async throws -> Double {
        Double(try await daemon.property(playerInterface, "Position")?.int64Value ?? -1) / 1e6
    }

    /// Whether org.spool.Spool1 says playback is interrupted.
    func interrupted() async throws -> Bool? {
        try await daemon.property("org.spool.Spool1", "Interrupted")?.boolValue
    }

    /// Waits until the daemon's log holds `line` (what the engine and the player log as they act).
    func logContains(_ line: String, timeout: Double = 10) async -> Bool {
        await eventually(timeout: timeout, interval: 0.01) { self.daemon.process.standardError.contains(line) }
    }

    var log: String { daemon.process.standardError }
}

/// The sound server's policy for calls, end to end: a `media.role=phone` stream corks Spool's
/// music stream, and Spool pauses and later plays on as a phone does.
@Suite("Interruptions by the sound server", .serialized)
struct InterruptionEndToEndTests {
    @Test func aCallPausesTheMusicAndItsEndPlaysItOnFromTheSamePlace() async throws {
        let rig = try await CallRig()
        try await rig.playMusic()

        let callStarted = Date()
        let call = try rig.pulse.playCall(rig.callFile)
        let pausedAt = try #require(await rig.signalled("Paused", after: callStarted), "no pause; log:\n\(rig.log)")
        let pauseLatency = pausedAt.timeIntervalSince(callStarted)
        #expect(pauseLatency < 0.2, "paused \(pauseLatency) s after the call started")
        #expect(try await rig.interrupted() == true)
        let pausedPosition = try await rig.position()
        let status = try rig.daemon.spool("status")
        #expect(status.stdout.hasPrefix("Paused (interrupted by the sound server): "), "\(status.stdout)")
        #expect(try await rig.position() == pausedPosition, "the position holds during the call")

        let exit = await call.waitForExit(timeout: 10)
        let callEnded = Date()
        #expect(exit == 0, "paplay: \(call.standardError)")
        let playingAt = try #require(
            await rig.signalled("Playing", after: pausedAt), "never played on; log:\n\(rig.log)")
        let resumeLatency = max(0, playingAt.timeIntervalSince(callEnded))
        #expect(resumeLatency < 0.2, "played on \(resumeLatency) s after the call ended")
        let resumedPosition = try await rig.position()
        let sinceResume = Date().timeIntervalSince(playingAt)
        #expect(
            resumedPosition >= pausedPosition - 0.05 && resumedPosition <= pausedPosition + sinceResume + 0.1,
            "paused at \(pausedPosition) s, playing on at \(resumedPosition) s \(sinceResume) s after the resume")
        #expect(try await rig.interrupted() == false)
        #expect(
            try await rig.daemon.waitForProperty(playerInterface, "Position") {
                Double($0?.int64Value ?? 0) / 1e6 > pausedPosition + 0.3
            }, "the position advances again")
        print(
            "interruption: paused \(Int(pauseLatency * 1000)) ms after paplay started; played on \(Int(resumeLatency * 1000)) ms after it exited; paused at \(pausedPosition) s, on at \(resumedPosition) s"
        )
    }

    @Test func musicPausedByHandStaysPausedThroughACall() async throws {
        let rig = try await CallRig()
        try await rig.playMusic()
        try await rig.daemon.mpris(playerInterface, "Pause")
        #expect(await rig.statuses.waitFor { $0.last?.status == "Paused" })
        let pausedPosition = try await rig.position()

        let callStarted = Date()
        let call = try rig.pulse.playCall(rig.callFile)
        #expect(
            try await eventually(timeout: 10, interval: 0.01) {
                try rig.pulse.sinkInputs().contains { $0.properties["media.role"] == "phone" }
            }, "the call never reached the server")
        #expect(await call.waitForExit(timeout: 10) == 0, "paplay: \(call.standardError)")
        // A corked stream is left alone by the server: no request comes, so there is no event to
        // await. Twice the time allowed for a resume is the window where one would show.
        try await Task.sleep(for: .milliseconds(400))
        let statuses = await rig.statuses.items
        #expect(statuses.allSatisfy { $0.at < callStarted || $0.status == "Paused" }, "\(statuses)")
        #expect(try await rig.daemon.property(playerInterface, "PlaybackStatus")?.stringValue == "Paused")
        #expect(try await rig.interrupted() == false)
        #expect(try await rig.position() == pausedPosition)
        #expect(!rig.log.contains("pausing: the sound server"), "\(rig.log)")
    }

    @Test func pausingOrChangingTrackDuringTheCallCancelsThePlayOn() async throws {
        for action in ["Pause", "Next"] {
            // A call longer than the test: it ends when the test hangs up, after the listener's
            // action, however long that took to arrive.
            let rig = try await CallRig(callSeconds: 30)
            let second = try steadyTone(frequency: 660, seconds: 10, amplitude: 0.5, in: rig.media)
            try await rig.playMusic()
            try await rig.daemon.mpris("org.spool.Spool1", "Add", [.stringArray([second.absoluteString])])

            let callStarted = Date()
            let call = try rig.pulse.playCall(rig.callFile)
            #expect(await rig.signalled("Paused", after: callStarted) != nil, "\(action): no pause; log:\n\(rig.log)")
            let musicStreams = { try rig.pulse.sinkInputs().filter { $0.properties["media.role"] == "music" } }
            let before = try musicStreams().map(\.index)
            try await rig.daemon.mpris(playerInterface, action)
            #expect(try await rig.interrupted() == false, "\(action): the listener's action ends the interruption")
            #expect(call.isRunning, "\(action): the call ended before the listener's action arrived")
            // Pause keeps the music's stream; Next loads the next track, whose new stream reaches
            // the server (which corks it for the call) on its own time: the call ends after that.
            #expect(
                try await eventually {
                    let now = try musicStreams().map(\.index)
                    return action == "Pause" ? now == before : !now.isEmpty && now != before
                }, "\(action): the music's streams were \(before), now \((try? musicStreams()) ?? [])")
            await onOwnThread { _ = call.stop(grace: 2) }  // hangs up
            #expect(
                try await eventually {
                    try !rig.pulse.sinkInputs().contains { $0.properties["media.role"] == "phone" }
                },
                "\(action): the call's stream stayed")
            if action == "Pause" {
                // The server's request to play the stream it corked again arrives, and is turned down.
                #expect(
                    await rig.logContains("the sound server asks to play again"),
                    "\(action): no uncork; log:\n\(rig.log)")
                #expect(await rig.logContains("asks to play; nothing to do"), "\(action): \(rig.log)")
            } else {
                // The next track's stream, made paused during the call, is corked by the server in
                // some runs and left alone in others: no request is then sent, so there is no event
                // to await. Twice the time allowed for a resume is the window where one would show.
                try await Task.sleep(for: .milliseconds(400))
                if rig.log.contains("the sound server asks to play again") {
                    #expect(await rig.logContains("asks to play; nothing to do"), "\(action): \(rig.log)")
                }
            }
            #expect(
                try await rig.daemon.property(playerInterface, "PlaybackStatus")?.stringValue == "Paused", "\(action)")
            let statuses = await rig.statuses.items
            #expect(statuses.allSatisfy { $0.at < callStarted || $0.status != "Playing" }, "\(action): \(statuses)")
        }
    }

    @Test func withInterruptionsIgnoredTheMusicPlaysThroughACall() async throws {
        let rig = try await CallRig(extraArguments: ["--audio-interruptions", "ignore"])
        try await rig.playMusic()
        let callStarted = Date()
        let call = try rig.pulse.playCall(rig.callFile)
        #expect(await rig.logContains("the sound server asks to pause"), "no cork request; log:\n\(rig.log)")
        #expect(await call.waitForExit(timeout: 10) == 0, "paplay: \(call.standardError)")
        // The server only unmutes a stream it did not see corked: no request; the call is over
        // once its stream is gone.
        #expect(
            try await eventually(timeout: 10, interval: 0.01) {
                try !rig.pulse.sinkInputs().contains { $0.properties["media.role"] == "phone" }
            }, "the call's stream stayed")
        let statuses = await rig.statuses.items
        #expect(statuses.allSatisfy { $0.at < callStarted || $0.status == "Playing" }, "\(statuses)")
        #expect(try await rig.daemon.property(playerInterface, "PlaybackStatus")?.stringValue == "Playing")
    }

    @Test func aCallLongerThanTheIdleReleaseStillEndsInPlayingOn() async throws {
        // The server tells the end of the call to the stream it corked: the pipeline that holds
        // that stream must outlive a call longer than idle.release.
        let rig = try await CallRig(extraArguments: ["--idle-release", "500ms"], callSeconds: 2)
        try await rig.playMusic()
        let callStarted = Date()
        let call = try rig.pulse.playCall(rig.callFile)
        let pausedAt = try #require(await rig.signalled("Paused", after: callStarted), "no pause; log:\n\(rig.log)")
        #expect(await call.waitForExit(timeout: 10) == 0, "paplay: \(call.standardError)")
        #expect(await rig.signalled("Playing", after: pausedAt) != nil, "never played on; log:\n\(rig.log)")
        #expect(!rig.log.contains("released the pipeline"), "\(rig.log)")
    }

    @Test func afterACallTheListenerPlayedThroughAPauseReleasesThePipelineAgain() async throws {
        // Played by hand during the call, the stream is no longer corked: the server only unmutes
        // it at the end and sends no request. The hold must end with the interruption.
        let rig = try await CallRig(extraArguments: ["--idle-release", "500ms"], callSeconds: 1)
        try await rig.playMusic()
        let callStarted = Date()
        let call = try rig.pulse.playCall(rig.callFile)
        let pausedAt = try #require(await rig.signalled("Paused", after: callStarted), "no pause; log:\n\(rig.log)")
        try await rig.daemon.mpris(playerInterface, "Play")
        #expect(await rig.signalled("Playing", after: pausedAt) != nil)
        #expect(await call.waitForExit(timeout: 10) == 0, "paplay: \(call.standardError)")
        try await rig.daemon.mpris(playerInterface, "Pause")
        #expect(
            await rig.logContains("released the pipeline", timeout: 5),
            "the pause after the call kept the pipeline; log:\n\(rig.log)")
    }
}
