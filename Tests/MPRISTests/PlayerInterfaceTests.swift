import DBusKit
import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

@testable import MPRIS

/// A started service on a recording bus, over a real player whose fake engine answers its
/// commands as the real one does.
struct ServiceRig {
    let bus = RecordingBus()
    let engine: FakeEngine
    let player: Player
    let service: MPRISService

    init(
        engine: FakeEngine = FakeEngine(reacting: true), playlists: PlaylistLibrary? = nil,
        status: SpoolStatusProvider? = nil
    ) async {
        self.engine = engine
        player = Player(engine: engine, retryDelay: .zero, networkUp: { _ in true }, lookups: TrackLookupSources())
        service = MPRISService(
            connection: bus, player: player, resolver: TrackResolver { _ in throw PlaylistError("no network here") },
            supportedMimeTypes: ["audio/mpeg"], status: status, playlists: playlists, onQuit: {})
        await service.start()
    }

    static let player = MPRISService.playerInterface

    /// Opens `url` over OpenUri and waits until PropertiesChanged says it plays and gives its length.
    func openAndWait(_ url: String = "http://127.0.0.1:1/a.mp3") async throws -> TrackID {
        let mark = bus.mark
        _ = try await bus.call(Self.player, "OpenUri", [.string(url)])
        try await waitForLength(from: mark)
        #expect(try bus.get(Self.player, "PlaybackStatus") == .string("Playing"))
        return try #require(await player.state.nowPlaying?.entry.id)
    }

    /// Waits for the PropertiesChanged whose metadata holds the track's length: the engine's
    /// events after a load have reached the player, and the service has signalled them.
    func waitForLength(from mark: Int) async throws {
        let signal = await bus.signal(from: mark) { signal in
            signal.changes?.interface == Self.player
                && signal.changes?.values["Metadata"]?.stringVariantDictValue?["mpris:length"] != nil
        }
        try #require(signal != nil, "no length was signalled")
    }

    /// Sets a Player property and returns the PropertiesChanged that follows it.
    func set(_ property: String, _ value: DBusValue) async throws -> [String: DBusValue] {
        let mark = bus.mark
        try await bus.set(Self.player, property, value)
        return try #require(await bus.changes(from: mark, holding: property))
    }
}

/// `org.spool.Spool1` needs a cache to report on; these tests have none.
struct NoCache: SpoolStatusProvider {
    func cacheStats() -> [(name: String, value: Int64)] { [] }
    func cachedResources(namespace: String?) -> [CachedResource] { [] }
    func cacheState(of url: URL) -> CachedResource? { nil }
    func clearCache(namespace: String?) throws {}
    func prefetch(_ url: URL) throws {}
    func prefetches() -> [CachedResource] { [] }
    func downloadState(of url: URL) -> String { "" }
}

/// Whether `body` throws a D-Bus error named `name`.
func throwsDBusError(_ name: String, _ body: () async throws -> Void) async -> Bool {
    do {
        try await body()
        return false
    } catch let error as DBusError {
        return error.name == name
    } catch {
        return false
    }
}

let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"

