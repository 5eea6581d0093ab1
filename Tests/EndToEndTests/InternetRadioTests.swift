import DBusKit
import Foundation
import TestSupport
import Testing

// The real `spool daemon` on a private bus playing a fault-injecting radio station on loopback
// (an endless 128 kbit/s MP3 in real time, ICY titles every 16 000 audio bytes): titles reach
// MPRIS when their audio is heard, split into artist and title with the station as the album;
// nothing is written to the cache; a dropped connection reconnects with no audible gap.

/// One test's station, bus, sound server and daemon.
final class RadioCase {
    let rig: NetworkRig
    let station: RadioStation
    let player: PlayerProcess
    let connection: DBusConnection
    let probe: PlayerProbe

    /// The station's audio bytes per second (128 kbit/s).
    static let byteRate = 16_000

    init(settings: RadioSettings, faults: RadioFaults = RadioFaults(), recordAudio: Bool = false) async throws {
        rig = try NetworkRig(recordAudio: recordAudio, lifetime: 120)
        let audio = try Data(contentsOf: try NetworkMedia.tone(.mp3CBR, seconds: 30))
        station = try RadioStation(audio: audio, bytesPerSecond: Self.byteRate, lifetime: 120, settings: settings)
        station.setFaults(faults)
        player = try rig.startSpool(executable: try spoolExecutable(), logLevel: "debug", lifetime: 100)
            .keepingTestLog()
        connection = try DBusConnection(address: rig.bus.address)
        probe = PlayerProbe(
            remote: DBusMPRISRemote(connection: connection, busName: player.busName), player: player, rig: rig)
        try await probe.waitUntilReady()
    }

    /// The Player's Metadata as a dictionary.
    func metadata() async throws -> [String: DBusValue] {
        try await property("Metadata", of: "org.mpris.MediaPlayer2.Player")?.stringVariantDictValue ?? [:]
    }

    /// A property of the daemon's object.
    func property(_ name: String, of interface: String) async throws -> DBusValue? {
        try await connection.call(
            destination: player.busName, path: "/org/mpris/MediaPlayer2", interface: "org.freedesktop.DBus.Properties",
            method: "Get", arguments: [.string(interface), .string(name)]
        ).first?.variantValue
    }

    /// The regular files under the daemon's cache folder and their sizes.
    func cacheFiles() -> [String: Int] { cachedFiles(of: player) }

    func context() -> String { "daemon log:\n\(player.logTail(60))\nstation requests: \(station.requests())" }
}

@Suite("Internet radio", .serialized)
struct InternetRadioTests {
    /// A title every 3 s of audio, from 2 s on.
    static let titles = (0..<8).map { index in
        TitleChange(atAudioByte: Int64((2 + 3 * index) * RadioCase.byteRate), "Artist \(index) - Song \(index)")
    }

    @Test func titlesReachMPRISWhenTheirAudioIsHeardSplitWithTheStationAndNothingIsCached() async throws {
        let radio = try await RadioCase(
            settings: RadioSettings(icyName: "Test FM", icyGenre: "Jazz", icyBitrate: 128, titles: Self.titles))
        let opened = try await radio.probe.open(radio.station.url)
        let started = try await radio.probe.awaitAdvancing(since: opened)
        #expect(started < 3, "open → position advancing took \(started) s")
        let request = try #require(
            try await radio.station.waitForRequests(atLeast: 1).first { $0.target == "/stream.mp3" })
        #expect(request.icyMetaData == "1", "the daemon asks for in-stream titles")
        // Where the daemon's stream starts in the station's audio: its position p hears byte
        // start + p × rate (a CBR stream).
        let start = request.startAudioByte

