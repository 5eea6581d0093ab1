import DBusKit
import Foundation
import TestSupport
import Testing

private let rootInterface = "org.mpris.MediaPlayer2"
private let playerInterface = "org.mpris.MediaPlayer2.Player"
private let trackListInterface = "org.mpris.MediaPlayer2.TrackList"
private let propertiesInterface = "org.freedesktop.DBus.Properties"

/// Property name → type signature, per interface, as dbus/org.mpris.MediaPlayer2.xml declares them.
func checkedInPropertyTypes() throws -> [String: [String: String]] {
    let xml = try String(
        contentsOf: repositoryRoot.appendingPathComponent("dbus/org.mpris.MediaPlayer2.xml"), encoding: .utf8)
    func attribute(_ name: String, _ line: String) -> String? {
        guard let start = line.range(of: " \(name)=\"") else { return nil }
        return String(line[start.upperBound...].prefix { $0 != "\"" })
    }
    return interfaceBlocks(xml).mapValues { lines in
        var types: [String: String] = [:]
        for line in lines where line.hasPrefix("<property ") {
            if let name = attribute("name", line), let type = attribute("type", line) { types[name] = type }
        }
        return types
    }
}

/// The types the MPRIS specification gives the metadata keys Spool sends.
let metadataTypes: [String: String] = [
    "mpris:trackid": "o", "mpris:length": "x", "mpris:artUrl": "s", "xesam:url": "s", "xesam:title": "s",
    "xesam:artist": "as", "xesam:album": "s", "xesam:albumArtist": "as", "xesam:genre": "as",
    "xesam:trackNumber": "i", "xesam:discNumber": "i", "xesam:comment": "as", "xesam:contentCreated": "s",
    "xesam:audioBitrate": "i",
]

/// Everything the daemon signals at its MPRIS object, recorded as it arrives.
final class MPRISSignals {
    private let daemon: RunningDaemon
    private let log = SignalLog()
    /// This connection's own marker signals (see ``flushed()``), kept apart from the daemon's.
    private let markers = SignalLog()
    private let listener: Task<Void, Never>
    private static let markerInterface = "org.spool.Test.Marker"

    init(_ daemon: RunningDaemon) async throws {
        self.daemon = daemon
        let stream = try await daemon.client.subscribe(matching: "type='signal',path='\(playerPath)'")
        let log = self.log
        let markers = self.markers
        let markerInterface = Self.markerInterface
        listener = Task {
            for await message in stream {
                if message.interface == markerInterface {
                    await markers.append(message)
                } else {
                    await log.append(message)
                }
            }
        }
    }

    deinit { listener.cancel() }

    /// How many signals have arrived: a mark for ``since(_:until:)``.
    var mark: Int { get async { await log.items.count } }