@Suite("Player interface against a player with a fake engine, without a bus")
struct PlayerInterfaceTests {
    @Test func openUriPlaysTheTrackAndSignalsItsMetadata() async throws {
        let rig = await ServiceRig()
        #expect(try rig.bus.get(ServiceRig.player, "PlaybackStatus") == .string("Stopped"))
        let mark = rig.bus.mark
        let id = try await rig.openAndWait()
        #expect(rig.engine.loads.map(\.0) == [id])
        let metadata = try #require(
            await rig.bus.changes(from: mark, holding: "Metadata")?["Metadata"]?.stringVariantDictValue)
        #expect(metadata["mpris:trackid"] == .objectPath(MPRISService.trackPath(id)))
        #expect(try rig.bus.get(ServiceRig.player, "PlaybackStatus") == .string("Playing"))
        #expect(try rig.bus.get(ServiceRig.player, "CanPause") == .boolean(true))
        let tracks = try rig.bus.get(MPRISService.trackListInterface, "Tracks")
        #expect(tracks == .array(elementSignature: "o", [.objectPath(MPRISService.trackPath(id))]))
    }

    @Test func openUriRefusesWhatIsNoTrack() async throws {
        let rig = await ServiceRig()
        let bad: [[DBusValue]] = [
            [], [.int32(1)], [.string("")], [.string("gopher://host/a.mp3")], [.string("http://host/a b.mp3")],
            [.string("/no/such/file.mp3")], [.string("file://elsewhere/a.mp3")], [.string("a\u{1}b.mp3")],
        ]
        for arguments in bad {
            #expect(
                await throwsDBusError(invalidArgs) {
                    _ = try await rig.bus.call(ServiceRig.player, "OpenUri", arguments)
                }, "\(arguments)")
        }
        #expect(rig.engine.loads.isEmpty)
        #expect(await rig.player.state.queue.isEmpty)
    }

    @Test func playbackStatusFollowsPauseStopAndPlay() async throws {
        let rig = await ServiceRig()
        _ = try await rig.openAndWait()
        for (method, status) in [
            ("Pause", "Paused"), ("Stop", "Stopped"), ("Play", "Playing"), ("PlayPause", "Paused"),
        ] {
            let mark = rig.bus.mark
            _ = try await rig.bus.call(ServiceRig.player, method)
            let changes = try #require(await rig.bus.changes(from: mark, holding: "PlaybackStatus"), "\(method)")
            #expect(changes["PlaybackStatus"] == .string(status), "\(method)")
            #expect(try rig.bus.get(ServiceRig.player, "PlaybackStatus") == .string(status))
            #expect(try rig.bus.get(ServiceRig.player, "CanPlay") == .boolean(true))
            #expect(try rig.bus.get(ServiceRig.player, "CanPause") == .boolean(true), "the track stays current")
        }
    }

    @Test func setPositionSeeksOnlyTheCurrentTrackWithinItsLength() async throws {
        let rig = await ServiceRig()
        let id = try await rig.openAndWait()
        let track = DBusValue.objectPath(MPRISService.trackPath(id))
        for arguments: [DBusValue] in [[], [track], [.string("/x"), .int64(1)], [track, .int32(1)]] {
            #expect(
                await throwsDBusError(invalidArgs) {
                    _ = try await rig.bus.call(ServiceRig.player, "SetPosition", arguments)
                }, "\(arguments)")
        }
        let ignored: [[DBusValue]] = [
            [.objectPath(MPRISService.trackPath(TrackID(id.rawValue + 1))), .int64(1_000_000)],  // a stale id
            [track, .int64(-1)],
            [track, .int64(301_000_000)],  // past the 300 s the engine reported
        ]
        for arguments in ignored {
            _ = try await rig.bus.call(ServiceRig.player, "SetPosition", arguments)
        }
        #expect(!rig.engine.commands.contains { if case .seek = $0 { true } else { false } })
        let mark = rig.bus.mark
        _ = try await rig.bus.call(ServiceRig.player, "SetPosition", [track, .int64(42_000_000)])
        #expect(rig.engine.commands.last == .seek(.seconds(42)))
        let seeked = await rig.bus.signal(from: mark) { $0.name == "Seeked" }
        #expect(seeked?.interface == MPRISService.playerInterface)
        #expect(seeked?.arguments == [.int64(42_000_000)])
        #expect(try rig.bus.get(ServiceRig.player, "Position") == .int64(42_000_000))
        #expect(
            !rig.bus.signals.contains { $0.changes?.values["Position"] != nil },
            "Position is never in PropertiesChanged")
    }

    @Test func seekMovesByTheOffsetAndPastTheEndGoesToTheNextTrack() async throws {
        let rig = await ServiceRig()
        let mark = rig.bus.mark
        await rig.player.open([
            (URL(string: "http://127.0.0.1:1/a.mp3")!, nil), (URL(string: "http://127.0.0.1:1/b.mp3")!, nil),
        ])
        let first = try #require(await rig.player.state.nowPlaying?.entry.id)
        try await rig.waitForLength(from: mark)
        rig.engine.setPosition(.seconds(10))
        #expect(
            await throwsDBusError(invalidArgs) { _ = try await rig.bus.call(ServiceRig.player, "Seek", [.int32(5)]) })
        _ = try await rig.bus.call(ServiceRig.player, "Seek", [.int64(5_000_000)])
        #expect(rig.engine.commands.last == .seek(.seconds(15)))
        _ = try await rig.bus.call(ServiceRig.player, "Seek", [.int64(-60_000_000)])
        #expect(rig.engine.commands.last == .seek(.zero), "clamped at the start")
        _ = try await rig.bus.call(ServiceRig.player, "Seek", [.int64(Int64.max)])
        #expect(rig.engine.loads.count == 2)
        #expect(await rig.player.state.nowPlaying?.entry.id != first)
    }

    @Test func aTrackThatCannotSeekAnswersCannotSeek() async throws {
        let rig = await ServiceRig(engine: FakeEngine(reacting: true, seekable: false))
        let id = try await rig.openAndWait()
        #expect(try rig.bus.get(ServiceRig.player, "CanSeek") == .boolean(false))
        #expect(
            await throwsDBusError(MPRISService.cannotSeekError) {
                _ = try await rig.bus.call(
                    ServiceRig.player, "SetPosition", [.objectPath(MPRISService.trackPath(id)), .int64(1_000_000)])
            })
        #expect(
            await throwsDBusError(MPRISService.cannotSeekError) {
                _ = try await rig.bus.call(ServiceRig.player, "Seek", [.int64(1_000_000)])
            })
        #expect(!rig.engine.commands.contains { if case .seek = $0 { true } else { false } })
    }

    @Test func loopStatusAndShuffleTakeOnlyTheirValues() async throws {
        let rig = await ServiceRig()
        for value: DBusValue in [.string("Bogus"), .string("none"), .int32(1), .boolean(true)] {
            #expect(
                await throwsDBusError(invalidArgs) { try await rig.bus.set(ServiceRig.player, "LoopStatus", value) },
                "\(value)")
        }
        for value: DBusValue in [.string("true"), .int32(1), .double(1)] {
            #expect(
                await throwsDBusError(invalidArgs) { try await rig.bus.set(ServiceRig.player, "Shuffle", value) },
                "\(value)")
        }
        for mode in ["Track", "Playlist", "None"] {
            #expect(try await rig.set("LoopStatus", .string(mode))["LoopStatus"] == .string(mode))
        }
        #expect(try await rig.set("Shuffle", .boolean(true))["Shuffle"] == .boolean(true))
        #expect(try rig.bus.get(ServiceRig.player, "Shuffle") == .boolean(true))
    }

    @Test func rateAndVolumeAreHeldWithinTheirBounds() async throws {
        let rig = await ServiceRig()
        _ = try await rig.openAndWait()
        #expect(try rig.bus.get(ServiceRig.player, "MinimumRate") == .double(0.5))
        #expect(try rig.bus.get(ServiceRig.player, "MaximumRate") == .double(2.0))
        #expect(try await rig.set("Rate", .double(5))["Rate"] == .double(2.0))
        #expect(try await rig.set("Rate", .double(0.1))["Rate"] == .double(0.5))
        #expect(rig.engine.commands.filter { if case .rate = $0 { true } else { false } } == [.rate(2.0), .rate(0.5)])
        #expect(try await rig.set("Volume", .double(0.5))["Volume"] == .double(0.5))
        #expect(try await rig.set("Volume", .double(1.5))["Volume"] == .double(1.0))
        #expect(try await rig.set("Volume", .double(-3))["Volume"] == .double(0.0))
        for (property, value) in [("Rate", DBusValue.string("fast")), ("Volume", .boolean(true))] {
            #expect(
                await throwsDBusError(invalidArgs) { try await rig.bus.set(ServiceRig.player, property, value) },
                "\(property)")
        }
        let mark = rig.bus.mark
        try await rig.bus.set(ServiceRig.player, "Rate", .double(0))
        let changes = await rig.bus.changes(from: mark, holding: "PlaybackStatus")
        #expect(changes?["PlaybackStatus"] == .string("Paused"), "rate 0 pauses, as MPRIS asks")
        #expect(try rig.bus.get(ServiceRig.player, "Rate") == .double(0.5), "and keeps the rate")
    }

    @Test func propertiesChangedCarriesOnlyWhatChanged() async throws {
        let rig = await ServiceRig()
        _ = try await rig.openAndWait()
        let volume = try await rig.set("Volume", .double(0.5))
        #expect(Set(volume.keys) == ["Volume"])
        let mark = rig.bus.mark
        try await rig.bus.set(ServiceRig.player, "Volume", .double(0.5))
        try await rig.bus.set(ServiceRig.player, "Shuffle", .boolean(true))
        let next = try #require(await rig.bus.changes(from: mark, holding: "Shuffle"))
        #expect(Set(next.keys) == ["Shuffle"], "the same volume again changes nothing")
        #expect(!rig.bus.signals.dropFirst(mark).contains { $0.changes?.values["Volume"] != nil })
    }

    @Test func thePositionShownStaysWithTheTrackTheMetadataNames() async throws {
        let engine = FakeEngine()
        let rig = await ServiceRig(engine: engine)
        let entry = QueueEntry(id: TrackID(1), url: URL(string: "http://127.0.0.1:1/a.mp3")!)
        rig.service.published.withLock {
            $0.snapshot.nowPlaying = NowPlaying(entry: entry, tags: TrackTags(), duration: .seconds(200))
        }
        // The engine already plays the next track (a gapless hand-over the player has not seen yet).
        engine.load(
            EngineTrack(id: TrackID(2), url: URL(string: "http://127.0.0.1:1/b.mp3")!), at: .seconds(3), playing: true)
        #expect(try rig.bus.get(ServiceRig.player, "Position") == .int64(200_000_000), "the named track's end")
        rig.service.published.withLock {
            $0.snapshot.nowPlaying = NowPlaying(
                entry: QueueEntry(id: TrackID(2), url: URL(string: "http://127.0.0.1:1/b.mp3")!), tags: TrackTags(),
                duration: nil)
        }
        #expect(try rig.bus.get(ServiceRig.player, "Position") == .int64(3_000_000))
    }
}

