import EngineAPI
import Foundation
import PlayerCore
import TestSupport
import Testing

/// ``PlaybackMachine`` under random sequences of the listener's commands, the engine's events and
/// the shell's timers, with a model engine that answers commands as the real one does. After every
/// step the invariants hold:
/// - the published state describes the track that is current, and the track the engine holds;
/// - the shown position never goes backwards without a seek, a load, a stop or a change of track;
/// - a failure never leaves the player stuck: Playing means a track is loaded, or a retry or a
///   network wait is pending;
/// - every engine command names an entry of the queue.
/// Shuffled orders come from the seed too, so a failing sequence replays from it.
@Suite("PlaybackMachine: invariants over random sequences")
struct PlaybackMachineModelTests {
    /// The engine as the machine's commands leave it.
    struct ModelEngine {
        var loaded: TrackID?
        var prepared: TrackID?
        /// The prepared track the engine committed to at about-to-finish: it plays next whatever
        /// is asked since, short of a load or a stop.
        var committed: TrackID?
        var position: Duration = .zero
        var playing = false

        mutating func apply(_ command: EngineCommand) {
            switch command {
            case .load(let track, let start, let playing):
                loaded = track.id
                prepared = nil
                committed = nil
                position = start
                self.playing = playing
            case .setNext(let track): prepared = track?.id
            case .play: playing = true
            case .pause: playing = false
            case .stop, .shutdown:
                loaded = nil
                prepared = nil
                committed = nil
                position = .zero
                playing = false
            case .seek(let target): position = target
            case .setRate, .setVolume, .keepOutput: break
            }
        }
    }

    /// The shell: the machine, the model engine, and the timers the machine asked for.
    struct Model {
        var machine: PlaybackMachine
        var engine = ModelEngine()
        var retries: Set<TrackID> = []
        var networkWait: TrackID?
        var networkUp = true

        var world: PlaybackWorld {
            let engine = engine
            let up = networkUp
            return PlaybackWorld(
                enginePosition: { engine.loaded == nil ? nil : engine.position }, networkUp: { _ in up })
        }

        var shownPosition: Duration { machine.position(in: world) }

        mutating func apply(_ input: PlaybackInput) -> PlaybackStep {
            let step = machine.apply(input, in: world)
            for effect in step.effects {
                switch effect {
                case .engine(let command): engine.apply(command)
                case .retry(let id, _): retries.insert(id)
                case .waitForNetwork(let id, _): networkWait = id
                case .stopWaitingForNetwork: networkWait = nil
                default: break
                }
            }
            return step
        }
    }

    static let urls = (1...4).map { URL(fileURLWithPath: "/music/\($0).flac") }
    static let kinds: [FailureKind] = [
        .transient, .notFound, .unsupported, .corrupt, .unreachable, .newVersion, .outputLost,
    ]