        var seen: [(title: String, artist: [String], album: String?, heardAt: Double)] = []
        let deadline = ContinuousClock.now + .seconds(20)
        while seen.count < 4, ContinuousClock.now < deadline {
            let metadata = try await radio.metadata()
            let position = Double(try await radio.probe.remote.positionMicroseconds()) / 1e6
            let title = metadata["xesam:title"]?.stringValue ?? ""
            if title.hasPrefix("Song"), title != seen.last?.title {
                seen.append(
                    (
                        title, metadata["xesam:artist"]?.stringArrayValue ?? [], metadata["xesam:album"]?.stringValue,
                        position
                    ))
                #expect(metadata["mpris:length"] == nil, "a live stream has no length")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        try #require(seen.count >= 4, "titles seen: \(seen.map(\.title))\n\(radio.context())")
        for shown in seen {
            let change = try #require(
                Self.titles.first { String(decoding: $0.raw, as: UTF8.self).hasSuffix(shown.title) })
            let index = try #require(Int(shown.title.dropFirst(5)))
            #expect(shown.artist == ["Artist \(index)"])
            #expect(shown.album == "Test FM")
            // The title's audio is heard at this position of the daemon's stream; a metadata
            // block comes at the first interval at or after its byte.
            let blockByte = ((change.atAudioByte - start + 15_999) / 16_000) * 16_000
            let audible = Double(blockByte) / Double(RadioCase.byteRate)
            guard change.atAudioByte >= start else { continue }  // in force when the stream began
            #expect(
                shown.heardAt >= audible - 0.05 && shown.heardAt <= audible + 0.5,
                "\(shown.title): shown at \(shown.heardAt) s, its audio starts at \(audible) s")
        }
        let canSeek = try await radio.property("CanSeek", of: "org.mpris.MediaPlayer2.Player")?.boolValue
        #expect(canSeek == false)
        // The index and its journal exist from the start; no data file holds a byte.
        let files = radio.cacheFiles()
        #expect(
            files.filter { $0.key.hasPrefix("/spool/data/") }.values.reduce(0, +) == 0,
            "a live stream is never cached: \(files)\n\(radio.context())")
    }

    @Test func aShortPausePlaysOnFromWhereItPausedAndStopThenPlayRejoinsLive() async throws {
        let radio = try await RadioCase(settings: RadioSettings(icyName: "Pause FM", titles: Self.titles))
        let opened = try await radio.probe.open(radio.station.url)
        _ = try await radio.probe.awaitAdvancing(since: opened)
        try await radio.probe.remote.pause()
        _ = try await radio.probe.awaitStatus("Paused")
        let paused = Double(try await radio.probe.remote.positionMicroseconds()) / 1e6
        let connections = radio.station.requests().filter { $0.target == "/stream.mp3" }.count
        // The pause itself: two seconds of the broadcast go by, and the stream is held.
        try await Task.sleep(for: .seconds(2))
        let played = ContinuousClock.now
        try await radio.probe.remote.play()
        _ = try await radio.probe.awaitAdvancing(since: played)
        let resumed = Double(try await radio.probe.remote.positionMicroseconds()) / 1e6
        #expect(
            resumed >= paused - 0.1 && resumed <= paused + seconds(from: played) + 0.2,
            "paused at \(paused) s, at \(resumed) s \(seconds(from: played)) s after Play")
        #expect(
            radio.station.requests().filter { $0.target == "/stream.mp3" }.count == connections,
            "a Play within the pause window plays on from the held stream:\n\(radio.context())")

        try await radio.probe.remote.stop()
        _ = try await radio.probe.awaitStatus("Stopped")
        let before = Double(try await radio.probe.remote.positionMicroseconds()) / 1e6
        let replayed = ContinuousClock.now
        try await radio.probe.remote.play()
        _ = try await radio.probe.awaitAdvancing(since: replayed)
        // Listening starts again: the position counts from the Play, whatever a loaded machine
        // lets the polls see of it.
        let position = Double(try await radio.probe.remote.positionMicroseconds()) / 1e6
        #expect(
            position <= seconds(from: replayed) + 0.2 && position < paused + seconds(from: replayed),
            "at \(position) s, \(seconds(from: replayed)) s after Play (stopped at \(before) s, paused at \(paused) s)")
        let streams = radio.station.requests().filter { $0.target == "/stream.mp3" }
        #expect(streams.count == connections + 1, "Stop then Play rejoins live on a new connection")
        let last = try #require(streams.last)
        #expect(
            abs(last.startAudioByte - radio.station.livePoint()) < Int64(3 * RadioCase.byteRate),
            "it starts at the live point")
    }

    @Test func aStationFileNamesAStationThatDoesNotNameItselfAndStatusSaysLive() async throws {
        let radio = try await RadioCase(settings: RadioSettings(icyName: nil, titles: Self.titles))
        let pls = radio.rig.files.file("jazz.pls")
        try Data("[playlist]\nNumberOfEntries=1\nFile1=\(radio.station.url.absoluteString)\nTitle1=Jazz Station\n".utf8)
            .write(to: pls)
        let environment = radio.rig.bus.environment
        let played = try await runCommandAwaiting(try spoolExecutable(), ["play", pls.path], environment: environment)
        #expect(played.status == 0, "\(played.stderr)")
        let metadata = try await awaitValue(
            "a song's title in Metadata\n\(radio.context())", timeout: 10, radio.metadata,
            until: { $0["xesam:title"]?.stringValue?.hasPrefix("Song") == true })
        #expect(metadata["xesam:album"]?.stringValue == "Jazz Station", "\(metadata)\n\(radio.context())")
        let status = try await runCommandAwaiting(try spoolExecutable(), ["status"], environment: environment)
        let first = status.stdout.split(separator: "\n").first.map(String.init) ?? ""
        #expect(first.hasPrefix("Live: Jazz Station – Artist "), "\(status.stdout)\n\(radio.context())")
    }

    @Test func aStationFilesDeadServerGivesWayToTheNextAndTheStationIsOneEntry() async throws {
        let radio = try await RadioCase(settings: RadioSettings(icyName: nil, titles: Self.titles))
        let pls = radio.rig.files.file("mirrors.pls")
        // The first server refuses (nothing listens on the discard port); the second is the station.
        let text = """
            [playlist]
            NumberOfEntries=2
            File1=http://127.0.0.1:9/jazz.mp3
            Title1=Mirror FM (#1)
            File2=\(radio.station.url.absoluteString)
            Title2=Mirror FM (#2)
            """
        try Data(text.utf8).write(to: pls)
        let environment = radio.rig.bus.environment
        let started = ContinuousClock.now
        let played = try await runCommandAwaiting(try spoolExecutable(), ["play", pls.path], environment: environment)
        #expect(played.status == 0, "\(played.stderr)")
        let advancing: Double
        do {
            advancing = try await radio.probe.awaitAdvancing(since: started, trackURLSuffix: "/stream.mp3")
        } catch {
            Issue.record("\(error)\n\(radio.context())")
            return
        }
        print("a station file's dead first server → the mirror advancing: \(String(format: "%.3f", advancing)) s")
        let tracks = try await radio.property("Tracks", of: "org.mpris.MediaPlayer2.TrackList")?.arrayValues ?? []
        #expect(tracks.count == 1, "the station is one entry, not one per server: \(tracks)")
        let metadata = try await radio.metadata()
        #expect(metadata["xesam:album"]?.stringValue == "Mirror FM", "\(metadata)\n\(radio.context())")
        let status = try await runCommandAwaiting(try spoolExecutable(), ["status"], environment: environment)
        #expect(status.stdout.hasPrefix("Live: Mirror FM"), "\(status.stdout)\n\(radio.context())")
        #expect(radio.player.log.contains("trying the station's next server"), "\(radio.context())")
    }

    @Test func aDroppedConnectionReconnectsWithNoAudibleGap() async throws {
        let radio = try await RadioCase(
            settings: RadioSettings(icyName: "Drop FM", burstBytes: 4 * RadioCase.byteRate, titles: Self.titles),
            faults: RadioFaults(dropAfterSeconds: 3), recordAudio: true)
        let monitor = try #require(radio.rig.monitor)
        let opened = try await radio.probe.open(radio.station.url)
        _ = try await radio.probe.awaitAdvancing(since: opened)
        let offset = monitor.offset
        let requests = try await radio.station.waitForRequests(atLeast: 4, timeout: 12)
        let streams = requests.filter { $0.target == "/stream.mp3" }
        #expect(streams.count >= 3, "the stream's connections: \(streams)")
        #expect(streams.dropFirst().allSatisfy { $0.icyMetaData == "1" && $0.range == nil })
        // Over the two drops: no second of silence in what reached the sound server.
        await #expect(throws: (any Error).self, "a gap in the audio:\n\(radio.context())") {
            _ = try await monitor.silence(after: offset, lasting: 0.5, timeout: 2)
        }
        #expect(try await radio.probe.remote.playbackStatus() == "Playing")
    }
}