@Suite("Failures seen through the Player and Spool interfaces")
struct FailureSignalTests {
    @Test func aTrackThatCannotOpenStopsThePlayerWithItsErrorUntilAnotherPlays() async throws {
        let engine = FakeEngine(reacting: true)
        let bad = URL(string: "http://127.0.0.1:1/gone.mp3")!
        engine.failOpening(bad, with: EngineError("HTTP status 404", kind: .notFound))
        let rig = await ServiceRig(engine: engine, status: NoCache())
        var mark = rig.bus.mark
        _ = try await rig.bus.call(MPRISService.spoolInterface, "Play", [.stringArray([bad.absoluteString])])
        let error = await rig.bus.changes(of: MPRISService.spoolInterface, from: mark, holding: "LastError")
        #expect(error?["LastError"]?.stringValue?.contains("404") == true)
        #expect(try rig.bus.get(MPRISService.spoolInterface, "LastError").stringValue?.contains("404") == true)
        #expect(engine.loadedTrack == nil, "the engine forgot the track")
        mark = rig.bus.mark
        _ = try await rig.bus.call(MPRISService.spoolInterface, "Play", [.stringArray(["http://127.0.0.1:1/b.mp3"])])
        try await rig.waitForLength(from: mark)
        #expect(try rig.bus.get(ServiceRig.player, "PlaybackStatus") == .string("Playing"))
        let cleared = await rig.bus.changes(of: MPRISService.spoolInterface, from: mark, holding: "LastError")
        #expect(cleared?["LastError"] == .string(""))
    }
}
