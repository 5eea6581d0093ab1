import EngineAPI
import Foundation
import PlayerCore
import Testing

/// A station queued once with its other servers: a server that fails gives way to the next at
/// once, as the same entry; only when none is left does the failure policy decide.
@Suite("Playback machine: a station's mirrors")
struct StationMirrorPlaybackTests {
    static let servers = ["http://a.example:8000/jazz", "http://b.example/jazz", "http://c.example/jazz"].map {
        URL(string: $0)!
    }
    static let news = URL(string: "http://news.example/live")!

    static func loads(_ step: PlaybackStep) -> [EngineTrack] {
        MachineRig.commands(step).compactMap { if case .load(let track, _, _) = $0 { track } else { nil } }
    }

    static func savedSessions(_ step: PlaybackStep) -> [SavedSession] {
        step.effects.compactMap { if case .saveSession(let session) = $0 { session } else { nil } }
    }

    /// The station and a second station after it, the first loaded and playing.
    static func openStation() -> MachineRig {
        var rig = MachineRig()
        rig.apply(
            .open([
                TrackItem(url: servers[0], title: "Jazz Radio", mirrors: Array(servers.dropFirst())),
                TrackItem(url: news),
            ]))
        return rig
    }

    @Test func eachFailingServerGivesWayToTheNextThenThePolicyDecides() {
        var rig = Self.openStation()
        var failing = rig.id(0)
        for (index, kind) in [FailureKind.unreachable, .notFound].enumerated() {
            let step = rig.apply(.engine(.failed(failing, EngineError("server \(index) failed", kind: kind))))
            let loads = Self.loads(step)
            #expect(loads.map(\.url) == [Self.servers[index + 1]], "\(step.effects)")
            #expect(loads.first?.id == failing, "the same entry, at its next server")
            #expect(rig.machine.queue.entries.count == 2, "the station stays one entry")
            let entry = rig.machine.queue.entries[0]
            #expect(entry.url == Self.servers[index + 1] && entry.title == "Jazz Radio")
            #expect(entry.mirrors == Array(Self.servers.dropFirst(index + 2)))
            #expect(rig.currentIndex == 0 && rig.status == .playing)
            #expect(
                rig.machine.snapshot.nowPlaying?.entry.url == Self.servers[index + 1], "MPRIS shows the server playing")
            #expect(Self.savedSessions(step).last?.entries.first?.url == Self.servers[index + 1])
            failing = entry.id
        }
        // No mirror left: a permanent failure skips to the next station.
        let step = rig.apply(.engine(.failed(failing, EngineError("gone", kind: .notFound))))
        #expect(Self.loads(step).map(\.url) == [Self.news])
        #expect(rig.machine.snapshot.lastError?.contains("gone") == true)
    }

    @Test(arguments: [FailureKind.outputLost, .newVersion])
    func aFailureNoServerCausedStaysOnTheServer(_ kind: FailureKind) {
        var rig = Self.openStation()
        let step = rig.apply(.engine(.failed(rig.id(0), EngineError("not the server", kind: kind))))
        #expect(!Self.loads(step).contains { $0.url != Self.servers[0] }, "\(step.effects)")
        #expect(rig.machine.queue.entries[0].url == Self.servers[0])
        #expect(rig.machine.queue.entries[0].mirrors.count == 2)
    }

    @Test func withTheNetworkDownTheStationWaitsInsteadOfRunningThroughItsServers() {
        var rig = Self.openStation()
        rig.networkUp = false
        let step = rig.apply(.engine(.failed(rig.id(0), EngineError("no route", kind: .unreachable))))
        #expect(Self.loads(step).isEmpty)
        #expect(step.effects.contains { if case .waitForNetwork = $0 { true } else { false } })
        #expect(rig.machine.queue.entries[0].mirrors.count == 2)
    }

    @Test func theServersLeftAreSavedAndRestoredWithTheSession() throws {
        var rig = Self.openStation()
        let step = rig.apply(.engine(.failed(rig.id(0), EngineError("refused", kind: .unreachable))))
        let saved = try #require(Self.savedSessions(step).last)
        #expect(saved.entries.map(\.mirrors) == [[Self.servers[2]], nil])
        // Through the store's encoding, as a restart reads it.
        let decoded = try JSONDecoder().decode(SavedSession.self, from: try JSONEncoder().encode(saved))
        var restarted = MachineRig()
        restarted.apply(.restore(decoded))
        #expect(restarted.machine.queue.entries.map(\.url) == [Self.servers[1], Self.news])
        #expect(restarted.machine.queue.entries.map(\.mirrors) == [[Self.servers[2]], []])
    }

    @Test func aSessionSavedWithoutMirrorsStillRestores() throws {
        let json =
            Data(
                #"{"version":1,"entries":[{"url":"http:\/\/a.example\/jazz"}],"currentIndex":0,"position":[0,0],"#
                    .utf8) + Data(#""loop":"None","shuffle":false,"rate":1,"volume":1}"#.utf8)
        let session = try JSONDecoder().decode(SavedSession.self, from: json)
        #expect(session.entries.first?.mirrors == nil)
        var rig = MachineRig()
        rig.apply(.restore(session))
        #expect(rig.machine.queue.entries.map(\.mirrors) == [[]])
    }
}
