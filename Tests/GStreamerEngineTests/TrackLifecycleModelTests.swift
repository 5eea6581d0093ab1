import EngineAPI
import FoundationEssentials
import TestSupport
import Testing

@testable import GStreamerEngine

/// The lifecycle under random sequences of whatever the shell may feed it, in any order: stale
/// open results, stream starts of any URI, errors, hand-overs, teardowns. After every step the
/// events it returned must hold the rules the player relies on.
@Suite("The tracks' lifecycle under random inputs")
struct TrackLifecycleModelTests {
    /// What the shell remembers to feed back later: tickets and URIs, some of them stale.
    struct World {
        var machine = TrackLifecycle()
        var loads: [(LoadTicket, EngineTrack)] = []
        var uris: [String] = []
        var startedTickets: Set<LoadTicket> = []
        /// Tickets reported started, with how often.
        var reports: [LoadTicket: Int] = [:]
    }

    static func track(_ number: UInt64) -> EngineTrack {
        EngineTrack(id: TrackID(number), url: URL(fileURLWithPath: "/music/\(number).mp3"))
    }

    static func uri(_ ticket: LoadTicket) -> String { "appsrc://spool/\(ticket.track.rawValue)-\(ticket.generation)" }

    /// One random input; returns the events the machine's answer makes the shell emit.
    static func step(_ world: inout World, _ random: inout SeededGenerator) -> [EngineEvent] {
        let number = UInt64.random(in: 1...4, using: &random)
        switch Int.random(in: 0..<15, using: &random) {
        case 0:
            let plan = world.machine.load(track(number))
            world.loads.append((plan.ticket, track(number)))
            if let promoted = plan.promoted {
                // The shell starts a promoted source at once.
                let uri = uri(plan.ticket)
                world.uris.append(uri)
                _ = promoted
                _ = world.machine.start(
                    plan.ticket, track: track(number), uri: uri, phase: .loading(start: nil), seekable: true)
            }
        case 1:
            guard let (ticket, track) = world.loads.randomElement(using: &random) else { return [] }
            let uri = uri(ticket)
            world.uris.append(uri)
            _ = world.machine.start(ticket, track: track, uri: uri, phase: .loading(start: nil), seekable: true)
        case 2:
            guard let (ticket, _) = world.loads.randomElement(using: &random) else { return [] }
            _ = world.machine.openFailed(ticket)
        case 3:
            let plan = world.machine.prepareNext(Bool.random(using: &random) ? track(number) : nil, uri: uri)
            if let opening = plan.opening {
                world.loads.append((opening.ticket, opening.track))
                world.uris.append(opening.uri)
            }
        case 4:
            guard let next = world.machine.next else { return [] }
            if Bool.random(using: &random) {
                _ = world.machine.nextOpened(
                    next.ticket, seekable: Bool.random(using: &random),
                    mayBeMedia: Int.random(in: 0..<5, using: &random) > 0)
            } else {
                world.machine.nextFailed(next.ticket)
            }
        case 5:
            _ = world.machine.aboutToFinish()
        case 6:
            let uri = world.uris.randomElement(using: &random)
            let start = world.machine.streamStarted(
                uri: uri, positionAtSwitch: .milliseconds(Int64.random(in: 0...2000, using: &random)), rate: 1)
            switch start {
            case .first(let id): return [.trackStarted(id)]
            case .handedOver: return []
            case .none: return []
            }
        case 7:
            switch Int.random(in: 0..<3, using: &random) {
            case 0: return world.machine.heard(TrackID(number))
            case 1: return world.machine.tailPlayed(TrackID(number), audioFlowing: Bool.random(using: &random))
            default: return world.machine.audioFlowing()
            }
        case 8:
            return world.machine.endOfStream()
        case 9:
            let origins = world.uris.map(StreamOrigin.stream) + [.pipeline, .detached]
            switch world.machine.route(errorFrom: origins.randomElement(using: &random)!) {
            case .next(let uri, _):
                _ = world.machine.nextBroke(uri: uri)
            case .current(let ticket):
                let events = world.machine.failed(ticket, EngineError("broken"))
                _ = world.machine.teardown()
                return events
            case .startBroke(let ticket):
                return world.machine.startBroke(ticket)
            case .none:
                break
            }
        case 10:
            _ = world.machine.teardown()
            if Bool.random(using: &random) { world.machine.cancelOpening() }
        case 11:
            world.machine.rebuilt()
            if Bool.random(using: &random) {
                world.machine.withPhase { $0.rebuild(at: .seconds(1), marker: 1, rateIsOne: false) }
            } else {
                _ = world.machine.withPhase {
                    $0.asyncDone(markersSeen: 1, filterMismatch: false, exactSeeks: true)
                }
            }
        case 12:
            let state = [TrackLifecycle.PipelineState.null, .ready, .paused, .playing].randomElement(using: &random)!
            let pending = [nil, TrackLifecycle.PipelineState.null, .ready, .paused, .playing].randomElement(
                using: &random)!
            return world.machine.pipelineChanged(to: state, pending: pending).map { [$0] } ?? []
        case 13:
            var tags = TrackTags()
            tags.title = "Title \(number)"
            let origins = world.uris.map(StreamOrigin.stream) + [.pipeline, .detached]
            return world.machine.tagsRead(tags, from: origins.randomElement(using: &random)!).map { [$0] } ?? []
        default:
            guard let (ticket, _) = world.loads.randomElement(using: &random) else { return [] }
            return world.machine.durationKnown(.seconds(Int64(number)), for: ticket).map { [$0] } ?? []
        }
        return []
    }

    @Test(arguments: 0..<400)
    func theRulesHoldOverARandomSequence(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var world = World()
        for index in 0..<60 {
            let before = world.machine
            let events = Self.step(&world, &random)
            let current = world.machine.current
            for event in events {
                switch event {
                case .trackStarted(let id), .endOfTrack(let id), .seekable(let id, _), .failed(let id?, _),
                    .described(let id, _, _):
                    // A failure's events come before its teardown: the track was current then.
                    let named = current?.track.id ?? before.current?.track.id
                    // A handed-over track that broke before it was heard: the one before it ends.
                    let endOfPrevious = event == .endOfTrack(id) && id == before.unannounced?.previous
                    #expect(
                        id == named || endOfPrevious, "seed \(seed) step \(index): \(event) names no current track")
                default:
                    break
                }
                if case .trackStarted(let id) = event {
                    let ticket = try! #require(current?.ticket ?? before.current?.ticket)
                    #expect(ticket.track == id)
                    world.reports[ticket, default: 0] += 1
                    #expect(world.reports[ticket] == 1, "seed \(seed) step \(index): \(ticket) reported started twice")
                }
            }
            // A hand-over makes current exactly the track that was handed over.
            if let next = before.next, case .handedOver = next.stage, world.machine.current?.ticket == next.ticket {
                #expect(world.machine.current?.track == next.track)
            }
            if let current = world.machine.current, let next = world.machine.next {
                #expect(current.ticket != next.ticket, "seed \(seed): one ticket in two places")
            }
        }
        // Whatever happened, a stop and a load play again: Next and Play work after any failure.
        _ = world.machine.teardown()
        let plan = world.machine.load(Self.track(9))
        let uri = Self.uri(plan.ticket)
        let changed161 = world.machine.start(plan.ticket, track: Self.track(9), uri: uri, phase: .ready, seekable: true)
        #expect(changed161)
        #expect(world.machine.streamStarted(uri: uri, positionAtSwitch: nil, rate: 1) == .first(TrackID(9)))
    }
}