    /// Waits until a signal after `mark` satisfies `expected`, then returns every daemon
    /// signal after `mark` up to that point and beyond: all the daemon sent before it answered
    /// a Ping sent after the expected one arrived (the bus keeps one sender's messages in order).
    func since(_ mark: Int, until expected: (DBusSignalMessage) -> Bool) async throws -> [DBusSignalMessage] {
        var found = false
        for _ in 0..<1000 {
            if await log.items.dropFirst(mark).contains(where: expected) {
                found = true
                break
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        if !found {
            Issue.record("the expected signal never came; got \(await log.items.dropFirst(mark).map(describe))")
        }
        return Array(try await flushed().dropFirst(mark))
    }

    /// Waits until the Player state the signals tell (each property's last signalled value)
    /// satisfies `accept`: what a client that follows the signals knows.
    func waitForSignalledState(_ what: String, _ accept: ([String: DBusValue]) -> Bool) async throws {
        var state: [String: DBusValue] = [:]
        for _ in 0..<1000 {
            state = [:]
            for message in await log.items { state.merge(playerChanges(message)) { $1 } }
            if accept(state) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw RigError("the signals never told \(what); they told \(state)")
    }

    /// Waits until the signals told the current track in full (see ``trackIsKnown(_:title:)``).
    func waitUntilTrackIsKnown(title expected: String) async throws {
        try await waitForSignalledState("'\(expected)' in full") { trackIsKnown($0, title: expected) }
    }

    /// Every signal so far, once everything the daemon sent before answering a Ping is recorded.
    func flushed() async throws -> [DBusSignalMessage] {
        try await daemon.mpris("org.freedesktop.DBus.Peer", "Ping")
        // The Ping reply may overtake the recording of signals already received: a signal
        // this connection sends itself comes back behind them.
        let marker = UUID().uuidString
        daemon.client.emitSignal(
            path: playerPath, interface: Self.markerInterface, name: "Marker", arguments: [.string(marker)])
        for _ in 0..<1000 {
            if await markers.items.contains(where: { $0.arguments.first?.stringValue == marker }) {
                return await log.items
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw RigError("this connection's own marker signal never came back")
    }
}

/// The Player properties a PropertiesChanged carries (empty for any other signal or interface).
func playerChanges(_ message: DBusSignalMessage) -> [String: DBusValue] {
    guard message.arguments.first?.stringValue == playerInterface else { return [:] }
    return changedProperties(message)
}

func isPropertiesChanged(_ message: DBusSignalMessage) -> Bool { message.member == "PropertiesChanged" }

func describe(_ message: DBusSignalMessage) -> String {
    isPropertiesChanged(message) ? "PropertiesChanged\(playerChanges(message).keys.sorted())" : message.member
}

/// Whether Player properties (all of them, or as signalled) show the current track titled `title`
/// with its length, and that it can seek: all the engine tells of a track as it loads.
func trackIsKnown(_ properties: [String: DBusValue], title expected: String) -> Bool {
    let metadata = properties["Metadata"]?.stringVariantDictValue ?? [:]
    return metadata["xesam:title"]?.stringValue == expected && metadata["mpris:length"] != nil
        && properties["CanSeek"]?.boolValue == true
}

func title(_ changes: [String: DBusValue]) -> String? {
    changes["Metadata"]?.stringVariantDictValue?["xesam:title"]?.stringValue
}

extension RunningDaemon {
    /// Waits (polling GetAll) until the current track is known in full (see ``trackIsKnown(_:title:)``).
    func waitUntilTrackIsKnown(title expected: String) async throws {
        var last: [String: DBusValue] = [:]
        for _ in 0..<500 {
            last = try await allProperties(playerInterface).values
            if trackIsKnown(last, title: expected) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw RigError("'\(expected)' never became known in full: \(last)")
    }

    /// GetAll on `interface`, as a dictionary (and the reply's own signature).
    func allProperties(_ interface: String) async throws -> (
        signature: String?, count: Int, values: [String: DBusValue]
    ) {
        let reply = try await mpris(propertiesInterface, "GetAll", [.string(interface)]).first
        return (reply?.signature, reply?.dictionaryEntries?.count ?? 0, reply?.stringVariantDictValue ?? [:])
    }
}

@Suite("MPRIS seen by a D-Bus client: property types and signals", .serialized)
struct MPRISClientContractTests {
    @Test func everyPropertyHasTheTypeOfTheCheckedInXMLIdleAndPlaying() async throws {
        let declared = try checkedInPropertyTypes()
        #expect(
            Set(declared.keys) == [
                rootInterface, playerInterface, trackListInterface, "org.mpris.MediaPlayer2.Playlists",
            ])
        #expect(declared[playerInterface]?.count == 15)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()

        func expectDeclaredTypes(_ state: String) async throws {
            for (interface, types) in declared {
                let all = try await daemon.allProperties(interface)
                #expect(all.signature == "a{sv}")
                #expect(all.count == types.count, "\(state): GetAll \(interface) sent \(all.count) entries")
                #expect(Set(all.values.keys) == Set(types.keys), "\(state): GetAll \(interface)")
                for (name, type) in types {
                    #expect(all.values[name]?.signature == type, "\(state): GetAll \(interface).\(name)")
                    #expect(
                        try await daemon.property(interface, name)?.signature == type,
                        "\(state): Get \(interface).\(name)")
                }
            }
        }
        try await expectDeclaredTypes("idle")

        // Playing a tagged track that repeats, so it is still playing when looked at.
        let track = try Fixtures.shared().fixture(.flac)
        try await daemon.set(playerInterface, "LoopStatus", .string("Track"))
        #expect(try await daemon.waitForProperty(playerInterface, "LoopStatus") { $0?.stringValue == "Track" })
        try await daemon.mpris(playerInterface, "OpenUri", [.string(track.url.absoluteString)])
        try await daemon.waitUntilTrackIsKnown(title: track.title)
        #expect(try await daemon.property(playerInterface, "PlaybackStatus")?.stringValue == "Playing")
        try await expectDeclaredTypes("playing")

        let metadata = try await daemon.property(playerInterface, "Metadata")?.stringVariantDictValue ?? [:]
        for key in [
            "mpris:trackid", "mpris:length", "xesam:url", "xesam:title", "xesam:artist", "xesam:album",
            "xesam:trackNumber",
        ] {
            #expect(metadata[key] != nil, "no \(key) in \(metadata)")
        }
        for (key, value) in metadata {
            #expect(value.signature == metadataTypes[key], "metadata \(key) is \(value.signature)")
        }
        #expect(metadata["xesam:artist"]?.stringArrayValue == [track.artist])
        #expect(metadata["xesam:trackNumber"]?.int32Value == track.trackNumber.map(Int32.init))
    }

    @Test func eachActionSendsExactlyItsOwnChanges() async throws {
        let fixtures = try Fixtures.shared()
        let media = try TemporaryDirectory()
        let long = try longTone(seconds: 20, in: media)
        let list = media.file("three.m3u")
        let second = fixtures.fixture(.flac)
        let third = fixtures.fixture(.oggVorbis)
        try Data("#EXTM3U\n#EXTINF:20,Long Tone\n\(long.path)\n\(second.url.path)\n\(third.url.path)\n".utf8).write(
            to: list)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let signals = try await MPRISSignals(daemon)

        /// Runs `action`, waits for the signal `expected` describes, and returns the signals it caused.
        func signalsOf(
            _ action: () async throws -> Void, until expected: @escaping (DBusSignalMessage) -> Bool
        ) async throws -> [DBusSignalMessage] {
            let mark = await signals.mark
            try await action()
            return try await signals.since(mark, until: expected)
        }
        func status(_ value: String) -> (DBusSignalMessage) -> Bool {
            { playerChanges($0)["PlaybackStatus"]?.stringValue == value }
        }

        // Open: the first change says Playing and carries the first track's metadata; the queue is replaced.
        var got = try await signalsOf(
            { try await daemon.mpris(playerInterface, "OpenUri", [.string(list.absoluteString)]) },
            until: status("Playing"))
        let opened = playerChanges(try #require(got.first(where: isPropertiesChanged)))
        #expect(opened["PlaybackStatus"]?.stringValue == "Playing")
        #expect(title(opened) == "Long Tone", "\(opened)")
        #expect(got.filter { $0.member == "TrackListReplaced" }.first?.arguments.first?.arrayValues?.count == 3)
        try await signals.waitUntilTrackIsKnown(title: "Long Tone")
        #expect(!(try await signals.flushed()).contains { $0.member == "Seeked" }, "no Seeked for starting at 0")
        let trackIDs = try await daemon.property(trackListInterface, "Tracks")?.arrayValues ?? []
        #expect(trackIDs.count == 3)
        // The queue's other entries have their tags read after the first audio; what they bring
        // (TrackMetadataChanged) belongs to no action below.
        var listed: [String] = []
        for _ in 0..<1000 {
            let reply = try await daemon.mpris(
                trackListInterface, "GetTracksMetadata", [.array(elementSignature: "o", trackIDs)])
            listed =
                reply.first?.arrayValues?.compactMap { $0.stringVariantDictValue?["xesam:title"]?.stringValue } ?? []
            if listed == ["Long Tone", second.title, third.title] { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(listed == ["Long Tone", second.title, third.title])
        // The signals that tell a client so follow the state after the daemon's coalescing
        // delay: wait for them too, or one lands among the next action's own.
        for title in [second.title, third.title] {
            _ = try await signals.since(0) {
                $0.member == "TrackMetadataChanged"
                    && $0.arguments.dropFirst().first?.stringVariantDictValue?["xesam:title"]?.stringValue == title
            }
        }
        _ = try await signals.flushed()

        // Pause, Play, Volume: one PropertiesChanged each, with only that property.
        for (method, value) in [("Pause", "Paused"), ("Play", "Playing")] {
            got = try await signalsOf({ try await daemon.mpris(playerInterface, method) }, until: status(value))
            #expect(got.map(describe) == ["PropertiesChanged[\"PlaybackStatus\"]"], "\(method)")
        }
        got = try await signalsOf({ try await daemon.set(playerInterface, "Volume", .double(0.5)) }) {
            playerChanges($0)["Volume"] != nil
        }
        #expect(got.count == 1 && playerChanges(got[0]) == ["Volume": .double(0.5)], "\(got.map(describe))")

        // Loop: the mode, and what it changes about where Previous can go.
        for (mode, canGoPrevious) in [("Playlist", true), ("None", false)] {
            got = try await signalsOf({ try await daemon.set(playerInterface, "LoopStatus", .string(mode)) }) {
                playerChanges($0)["LoopStatus"] != nil
            }
            #expect(got.count == 1, "\(got.map(describe))")
            let changes = got.first.map(playerChanges) ?? [:]
            #expect(changes["LoopStatus"]?.stringValue == mode)
            #expect(changes["CanGoPrevious"]?.boolValue == canGoPrevious)
            #expect(Set(changes.keys).isSubset(of: ["LoopStatus", "CanGoNext", "CanGoPrevious"]), "\(changes.keys)")
        }

        // Seeks: exactly one Seeked each, at the target, and no PropertiesChanged.
        let setPositionSent = ContinuousClock.now
        got = try await signalsOf(
            {
                try await daemon.mpris(playerInterface, "SetPosition", [trackIDs[0], .int64(10_000_000)])
            }, until: { $0.member == "Seeked" })
        #expect(got.map(\.member) == ["Seeked"])
        #expect(abs((got.first?.arguments.first?.int64Value ?? 0) - 10_000_000) < 50_000)
        // A relative seek counts from where the track is when the call arrives: past the position
        // read here, and short of what the track can have played since the absolute seek was sent
        // (a loaded machine plays on meanwhile, however long it takes).
        let before = try await daemon.property(playerInterface, "Position")?.int64Value ?? 0
        got = try await signalsOf({ try await daemon.mpris(playerInterface, "Seek", [.int64(2_000_000)]) }) {
            $0.member == "Seeked"
        }
        let played = Int64((ContinuousClock.now - setPositionSent) / .microseconds(1))
        #expect(got.map(\.member) == ["Seeked"])
        let landed = got.first?.arguments.first?.int64Value ?? 0
        #expect(
            landed >= before + 2_000_000 - 50_000 && landed <= 12_000_000 + played + 50_000,
            "Seek +2 s from \(before) µs landed at \(landed) µs, \(played) µs after the seek to 10 s was sent")

        // Next: the new track's metadata and what can be done with it. A loaded track is announced at
        // once (titled by its file name), then with its tags, length and seekability: two changes at most.
        var mark = await signals.mark
        try await daemon.mpris(playerInterface, "Next")
        try await signals.waitUntilTrackIsKnown(title: second.title)
        // Title and length may come from the queue's read-ahead; the engine's own description
        // (the track number among its tags) completes the change, and belongs to Next too.
        try await signals.waitForSignalledState("the engine's tags of '\(second.title)'") {
            $0["Metadata"]?.stringVariantDictValue?["xesam:trackNumber"]?.int32Value.map(Int.init)
                == second.trackNumber
        }
        got = try await signals.since(mark) { _ in true }
        var changes = got.filter(isPropertiesChanged).map(playerChanges)
        #expect(
            (1...2).contains(changes.count),
            "Next sent \(got.map(describe)): \(changes.compactMap { $0["Metadata"]?.stringVariantDictValue?.keys.sorted() })"
        )
        #expect(changes.first?["Metadata"]?.stringVariantDictValue?["mpris:trackid"] == trackIDs[1], "\(changes)")
        #expect(changes.first?["CanGoPrevious"]?.boolValue == true)
        #expect(
            changes.allSatisfy { Set($0.keys).isSubset(of: ["Metadata", "CanGoPrevious", "CanSeek"]) }, "\(changes)")
        #expect(!got.contains { $0.member == "Seeked" })

        // Stop, then Play: just the status each time (the track's metadata stays), and no Seeked for starting at 0.
        let nextMetadata = try await daemon.property(playerInterface, "Metadata")?.stringVariantDictValue ?? [:]
        got = try await signalsOf({ try await daemon.mpris(playerInterface, "Stop") }, until: status("Stopped"))
        let stopMetadata = got.compactMap { playerChanges($0)["Metadata"]?.stringVariantDictValue }.last ?? [:]
        #expect(
            got.map(describe) == ["PropertiesChanged[\"PlaybackStatus\"]"],
            "changed: \(Set(nextMetadata.keys).union(stopMetadata.keys).filter { !stopMetadata.isEmpty && nextMetadata[$0] != stopMetadata[$0] }.map { "\($0): \(String(describing: nextMetadata[$0])) → \(String(describing: stopMetadata[$0]))" })"
        )
        let stoppedMetadata = try await daemon.property(playerInterface, "Metadata")?.stringVariantDictValue ?? [:]
        mark = await signals.mark
        try await daemon.mpris(playerInterface, "Play")
        // Playing for a while: the engine has told all it learnt when loading the track again.
        #expect(try await daemon.waitForProperty(playerInterface, "Position") { ($0?.int64Value ?? 0) > 300_000 })
        got = try await signals.since(mark, until: status("Playing"))
        let playingMetadata = got.compactMap { playerChanges($0)["Metadata"]?.stringVariantDictValue }.last ?? [:]
        let differing = Set(stoppedMetadata.keys).union(playingMetadata.keys).filter {
            !playingMetadata.isEmpty && stoppedMetadata[$0] != playingMetadata[$0]
        }
        #expect(
            got.map(describe) == ["PropertiesChanged[\"PlaybackStatus\"]"],
            "Metadata keys that changed: \(differing.map { "\($0): \(String(describing: stoppedMetadata[$0])) → \(String(describing: playingMetadata[$0]))" })"
        )

        // The automatic change to the third track, without a gap: one change, with the tags read ahead.
        mark = await signals.mark
        got = try await signals.since(mark) { title(playerChanges($0)) == third.title }
        changes = got.filter(isPropertiesChanged).map(playerChanges)
        #expect(
            changes.count == 1,
            "the track change sent \(got.map(describe)): \(changes.map { $0.mapValues { "\($0)" } })")
        let handedOver = changes.first?["Metadata"]?.stringVariantDictValue ?? [:]
        #expect(handedOver["mpris:trackid"] == trackIDs[2])
        #expect(handedOver["xesam:artist"]?.stringArrayValue == [third.artist])
        // It plays to the end: the queue ends, playback stops, and nothing more changed on the way.
        got = try await signals.since(mark + got.count, until: status("Stopped"))
        #expect(got.filter(isPropertiesChanged).count <= 2, "\(got.map(describe))")
        // The new track's length arrives with the hand-over (WAV and M4A post no DURATION_CHANGED).
        #expect(
            handedOver["mpris:length"] != nil
                || got.contains { playerChanges($0)["Metadata"]?.stringVariantDictValue?["mpris:length"] != nil })

        let all = try await signals.flushed()
        #expect(!all.contains { playerChanges($0)["Position"] != nil }, "Position is never signalled")
    }
}