@Suite("Internet radio from a real Icecast 2 server", .serialized)
struct IcecastRadioTests {
    @Test func eachTitleSetOnTheServerIsShownInOrderSplitWithTheStation() async throws {
        let icecast = try IcecastServer(lifetime: 90)
        let source = try icecast.startSource(mount: "/jazz.mp3", name: "Icecast Jazz", genre: "Jazz", bitrate: 128)
        try await icecast.waitUntilMounted("/jazz.mp3")
        let rig = try NetworkRig(lifetime: 90)
        let player = try rig.startSpool(executable: try spoolExecutable(), logLevel: "debug", lifetime: 80)
            .keepingTestLog()
        let connection = try DBusConnection(address: rig.bus.address)
        let probe = PlayerProbe(
            remote: DBusMPRISRemote(connection: connection, busName: player.busName), player: player, rig: rig)
        try await probe.waitUntilReady()
        let opened = try await probe.open(icecast.streamURL(mount: "/jazz.mp3"))
        _ = try await probe.awaitAdvancing(since: opened)

        func metadata() async throws -> [String: DBusValue] {
            try await connection.call(
                destination: player.busName, path: "/org/mpris/MediaPlayer2",
                interface: "org.freedesktop.DBus.Properties", method: "Get",
                arguments: [.string("org.mpris.MediaPlayer2.Player"), .string("Metadata")]
            ).first?.variantValue?.stringVariantDictValue ?? [:]
        }
        let songs = [("Ella Fitzgerald", "Summertime"), ("Café Tacvba", "Eres"), ("Björk", "Jóga")]
        for (artist, title) in songs {
            let set = ContinuousClock.now
            try icecast.setTitle("\(artist) - \(title)", mount: "/jazz.mp3")
            var shown: [String: DBusValue] = [:]
            while ContinuousClock.now - set < .seconds(8) {
                shown = try await metadata()
                if shown["xesam:title"]?.stringValue == title { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(
                shown["xesam:title"]?.stringValue == title,
                "\(title) not shown within 8 s: \(shown)\n\(player.logTail(30))")
            #expect(shown["xesam:artist"]?.stringArrayValue == [artist])
            #expect(shown["xesam:album"]?.stringValue == "Icecast Jazz")
            #expect(shown["mpris:length"] == nil)
        }
        #expect(source.isStreaming)
        let data = player.home.file("cache/spool/data")
        let stored = (try? FileManager.default.contentsOfDirectory(atPath: data.path)) ?? []
        #expect(stored.isEmpty, "nothing of a live stream is stored: \(stored)")
    }
}

/// The regular files under `player`'s cache folder, by path below it, and their sizes.
func cachedFiles(of player: PlayerProcess) -> [String: Int] {
    let root = player.home.file("cache")
    var files: [String: Int] = [:]
    for case let file as URL in FileManager.default.enumerator(
        at: root, includingPropertiesForKeys: [.fileSizeKey, .isRegularFileKey])
        ?? FileManager.DirectoryEnumerator()
    {
        guard (try? file.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }
        files[file.path.replacingOccurrences(of: root.path, with: "")] =
            (try? file.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0
    }
    return files
}