    /// One random input: a command, an engine event the model engine could send, a stale event,
    /// time passing, or a due timer.
    static func input(_ model: inout Model, _ random: inout SeededGenerator) -> PlaybackInput {
        let ids = model.machine.queue.entries.map(\.id)
        let anyID = ids.isEmpty ? TrackID(99) : ids[random.next(below: ids.count)]
        let engine = model.engine
        switch random.next(below: 30) {
        case 0: return .open(urls.prefix(1 + random.next(below: urls.count)).map { TrackItem(url: $0) })
        case 1:
            return .add(
                [TrackItem(url: urls[random.next(below: urls.count)])], after: ids.isEmpty ? nil : anyID,
                atStart: random.next(below: 4) == 0, play: random.next(below: 4) == 0)
        case 2: return .remove(anyID)
        case 3: return .jump(anyID)
        case 4: return .setLoop(LoopMode.allCases[random.next(below: LoopMode.allCases.count)])
        case 5: return .play
        case 6: return .pause
        case 7: return .playPause
        case 8: return .stop
        case 9: return .next
        case 10: return .previous
        case 11: return .seekBy(.seconds(random.next(below: 140) - 70))
        case 12: return .setPosition(anyID, .seconds(random.next(below: 80)))
        case 13: return .seek(to: .seconds(random.next(below: 80)))
        case 14: return .setRate(Double(random.next(below: 5)) / 2)
        case 15: return .clear
        case 16:
            model.networkUp.toggle()
            return .setShuffle(random.next(below: 2) == 0)
        case 17:
            // A due retry, or one the machine never asked for.
            if let id = model.retries.popFirst() ?? model.networkWait { return .retryDue(id) }
            return .retryDue(anyID)
        case 18:
            return .engine(.soundServerRequest(random.next(below: 2) == 0 ? .pause : .play))
        case 19:
            // A start of a track the engine no longer holds: stale.
            if anyID == engine.loaded || anyID == engine.prepared { return .saveDue }
            return .engine(.trackStarted(anyID))
        default:
            guard let loaded = engine.loaded else { return .engine(.endOfTrack(anyID)) }
            switch random.next(below: 9) {
            case 0 where engine.committed == nil: return .engine(.trackStarted(loaded))
            case 1:
                return .engine(.described(loaded, TrackTags(), duration: .seconds(40 + random.next(below: 40))))
            case 2: return .engine(.seekable(loaded, random.next(below: 4) != 0))
            case 3: return .engine(.seeked(loaded, position: engine.position))
            case 4: return .engine(.buffering(loaded, random.next(below: 2) == 0))
            case 5:
                let kind = kinds[random.next(below: kinds.count)]
                model.engine.loaded = nil
                return .engine(.failed(loaded, EngineError("failed (\(kind))", kind: kind, position: engine.position)))
            case 6:
                // The end: the committed track takes over without a gap, else the track ended.
                if let next = engine.committed {
                    model.engine = ModelEngine(loaded: next, position: .zero, playing: true)
                    return .engine(.trackStarted(next))
                }
                model.engine.loaded = nil
                return .engine(.endOfTrack(loaded))
            case 7:
                if let next = engine.prepared, engine.committed == nil {
                    model.engine.committed = next
                    return .engine(.nextQueued(next))
                }
                return .engine(.endOfTrack(anyID))
            default:
                // Time passes.
                if engine.playing { model.engine.position += .milliseconds(500) }
                return .saveDue
            }
        }
    }

    static func jumped(_ step: PlaybackStep) -> Bool {
        step.effects.contains {
            switch $0 {
            case .engine(.load), .engine(.seek), .engine(.stop), .publish(.seeked): true
            default: false
            }
        }
    }

    @Test(arguments: 0..<300 as Range<UInt64>)
    func theRulesHoldOverARandomSequence(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var settings = PlaybackMachine.Settings()
        settings.rates = 0.5...2
        settings.shuffleSeed = seed
        var model = Model(machine: PlaybackMachine(settings: settings))
        var trace: [String] = []
        for index in 0..<80 {
            let before = model.shownPosition
            let track = model.machine.snapshot.nowPlaying?.entry.id
            let input = Self.input(&model, &random)
            let step = model.apply(input)
            let machine = model.machine
            trace.append(
                "\(input) → \(MachineRig.commands(step)) [\(model.engine), shown \(String(describing: machine.shownPosition))]"
            )
            let context = "seed \(seed) step \(index): \(trace.suffix(10).joined(separator: "\n"))"
            let entries = Set(machine.queue.entries.map(\.id))
            let now = machine.snapshot.nowPlaying?.entry.id
            #expect(now == machine.queue.currentID, "\(context): shows \(String(describing: now))")
            if let loaded = machine.loadedID {
                #expect(loaded == machine.queue.currentID, "\(context): the engine holds another track")
                #expect(model.engine.loaded == loaded, "\(context): the engine was not given \(loaded)")
            }
            for case .engine(let command) in step.effects {
                switch command {
                case .load(let track, _, _), .setNext(let track?):
                    #expect(entries.contains(track.id), "\(context): \(command) names no entry")
                default: break
                }
            }
            if !Self.jumped(step), now == track, machine.snapshot.status != .stopped {
                #expect(model.shownPosition >= before, "\(context): \(before) → \(model.shownPosition)")
            }
            if machine.snapshot.status == .playing {
                let pending =
                    machine.queue.currentID.map { model.retries.contains($0) || model.networkWait == $0 } ?? false
                #expect(machine.loadedID != nil || pending, "\(context): Playing with nothing loaded or pending")
            }
        }
    }
}
