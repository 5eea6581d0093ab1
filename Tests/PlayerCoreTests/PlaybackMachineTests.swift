import EngineAPI
import Foundation
import PlayerCore
import Testing

/// A machine driven by hand: inputs in, effects out, the engine's position as a plain value.
struct MachineRig {
    static let urls = (1...3).map { URL(fileURLWithPath: "/music/\($0).flac") }
    static let length: Duration = .seconds(60)

    var machine: PlaybackMachine
    /// What the engine reports as its position.
    var enginePosition: Duration = .zero
    var networkUp = true
    var saved: [String: SavedPosition] = [:]

    init(preloads: Bool = false, looksUp: Bool = false, rates: ClosedRange<Double> = 0.5...2) {
        var settings = PlaybackMachine.Settings()
        settings.preloads = preloads
        settings.looksUp = looksUp
        settings.rates = rates
        machine = PlaybackMachine(settings: settings)
    }

    var world: PlaybackWorld {
        let position = enginePosition
        let up = networkUp
        let saved = saved
        return PlaybackWorld(
            enginePosition: { position }, savedPosition: { saved[$0] }, networkUp: { _ in up })
    }

    @discardableResult
    mutating func apply(_ input: PlaybackInput) -> PlaybackStep { machine.apply(input, in: world) }

    /// The engine commands of a step.
    static func commands(_ step: PlaybackStep) -> [EngineCommand] {
        step.effects.compactMap { if case .engine(let command) = $0 { command } else { nil } }
    }

    /// The entry with list index `index`.
    func id(_ index: Int) -> TrackID { machine.queue.entries[index].id }

    var status: PlaybackStatus { machine.snapshot.status }
    var currentIndex: Int? { machine.queue.currentIndex }

    /// Opens the three tracks and has the engine say the first started, 60 s long and seekable.
    mutating func playing(at index: Int = 0, position: Duration = .zero) {
        apply(.open(Self.urls.map { TrackItem(url: $0) }))
        if index > 0 { apply(.jump(id(index))) }
        started(index)
        enginePosition = position
    }

    static func tags(_ title: String) -> TrackTags {
        var tags = TrackTags()
        tags.title = title
        return tags
    }

    /// The engine's events for the entry at `index` starting: described, seekable, started.
    mutating func started(_ index: Int) {
        let id = id(index)
        apply(.engine(.described(id, Self.tags("track \(index)"), duration: Self.length)))
        apply(.engine(.seekable(id, true)))
        apply(.engine(.trackStarted(id)))
    }
}

