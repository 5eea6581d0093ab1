import DBusKit
import Foundation
import TestSupport
import Testing

@Suite("Saved playlists and MPRIS Playlists, end to end", .serialized)
struct PlaylistsEndToEndTests {
    let playlists = "org.mpris.MediaPlayer2.Playlists"

    @Test func saveListLoadAddAndRemoveOverTheCommandAndMPRIS() async throws {
        let fixtures = try Fixtures.shared()
        let tracks = Array(
            fixtures.all.filter { $0.format == .flac || $0.format == .oggVorbis || $0.format == .wav }.prefix(3))
        #expect(tracks.count == 3)
        let home = try TemporaryDirectory(prefix: "spool-playlists")
        let music = home.url.appendingPathComponent("Music")
        try FileManager.default.createDirectory(
            at: music.appendingPathComponent("Playlists"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: home.url.appendingPathComponent("config"), withIntermediateDirectories: true)
        try Data("# written by xdg-user-dirs-update\nXDG_MUSIC_DIR=\"\(music.path)\"\n".utf8)
            .write(to: home.url.appendingPathComponent("config/user-dirs.dirs"))
        let roadTrip = music.appendingPathComponent("Playlists/Road trip.m3u")
        try Data("#EXTM3U\n\(tracks[2].url.path)\n\(tracks[1].url.path)\n".utf8).write(to: roadTrip)
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: roadTrip.path)
        let data = home.url.appendingPathComponent("data")
        let daemon = try RunningDaemon(home: home.url, extraEnvironment: ["XDG_DATA_HOME": data.path])
        try await daemon.waitUntilReady()
        func names(_ order: String, reverse: Bool = false) async throws -> [String] {
            let reply = try await daemon.client.call(
                destination: busName, path: "/org/mpris/MediaPlayer2", interface: playlists, method: "GetPlaylists",
                arguments: [.uint32(0), .uint32(10), .string(order), .boolean(reverse)])
            return reply.first?.arrayValues?.compactMap { $0.structureFields?[1].stringValue } ?? []
        }
        func active() async throws -> (valid: Bool, name: String) {
            let value = try await daemon.property(playlists, "ActivePlaylist")?.structureFields ?? []
            return (value.first?.boolValue ?? false, value.last?.structureFields?[1].stringValue ?? "")
        }

        try await daemon.mpris("org.spool.Spool1", "Play", [.stringArray(tracks.prefix(2).map(\.url.path))])
        _ = try await daemon.waitForPlayerctl(["metadata", "title"]) { $0 == tracks[0].title }
        let saved = try runSpool(["playlist", "save", "mix"], environment: daemon.bus.environment)
        #expect(saved.status == 0 && saved.stdout == "saved 2 tracks as mix\n", "\(saved)")
        let file = try String(contentsOf: data.appendingPathComponent("spool/playlists/mix.m3u"), encoding: .utf8)
        let lines = file.split(separator: "\n").map(String.init)
        #expect(lines.first == "#EXTM3U")
        #expect(lines.contains(tracks[0].url.path) && lines.contains(tracks[1].url.path), "\(file)")
        #expect(
            lines.contains { $0.hasPrefix("#EXTINF:") && $0.hasSuffix(",\(tracks[0].title) – \(tracks[0].artist)") },
            "\(file)")

        #expect(try await daemon.property(playlists, "PlaylistCount")?.uint32Value == 2)
        #expect(
            try await daemon.property(playlists, "Orderings")?.stringArrayValue == ["Alphabetical", "ModifiedDate"])
        #expect(try await names("Alphabetical") == ["mix", "Road trip"])
        #expect(try await names("ModifiedDate") == ["Road trip", "mix"])
        #expect(try await names("ModifiedDate", reverse: true) == ["mix", "Road trip"])
        #expect(try runSpool(["playlist", "ls"], environment: daemon.bus.environment).stdout == "mix\nRoad trip\n")
        #expect(try await active().valid == false)

        let loaded = try runSpool(["playlist", "load", "Road trip"], environment: daemon.bus.environment)
        #expect(loaded.status == 0, "\(loaded)")
        _ = try await daemon.waitForPlayerctl(["metadata", "title"]) { $0 == tracks[2].title }
        #expect(try await active() == (true, "Road trip"))
        #expect(try await daemon.property("org.mpris.MediaPlayer2.TrackList", "Tracks")?.arrayValues?.count == 2)
        try await daemon.mpris("org.spool.Spool1", "Play", [.stringArray([tracks[0].url.path])])
        #expect(
            try await eventuallyAsync(timeout: 5) { try await active().valid == false },
            "another queue: no active playlist")

        let added = try runSpool(["playlist", "add", "mix", tracks[2].url.path], environment: daemon.bus.environment)
        #expect(added.status == 0, "\(added)")
        let extended = try String(contentsOf: data.appendingPathComponent("spool/playlists/mix.m3u"), encoding: .utf8)
        #expect(extended.split(separator: "\n").filter { $0.hasPrefix("/") }.count == 3, "\(extended)")

        let missing = try runSpool(["playlist", "load", "nosuch"], environment: daemon.bus.environment)
        #expect(missing.status == 2 && missing.stderr.split(separator: "\n").count == 1, "\(missing)")
        let theirs = try runSpool(["playlist", "rm", "Road trip"], environment: daemon.bus.environment)
        #expect(theirs.status == 2, "the music folder's playlist is the user's file: \(theirs)")
        #expect(FileManager.default.fileExists(atPath: roadTrip.path))
        let badName = try runSpool(["playlist", "save", "../escape"], environment: daemon.bus.environment)
        #expect(badName.status != 0 && badName.stderr.contains("cannot be a playlist name"), "\(badName)")
        let removed = try runSpool(["playlist", "rm", "mix"], environment: daemon.bus.environment)
        #expect(removed.status == 0, "\(removed)")
        #expect(!FileManager.default.fileExists(atPath: data.appendingPathComponent("spool/playlists/mix.m3u").path))
        #expect(try await daemon.property(playlists, "PlaylistCount")?.uint32Value == 1)
    }
}
