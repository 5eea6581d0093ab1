import DBusKit
import Foundation
import PlayerCore
import TestDoubles
import Testing

@testable import MPRIS

/// A playlist library in a folder of its own, removed at the end.
final class TemporaryLibrary {
    let folder: URL
    let library: PlaylistLibrary

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("spool-mpris-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        library = PlaylistLibrary(folder: folder, musicFolder: nil)
    }

    /// Saves a playlist of one track behind the service's back.
    func save(_ name: String) throws {
        try library.save(name, entries: [PlaylistEntry(url: URL(string: "http://127.0.0.1:1/\(name).mp3")!)])
    }

    deinit { try? FileManager.default.removeItem(at: folder) }
}

@Suite("Playlists interface without a bus")
struct PlaylistsInterfaceTests {
    static let playlists = MPRISService.playlistsInterface

    @Test func playlistPathsAreValidAndNameTheirPlaylistBack() {
        for name in ["Road trip", "a/b", "ünïcødé 🎵", "..", "x", String(repeating: "long ", count: 40)] {
            let path = MPRISService.playlistPath(name)
            #expect(isObjectPath(path), "\(path)")
            #expect(MPRISService.playlistName(path) == name)
        }
        #expect(MPRISService.playlistPath("A") != MPRISService.playlistPath("a"))
    }

    @Test func pathsThatNameNoPlaylistAreRefused() {
        for path in [
            "/org/spool/Playlist/", "/org/spool/Playlist/6", "/org/spool/Playlist/zz", "/org/spool/Track/61",
            "/org/spool/Playlist/ff",
        ] {
            #expect(MPRISService.playlistName(path) == nil, "\(path)")
        }
    }

    @Test func playlistCountIsPublishedAtStartAndReadWithoutTheDisk() async throws {
        let temporary = try TemporaryLibrary()
        try temporary.save("one")
        try temporary.save("two")
        let rig = await ServiceRig(playlists: temporary.library, status: NoCache())
        #expect(try rig.bus.get(Self.playlists, "PlaylistCount") == .uint32(2))
        try temporary.save("three")
        #expect(
            try rig.bus.get(Self.playlists, "PlaylistCount") == .uint32(2),
            "the getter answers from the published state: it does not list the folder")
    }

    @Test func savingAndRemovingAPlaylistUpdatesAndAnnouncesTheCount() async throws {
        let temporary = try TemporaryLibrary()
        try temporary.save("one")
        let rig = await ServiceRig(playlists: temporary.library, status: NoCache())
        _ = try await rig.openAndWait()
        var mark = rig.bus.mark
        #expect(try await rig.bus.call(MPRISService.spoolInterface, "SavePlaylist", [.string("queue")]) == [.uint32(1)])
        #expect(
            await rig.bus.changes(of: Self.playlists, from: mark, holding: "PlaylistCount")?["PlaylistCount"]
                == .uint32(2))
        #expect(try rig.bus.get(Self.playlists, "PlaylistCount") == .uint32(2))
        mark = rig.bus.mark
        _ = try await rig.bus.call(
            MPRISService.spoolInterface, "AddToPlaylist", [.string("more"), .stringArray(["http://127.0.0.1:1/x.mp3"])])
        #expect(
            await rig.bus.changes(of: Self.playlists, from: mark, holding: "PlaylistCount")?["PlaylistCount"]
                == .uint32(3))
        mark = rig.bus.mark
        #expect(
            try await rig.bus.call(MPRISService.spoolInterface, "RemovePlaylist", [.string("one")]) == [.boolean(true)])
        #expect(
            await rig.bus.changes(of: Self.playlists, from: mark, holding: "PlaylistCount")?["PlaylistCount"]
                == .uint32(2))
        #expect(try rig.bus.get(Self.playlists, "PlaylistCount") == .uint32(2))
    }

    @Test func listingThePlaylistsRefreshesTheCount() async throws {
        let temporary = try TemporaryLibrary()
        try temporary.save("b")
        let rig = await ServiceRig(playlists: temporary.library, status: NoCache())
        try temporary.save("a")
        let mark = rig.bus.mark
        let listed = try await rig.bus.call(
            Self.playlists, "GetPlaylists", [.uint32(0), .uint32(10), .string("Alphabetical"), .boolean(false)])
        #expect(
            listed == [
                .array(elementSignature: "(oss)", [MPRISService.playlistValue("a"), MPRISService.playlistValue("b")])
            ])
        #expect(try rig.bus.get(Self.playlists, "PlaylistCount") == .uint32(2))
        #expect(
            await rig.bus.changes(of: Self.playlists, from: mark, holding: "PlaylistCount")?["PlaylistCount"]
                == .uint32(2))
    }

    @Test func getPlaylistsAndActivatePlaylistRefuseBadArguments() async throws {
        let temporary = try TemporaryLibrary()
        try temporary.save("one")
        let rig = await ServiceRig(playlists: temporary.library, status: NoCache())
        let bad: [[DBusValue]] = [
            [], [.uint32(0), .uint32(1), .string("Alphabetical")],
            [.int32(0), .uint32(1), .string("Alphabetical"), .boolean(false)],
            [.uint32(0), .uint32(1), .string("UserDefined"), .boolean(false)],
        ]
        for arguments in bad {
            #expect(
                await throwsDBusError(invalidArgs) {
                    _ = try await rig.bus.call(Self.playlists, "GetPlaylists", arguments)
                }, "\(arguments)")
        }
        for arguments: [DBusValue] in [
            [], [.string("one")], [.objectPath(MPRISService.playlistPath("missing"))],
            [.objectPath("/org/spool/Playlist/zz")],
        ] {
            #expect(
                await throwsDBusError(invalidArgs) {
                    _ = try await rig.bus.call(Self.playlists, "ActivatePlaylist", arguments)
                }, "\(arguments)")
        }
        #expect(rig.engine.loads.isEmpty)
        _ = try await rig.bus.call(Self.playlists, "ActivatePlaylist", [.objectPath(MPRISService.playlistPath("one"))])
        #expect(rig.engine.loads.count == 1)
        let active = try rig.bus.get(Self.playlists, "ActivePlaylist")
        #expect(active == .structure([.boolean(true), MPRISService.playlistValue("one")]))
    }
}