/// The player's rules as transitions of ``PlaybackMachine``: one row per MPRIS rule that depends
/// on the state, each checking the engine commands the input leads to and the state it leaves.
@Suite("PlaybackMachine: MPRIS rules that depend on the state")
struct PlaybackMachineTests {
    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        /// Brings the rig to the state the rule is about.
        let setup: @Sendable (inout MachineRig) -> Void
        /// The input under test, given the rig (for its ids).
        let input: @Sendable (MachineRig) -> PlaybackInput
        /// The engine commands the input leads to.
        let commands: @Sendable (MachineRig) -> [EngineCommand]
        let status: PlaybackStatus
        /// The current entry's list index after the input.
        let current: Int?
        var refused = false
        var testDescription: String { name }
    }

    static func load(_ rig: MachineRig, _ index: Int, at start: Duration = .zero, playing: Bool = true) -> EngineCommand
    {
        .load(EngineTrack(id: rig.id(index), url: MachineRig.urls[index]), at: start, playing: playing)
    }

    static let rows: [Row] = [
        Row(
            name: "Seek past the end acts like Next", setup: { $0.playing(at: 0, position: .seconds(50)) },
            input: { _ in .seekBy(.seconds(20)) }, commands: { [load($0, 1)] }, status: .playing, current: 1),
        Row(
            name: "Seek past the end of the last track, loop off, acts like Stop",
            setup: { $0.playing(at: 2, position: .seconds(50)) },
            input: { _ in .seekBy(.seconds(20)) }, commands: { _ in [.stop] }, status: .stopped, current: 2),
        Row(
            name: "Seek past the end of the last track under loop Playlist wraps to the first",
            setup: {
                $0.playing(at: 2, position: .seconds(50))
                $0.apply(.setLoop(.playlist))
            },
            input: { _ in .seekBy(.seconds(20)) }, commands: { [load($0, 0)] }, status: .playing, current: 0),
        Row(
            name: "Seek within the track seeks", setup: { $0.playing(at: 0, position: .seconds(10)) },
            input: { _ in .seekBy(.seconds(5)) }, commands: { _ in [.seek(.seconds(15))] }, status: .playing,
            current: 0),
        Row(
            name: "Seek before the start seeks to 0", setup: { $0.playing(at: 1, position: .seconds(10)) },
            input: { _ in .seekBy(.seconds(-30)) }, commands: { _ in [.seek(.zero)] }, status: .playing, current: 1),
        Row(
            name: "Previous after 3 s restarts the track", setup: { $0.playing(at: 1, position: .seconds(4)) },
            input: { _ in .previous }, commands: { _ in [.seek(.zero)] }, status: .playing, current: 1),
        Row(
            name: "Previous within 3 s goes to the previous track",
            setup: { $0.playing(at: 1, position: .seconds(2)) },
            input: { _ in .previous }, commands: { [load($0, 0)] }, status: .playing, current: 0),
        Row(
            name: "Previous at the first track restarts it", setup: { $0.playing(at: 0, position: .seconds(1)) },
            input: { _ in .previous }, commands: { _ in [.seek(.zero)] }, status: .playing, current: 0),
        Row(
            name: "SetPosition with a stale track id is ignored", setup: { $0.playing(at: 1, position: .seconds(5)) },
            input: { .setPosition($0.id(0), .seconds(30)) }, commands: { _ in [] }, status: .playing, current: 1),
        Row(
            name: "SetPosition past the end is ignored", setup: { $0.playing(at: 1) },
            input: { .setPosition($0.id(1), .seconds(61)) }, commands: { _ in [] }, status: .playing, current: 1),
        Row(
            name: "SetPosition to a negative position is ignored", setup: { $0.playing(at: 1) },
            input: { .setPosition($0.id(1), .seconds(-1)) }, commands: { _ in [] }, status: .playing, current: 1),
        Row(
            name: "SetPosition of the current track seeks", setup: { $0.playing(at: 1) },
            input: { .setPosition($0.id(1), .seconds(30)) }, commands: { _ in [.seek(.seconds(30))] },
            status: .playing, current: 1),
        Row(
            name: "Play on an empty queue is a no-op", setup: { _ in },
            input: { _ in .play }, commands: { _ in [] }, status: .stopped, current: nil),
        Row(
            name: "OpenUri while paused plays",
            setup: {
                $0.playing(at: 0, position: .seconds(5))
                $0.apply(.pause)
            },
            input: { _ in .open([TrackItem(url: MachineRig.urls[2])]) },
            commands: { rig in [.load(EngineTrack(id: rig.id(0), url: MachineRig.urls[2]), at: .zero, playing: true)] },
            status: .playing, current: 0),
        Row(
            name: "AddTrack with SetAsCurrent plays what it added, in one step", setup: { $0.playing(at: 0) },
            input: { .add([TrackItem(url: MachineRig.urls[2])], after: $0.id(0), atStart: false, play: true) },
            commands: { rig in [.load(EngineTrack(id: rig.id(1), url: MachineRig.urls[2]), at: .zero, playing: true)] },
            status: .playing, current: 1),
        Row(
            name: "Next at the last track with loop off does nothing", setup: { $0.playing(at: 2) },
            input: { _ in .next }, commands: { _ in [] }, status: .playing, current: 2),
        Row(
            name: "Next while paused loads the next track paused",
            setup: {
                $0.playing(at: 0)
                $0.apply(.pause)
            },
            input: { _ in .next }, commands: { [load($0, 1, playing: false)] }, status: .paused, current: 1),
        Row(
            name: "Next while stopped only shows the next track",
            setup: {
                $0.playing(at: 0)
                $0.apply(.stop)
            },
            input: { _ in .next }, commands: { _ in [] }, status: .stopped, current: 1),
        Row(
            name: "Pause while stopped does nothing",
            setup: {
                $0.playing(at: 0)
                $0.apply(.stop)
            },
            input: { _ in .pause }, commands: { _ in [] }, status: .stopped, current: 0),
        Row(
            name: "Play after Stop starts the track from 0",
            setup: {
                $0.playing(at: 1, position: .seconds(20))
                $0.apply(.stop)
            },
            input: { _ in .play }, commands: { [load($0, 1)] }, status: .playing, current: 1),
        Row(
            name: "A seek while stopped is where Play starts",
            setup: {
                $0.playing(at: 1)
                $0.apply(.stop)
                $0.apply(.seek(to: .seconds(25)))
            },
            input: { _ in .play }, commands: { [load($0, 1, at: .seconds(25))] }, status: .playing, current: 1),
        Row(
            name: "Rate 0 pauses", setup: { $0.playing(at: 0) },
            input: { _ in .setRate(0) }, commands: { _ in [.pause] }, status: .paused, current: 0),
        Row(
            name: "A NaN rate is ignored", setup: { $0.playing(at: 0) },
            input: { _ in .setRate(.nan) }, commands: { _ in [] }, status: .playing, current: 0),
        Row(
            name: "A rate past the engine's range is clamped", setup: { $0.playing(at: 0) },
            input: { _ in .setRate(16) }, commands: { _ in [.setRate(2)] }, status: .playing, current: 0),
        Row(
            name: "A NaN volume is silence", setup: { $0.playing(at: 0) },
            input: { _ in .setVolume(.nan) }, commands: { _ in [.setVolume(0)] }, status: .playing, current: 0),
        Row(
            name: "A track's end under loop Track plays it again from 0",
            setup: {
                $0.playing(at: 1)
                $0.apply(.setLoop(.track))
            },
            input: { .engine(.endOfTrack($0.id(1))) }, commands: { [load($0, 1)] }, status: .playing, current: 1),
        Row(
            name: "The last track's end with loop off stops", setup: { $0.playing(at: 2) },
            input: { .engine(.endOfTrack($0.id(2))) }, commands: { _ in [.stop] }, status: .stopped, current: 2),
        Row(
            name: "A track that is not found is skipped", setup: { $0.playing(at: 0) },
            input: { .engine(.failed($0.id(0), EngineError("gone", kind: .notFound))) },
            commands: { [load($0, 1)] }, status: .playing, current: 1),
        Row(
            name: "A failure while the network is down keeps the track and waits",
            setup: {
                $0.playing(at: 1)
                $0.networkUp = false
            },
            input: { .engine(.failed($0.id(1), EngineError("no route", kind: .unreachable))) },
            commands: { _ in [] }, status: .playing, current: 1),
        Row(
            name: "A lost output pauses the track at its place", setup: { $0.playing(at: 1) },
            input: { .engine(.failed($0.id(1), EngineError("no sink", kind: .outputLost))) },
            commands: { _ in [] }, status: .paused, current: 1),
        Row(
            name: "A seek of a track that said it cannot seek is refused",
            setup: {
                $0.playing(at: 0)
                $0.apply(.engine(.seekable($0.id(0), false)))
            },
            input: { _ in .seek(to: .seconds(10)) }, commands: { _ in [] }, status: .playing, current: 0,
            refused: true),
        Row(
            name: "A seek before the engine said whether the track can seek goes to the engine",
            setup: { $0.apply(.open([TrackItem(url: MachineRig.urls[0])])) },
            input: { _ in .seek(to: .seconds(10)) }, commands: { _ in [.seek(.seconds(10))] }, status: .playing,
            current: 0),
    ]

    @Test(arguments: rows)
    func rule(_ row: Row) {
        var rig = MachineRig()
        row.setup(&rig)
        let step = rig.apply(row.input(rig))
        // What the engine is given to follow the new track is the hand-over's rule, tested apart.
        let commands = MachineRig.commands(step).filter { if case .setNext = $0 { false } else { true } }
        #expect(commands == row.commands(rig))
        #expect(rig.status == row.status)
        #expect(rig.currentIndex == row.current)
        #expect((step.refusal != nil) == row.refused, "refusal: \(step.refusal ?? "none")")
    }

    @Test func aFailureWhileTheNetworkIsDownAsksTheShellToWatchIt() {
        var rig = MachineRig()
        rig.playing(at: 1, position: .seconds(12))
        rig.networkUp = false
        let failure = EngineError("no route", kind: .unreachable, position: .seconds(12))
        let step = rig.apply(.engine(.failed(rig.id(1), failure)))
        #expect(step.effects.contains(.waitForNetwork(rig.id(1), MachineRig.urls[1])))
        #expect(rig.machine.snapshot.buffering)
        #expect(rig.machine.shownPosition == .seconds(12), "the place shows while it waits")
        let retried = rig.apply(.retryDue(rig.id(1)))
        #expect(MachineRig.commands(retried).first == PlaybackMachineTests.load(rig, 1, at: .seconds(12)))
    }

    @Test func aRetryAfterTheListenerMovedOnDoesNothing() {
        var rig = MachineRig()
        rig.playing(at: 0)
        let step = rig.apply(.engine(.failed(rig.id(0), EngineError("reset", kind: .transient))))
        #expect(step.effects.contains(.retry(rig.id(0), after: .milliseconds(500))))
        rig.apply(.next)
        #expect(MachineRig.commands(rig.apply(.retryDue(rig.id(0)))) == [])
        #expect(rig.currentIndex == 1)
    }

    @Test func everyTrackFailingInOnePassStopsWithTheError() {
        var rig = MachineRig()
        rig.playing(at: 0)
        for index in 0..<3 {
            rig.apply(.engine(.failed(rig.id(index), EngineError("bad frames", kind: .corrupt))))
        }
        #expect(rig.status == .stopped)
        #expect(rig.machine.snapshot.lastError?.contains("no track of the queue could be played") == true)
    }

    @Test func aRestoredSessionShowsItsPlaceAndPlayRewindsIt() {
        var rig = MachineRig()
        let session = SavedSession(
            entries: MachineRig.urls.map { .init(url: $0, title: nil) }, currentIndex: 1, position: .seconds(40),
            loop: .none, shuffle: false, rate: 1, volume: 0.5)
        rig.apply(.restore(session))
        #expect(rig.status == .paused)
        #expect(rig.machine.shownPosition == .seconds(40))
        let step = rig.apply(.play)
        #expect(MachineRig.commands(step).first == PlaybackMachineTests.load(rig, 1, at: .seconds(38)))
    }

    @Test func aLoadedTrackCanSeekUntilTheEngineSaysOtherwise() {
        var rig = MachineRig()
        rig.apply(.open([TrackItem(url: MachineRig.urls[0])]))
        #expect(rig.machine.snapshot.nowPlaying?.seekable == true, "a seek now would go to the engine")
        rig.apply(.engine(.seekable(rig.id(0), false)))
        #expect(rig.machine.snapshot.nowPlaying?.seekable == false)
        rig.apply(.stop)
        rig.apply(.play)
        #expect(rig.machine.snapshot.nowPlaying?.seekable == false, "a reload keeps what the engine said")
        #expect(rig.apply(.seek(to: .seconds(5))).refusal != nil)
    }

    @Test func aHandOverMakesTheNextTrackCurrentWithWhatWasHeardOfIt() {
        var rig = MachineRig()
        rig.playing(at: 0)
        #expect(rig.machine.preparedID == rig.id(1), "without a preloader the engine gets the next track at once")
        rig.apply(.engine(.described(rig.id(1), MachineRig.tags("second"), duration: .seconds(90))))
        rig.apply(.engine(.trackStarted(rig.id(1))))
        #expect(rig.currentIndex == 1)
        #expect(rig.machine.snapshot.nowPlaying?.tags.title == "second")
        #expect(rig.machine.preparedID == rig.id(2))
    }
}
