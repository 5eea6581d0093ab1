import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

@Suite("What the sound server's pause and play requests do")
struct InterruptionPolicyTests {
    /// One thing that happens: a request of the server while the player is in a status, or an
    /// action of the listener on the transport.
    enum Step: Sendable, CustomStringConvertible {
        case server(SoundServerRequest, PlaybackStatus)
        case listener

        var description: String {
            switch self {
            case .server(let request, let status): "\(request) while \(status.rawValue)"
            case .listener: "listener"
            }
        }
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let mode: InterruptionMode
        let steps: [Step]
        /// The action answered at each server step, in order.
        let actions: [InterruptionPolicy.Action]
        /// Whether playback is interrupted after the last step.
        let interrupted: Bool
        var testDescription: String { "\(mode): " + steps.map(\.description).joined(separator: ", ") }
    }

    static let rows: [Row] = [
        // A call pauses the music; its end plays on.
        Row(mode: .pause, steps: [.server(.pause, .playing)], actions: [.pause], interrupted: true),
        Row(
            mode: .pause, steps: [.server(.pause, .playing), .server(.play, .paused)],
            actions: [.pause, .resume], interrupted: false),
        // A listener who paused by hand is not overruled (a server asking anyway changes nothing).
        Row(
            mode: .pause, steps: [.server(.pause, .paused), .server(.play, .paused)],
            actions: [.none, .none], interrupted: false),
        Row(
            mode: .pause, steps: [.server(.pause, .stopped), .server(.play, .stopped)],
            actions: [.none, .none], interrupted: false),
        // The listener acting during the call (pause, play, stop, another track) cancels the resume.
        Row(
            mode: .pause, steps: [.server(.pause, .playing), .listener, .server(.play, .paused)],
            actions: [.pause, .none], interrupted: false),
        Row(
            mode: .pause, steps: [.server(.pause, .playing), .listener, .server(.play, .playing)],
            actions: [.pause, .none], interrupted: false),
        Row(
            mode: .pause, steps: [.server(.pause, .playing), .listener, .server(.play, .stopped)],
            actions: [.pause, .none], interrupted: false),
        Row(mode: .pause, steps: [.server(.pause, .playing), .listener], actions: [.pause], interrupted: false),
        // Stopped meanwhile by something else (a failure): nothing to resume.
        Row(
            mode: .pause, steps: [.server(.pause, .playing), .server(.play, .stopped)],
            actions: [.pause, .none], interrupted: false),
        // A second pause request during the call keeps the one interruption; one end resumes.
        Row(
            mode: .pause, steps: [.server(.pause, .playing), .server(.pause, .paused), .server(.play, .paused)],
            actions: [.pause, .none, .resume], interrupted: false),
        // A play request with no interruption (the server lets a corked stream go) does nothing.
        Row(mode: .pause, steps: [.server(.play, .paused)], actions: [.none], interrupted: false),
        // Two calls in a row: each pauses and resumes.
        Row(
            mode: .pause,
            steps: [
                .server(.pause, .playing), .server(.play, .paused), .server(.pause, .playing), .server(.play, .paused),
            ],
            actions: [.pause, .resume, .pause, .resume], interrupted: false),
        // Turned off: nothing at all.
        Row(
            mode: .ignore, steps: [.server(.pause, .playing), .server(.play, .playing)],
            actions: [.none, .none], interrupted: false),
    ]

    @Test(arguments: rows)
    func decisions(row: Row) {
        var policy = InterruptionPolicy(mode: row.mode)
        var actions: [InterruptionPolicy.Action] = []
        for step in row.steps {
            switch step {
            case .server(let request, let status): actions.append(policy.soundServer(request, status: status))
            case .listener: policy.listenerActed()
            }
        }
        #expect(actions == row.actions)
        #expect(policy.interrupted == row.interrupted)
    }
}

@Suite("The player interrupted by the sound server, with a fake engine")
struct PlayerInterruptionTests {
    let url = URL(string: "file:///music/a.flac")!
    let second = URL(string: "file:///music/b.flac")!

