import DBusKit
import Foundation
import TestSupport
import Testing

let playerPath = "/org/mpris/MediaPlayer2"

extension RunningDaemon {
    /// Calls an MPRIS method.
    @discardableResult
    func mpris(_ interface: String, _ method: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await client.call(
            destination: busName, path: playerPath, interface: interface, method: method, arguments: arguments)
    }

    /// Reads an MPRIS property.
    func property(_ interface: String, _ name: String) async throws -> DBusValue? {
        try await mpris("org.freedesktop.DBus.Properties", "Get", [.string(interface), .string(name)]).first?
            .variantValue
    }

    /// Sets an MPRIS property.
    func set(_ interface: String, _ name: String, _ value: DBusValue) async throws {
        try await mpris("org.freedesktop.DBus.Properties", "Set", [.string(interface), .string(name), .variant(value)])
    }

    /// Waits (polling the other process) until a property satisfies `accept`; false, with what it
    /// last read recorded, if it does not within 10 s.
    func waitForProperty(_ interface: String, _ name: String, _ accept: (DBusValue?) -> Bool) async throws -> Bool {
        do {
            _ = try await awaitValue("\(name)", interval: .milliseconds(10)) {
                try await property(interface, name)
            } until: {
                accept($0)
            }
            return true
        } catch let error as RigError {
            Issue.record(error)
            return false
        }
    }
}

@Suite("Queue, playlists and the TrackList over MPRIS", .serialized)
struct QueueOverMPRISTests {
    @Test func openingAnHTTPPlaylistQueuesItsEntriesWithTitles() async throws {
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory()
        for fixture in [fixtures.fixture(.oggVorbis), fixtures.fixture(.wav)] {
            try FileManager.default.copyItem(at: fixture.url, to: dir.file(fixture.fileName))
        }
        // The first entry lasts long enough to still be playing when the test looks.
        let first = try longTone(seconds: 30, in: dir)
        let m3u = """
            #EXTM3U
            #EXTINF:30,First In List
            \(first.lastPathComponent)
            \(fixtures.fixture(.oggVorbis).fileName)
            \(fixtures.fixture(.wav).fileName)
            """
        try Data(m3u.utf8).write(to: dir.file("list.m3u"))
        let server = try NginxServer(serving: dir.url)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        try await daemon.mpris(
            "org.mpris.MediaPlayer2.Player", "OpenUri", [.string(server.url(for: "list.m3u").absoluteString)])
        let tracksReady = try await daemon.waitForProperty("org.mpris.MediaPlayer2.TrackList", "Tracks") {
            $0?.arrayValues?.count == 3
        }
        #expect(tracksReady)
        let tracks = try await daemon.property("org.mpris.MediaPlayer2.TrackList", "Tracks")?.arrayValues ?? []
        let metadata = try await daemon.mpris(
            "org.mpris.MediaPlayer2.TrackList", "GetTracksMetadata", [.array(elementSignature: "o", tracks)])
        let maps = metadata.first?.arrayValues?.compactMap(\.stringVariantDictValue) ?? []
        #expect(maps.count == 3)
        #expect(maps.last?["xesam:url"]?.stringValue == server.url(for: fixtures.fixture(.wav).fileName).absoluteString)
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
        #expect(try await daemon.playerctl("metadata", "xesam:url").stdout.contains(first.lastPathComponent))
        #expect(
            try await daemon.playerctl("metadata", "title").stdout.contains("First In List"),
            "the EXTINF title until tags say otherwise")
        #expect(try await daemon.property("org.mpris.MediaPlayer2.Player", "CanGoNext")?.boolValue == true)

        // GoTo the last, then remove it: playback moves on (nothing after it: stopped).
        try await daemon.mpris("org.mpris.MediaPlayer2.TrackList", "GoTo", [tracks[2]])
        _ = try await daemon.waitForPlayerctl(["metadata", "xesam:url"]) {
            $0.contains(fixtures.fixture(.wav).fileName)
        }
        try await daemon.mpris("org.mpris.MediaPlayer2.TrackList", "RemoveTrack", [tracks[2]])
        #expect(
            try await daemon.waitForProperty("org.mpris.MediaPlayer2.TrackList", "Tracks") {
                $0?.arrayValues?.count == 2
            })
    }

    @Test func loopStatusAndShuffleAreSettableAndBadValuesAreRefused() async throws {
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        #expect(try await daemon.property("org.mpris.MediaPlayer2.Player", "LoopStatus")?.stringValue == "None")
        try await daemon.set("org.mpris.MediaPlayer2.Player", "LoopStatus", .string("Playlist"))
        #expect(
            try await daemon.waitForProperty("org.mpris.MediaPlayer2.Player", "LoopStatus") {
                $0?.stringValue == "Playlist"
            })
        await #expect(throws: DBusError.self) {
            try await daemon.set("org.mpris.MediaPlayer2.Player", "LoopStatus", .string("Sometimes"))
        }
        try await daemon.set("org.mpris.MediaPlayer2.Player", "Shuffle", .boolean(true))
        #expect(try await daemon.waitForProperty("org.mpris.MediaPlayer2.Player", "Shuffle") { $0?.boolValue == true })
        #expect(try await daemon.playerctl("loop").stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "Playlist")
        #expect(daemon.process.isRunning)
    }

    @Test func aSeekSendsExactlyOneSeekedSignalAndPlayPauseSendNone() async throws {
        let media = try TemporaryDirectory()
        let long = try longTone(seconds: 20, in: media)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let stream = try await daemon.client.subscribe(
            matching: "type='signal',interface='org.mpris.MediaPlayer2.Player',member='Seeked'")
        let log = SignalLog()
        let listener = Task { for await message in stream { await log.append(message) } }
        defer { listener.cancel() }

        #expect(try await daemon.playerctl("open", long.absoluteString).status == 0)
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.2 }
        #expect(try await daemon.playerctl("pause").status == 0)
        #expect(try await daemon.playerctl("play").status == 0)
        #expect(try await daemon.playerctl("position", "10").status == 0)
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) >= 10 }
        #expect(await log.waitFor { !$0.isEmpty }, "no Seeked arrived")
        // A duplicate would already be queued behind the first: a Ping round trip
        // orders after everything the daemon has sent so far.
        _ = try await daemon.mpris("org.freedesktop.DBus.Peer", "Ping")
        let seeked = await log.items
        #expect(seeked.count == 1, "\(seeked)")
        let position = seeked.first?.arguments.first?.int64Value ?? 0
        #expect(abs(position - 10_000_000) < 50_000, "Seeked at \(position) µs")
    }
}