    /// Sends the server's pause request and waits until the player shows the interruption.
    func interrupt(_ engine: FakeEngine, _ recorder: UpdateRecorder) async {
        engine.send(.soundServerRequest(.pause))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.interrupted == true })
    }

    /// Returns once the player has handled every event sent so far: events are handled in
    /// order, and a new length of the loaded track shows in the snapshot.
    func drain(_ engine: FakeEngine, _ player: Player, _ recorder: UpdateRecorder) async {
        guard let id = await player.state.nowPlaying?.entry.id else { return }
        let marker = Duration.seconds(Int.random(in: 1_000...9_999))
        engine.send(.described(id, TrackTags(), duration: marker))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.duration == marker })
    }

    @Test func aCallPausesKeepingThePlaceAndItsEndPlaysOn() async {
        let memory = TransientMemory()
        let engine = FakeEngine()
        let player = Player(engine: engine, memory: memory)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.open(url)
        engine.setPosition(.seconds(42))
        await interrupt(engine, recorder)
        #expect(await player.state.status == .paused)
        #expect(engine.commands.suffix(2) == [.pause, .keepOutput(true)], "the stream the server corked stays")
        #expect(
            memory.position(forKey: url.absoluteString)?.position == .seconds(42),
            "the place is saved as a listener's pause saves it")

        engine.send(.soundServerRequest(.play))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.status == .playing })
        #expect(await player.state.interrupted == false)
        #expect(
            engine.commands.suffix(2) == [.keepOutput(false), .play], "plays on in place, no reload: \(engine.commands)"
        )
        #expect(engine.loads.count == 1)
    }

    @Test func pausingByHandDuringTheCallKeepsThePlayerPausedAfterIt() async {
        let (engine, player, recorder, _) = await openedPlayer(url)
        await interrupt(engine, recorder)
        await player.pause()
        #expect(await player.state.interrupted == false, "the listener's pause replaces the interruption")
        #expect(engine.commands.last == .keepOutput(false), "the engine may release the stream again")
        engine.send(.soundServerRequest(.play))
        await drain(engine, player, recorder)
        #expect(await player.state.status == .paused)
        #expect(!engine.commands.contains(.play))
    }

    @Test func changingTrackDuringTheCallCancelsTheResume() async {
        let (engine, player, recorder, _) = await openedPlayer(url)
        await player.add([second])
        await interrupt(engine, recorder)
        await player.next()
        #expect(await player.state.interrupted == false)
        #expect(await player.state.status == .paused, "the next track is loaded paused")
        engine.send(.soundServerRequest(.play))
        await drain(engine, player, recorder)
        #expect(await player.state.status == .paused, "the call's end changes nothing")
        #expect(!engine.commands.contains(.play), "\(engine.commands)")
    }

    @Test func stoppingDuringTheCallCancelsTheResume() async {
        let (engine, player, recorder, _) = await openedPlayer(url)
        await interrupt(engine, recorder)
        await player.stop()
        #expect(await player.state.interrupted == false)
        engine.send(.soundServerRequest(.play))
        // Nothing is loaded to mark the end of the events with (see `drain`): the request gets
        // 100 ms, many times what the player takes for an event.
        #expect(
            await !recorder.waitUntil(timeout: .milliseconds(100)) { _ in
                recorder.snapshots.last?.status != .stopped
            })
        #expect(!engine.commands.contains(.play), "\(engine.commands)")
    }

    @Test func aPlayerPausedByHandIsNotInterrupted() async {
        let (engine, player, recorder, _) = await openedPlayer(url)
        await player.pause()
        engine.send(.soundServerRequest(.pause))
        engine.send(.soundServerRequest(.play))
        await drain(engine, player, recorder)
        #expect(await player.state.status == .paused)
        #expect(recorder.snapshots.allSatisfy { !$0.interrupted })
        #expect(!engine.commands.contains(.play))
    }

    @Test func withInterruptionsIgnoredACallChangesNothing() async {
        let engine = FakeEngine()
        let player = Player(engine: engine, interruptions: .ignore)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.open(url)
        engine.send(.soundServerRequest(.pause))
        await drain(engine, player, recorder)
        #expect(await player.state.status == .playing)
        #expect(!engine.commands.contains(.pause))
        #expect(recorder.snapshots.allSatisfy { !$0.interrupted })
    }
}
