import Basics
import DBusKit
import Dispatch
import EngineAPI
import FoundationEssentials
import PlayerCore

extension MPRISService {
    /// The MPRIS playlists interface.
    public static let playlistsInterface = "org.mpris.MediaPlayer2.Playlists"
    /// Where playlist object paths start; the rest is the name's UTF-8 bytes in hex, so any
    /// name makes a valid path and the same name always the same path.
    static let playlistPathPrefix = "/org/spool/Playlist/"

    /// The object path of the playlist called `name`.
    static func playlistPath(_ name: String) -> String {
        playlistPathPrefix + name.utf8.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// The name a playlist object path stands for, if it is one.
    static func playlistName(_ path: String) -> String? {
        guard path.hasPrefix(playlistPathPrefix) else { return nil }
        let hex = Array(path.dropFirst(playlistPathPrefix.count))
        guard !hex.isEmpty, hex.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: hex.count, by: 2) {
            guard let byte = UInt8(String(hex[index...index + 1]), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// A playlist as MPRIS lists it: `(oss)`, path, name and icon (none).
    static func playlistValue(_ name: String) -> DBusValue {
        .structure([.objectPath(playlistPath(name)), .string(name), .string("")])
    }

    /// `ActivePlaylist`: the playlist last activated while the queue is still the one it made.
    func activePlaylistValue() -> DBusValue {
        let name = published.withLock { state in
            state.activePlaylist.flatMap { $0.replacement == state.replacements ? $0.name : nil }
        }
        let playlist = name.map(Self.playlistValue) ?? .structure([.objectPath("/"), .string(""), .string("")])
        return .structure([.boolean(name != nil), playlist])
    }

    /// `org.mpris.MediaPlayer2.Playlists` over `library`: its playlists by name or modification
    /// time, and ActivatePlaylist, which replaces the queue with one and plays it.
    func playlistsInterface(_ library: PlaylistLibrary) -> DBusInterface {
        let player = self.player
        return DBusInterface(
            Self.playlistsInterface,
            methods: [
                DBusMethod("ActivatePlaylist", in: "o", argumentNames: ["PlaylistId"]) { [weak self] arguments in
                    guard let self, let path = arguments.first?.objectPathValue, let name = Self.playlistName(path)
                    else { throw DBusError.invalidArgs("no such playlist") }
                    let all = await self.artQueue.perform { library.list() }
                    self.publishPlaylistCount(all.count)
                    guard let playlist = all.first(where: { $0.name == name }) else {
                        throw DBusError.invalidArgs("no such playlist")
                    }
                    try await self.queueInputs([playlist.file.path], replacing: true) { await player.open($0) }
                    self.published.withLock { $0.activePlaylist = (name, $0.replacements) }
                    self.connection.emitPropertiesChanged(
                        path: Self.objectPath, interface: Self.playlistsInterface,
                        changed: [("ActivePlaylist", self.activePlaylistValue())])
                    return []
                },
                DBusMethod(
                    "GetPlaylists", in: "uusb", out: "a(oss)",
                    argumentNames: ["Index", "MaxCount", "Order", "ReverseOrder"],
                    resultNames: ["Playlists"]
                ) { [weak self] arguments in
                    guard arguments.count == 4, let index = arguments[0].uint32Value,
                        let count = arguments[1].uint32Value,
                        let order = arguments[2].stringValue, case .boolean(let reverse) = arguments[3]
                    else { throw DBusError.invalidArgs("expected (uusb)") }
                    var playlists = await self?.artQueue.perform({ library.list() }) ?? []
                    self?.publishPlaylistCount(playlists.count)
                    switch order {
                    case "Alphabetical": break
                    case "ModifiedDate": playlists.sort { ($0.modified, $0.name) < ($1.modified, $1.name) }
                    default:
                        throw DBusError.invalidArgs("order \(order) is not supported; use Alphabetical or ModifiedDate")
                    }
                    if reverse { playlists.reverse() }
                    let page = playlists.dropFirst(Int(index)).prefix(Int(count))
                    return [.array(elementSignature: "(oss)", page.map { Self.playlistValue($0.name) })]
                },
            ],
            properties: [
                // Answered from the published count: listing the folders here would put disk I/O on the D-Bus thread.
                DBusProperty("PlaylistCount", signature: "u") { [weak self] in
                    .uint32(self?.published.withLock { $0.playlistCount } ?? 0)
                },
                DBusProperty("Orderings", signature: "as") { .stringArray(["Alphabetical", "ModifiedDate"]) },
                DBusProperty("ActivePlaylist", signature: "(b(oss))") { [weak self] in
                    self?.activePlaylistValue() ?? .boolean(false)
                },
            ],
            signals: [DBusSignal("PlaylistChanged", arguments: [(name: "Playlist", signature: "(oss)")])])
    }

    /// The `org.spool.Spool1` methods that change saved playlists: SavePlaylist (the queue),
    /// AddToPlaylist and RemovePlaylist.
    func playlistMethods(_ library: PlaylistLibrary) -> [DBusMethod] {
        @Sendable func name(_ arguments: [DBusValue]) throws -> String {
            guard let name = arguments.first?.stringValue else {
                throw DBusError.invalidArgs("expected a playlist name")
            }
            do throws(PlaylistError) { try PlaylistLibrary.check(name) } catch {
                throw DBusError.invalidArgs(error.description)
            }
            return name
        }
        return [
            DBusMethod("SavePlaylist", in: "s", out: "u", argumentNames: ["Name"], resultNames: ["Tracks"]) {
                [weak self] arguments in
                let name = try name(arguments)
                guard let self else { return [.uint32(0)] }
                let entries = self.published.withLock { Self.playlistEntries($0.snapshot) }
                guard !entries.isEmpty else { throw DBusError.failed("the queue is empty: nothing to save") }
                try await self.writingPlaylists { () throws(PlaylistError) in try library.save(name, entries: entries) }
                await self.playlistsChanged(library)
                return [.uint32(UInt32(clamping: entries.count))]
            },
            DBusMethod("AddToPlaylist", in: "sas", argumentNames: ["Name", "Uris"]) { [weak self] arguments in
                let name = try name(arguments)
                guard arguments.count == 2, let texts = arguments[1].stringArrayValue, !texts.isEmpty else {
                    throw DBusError.invalidArgs("expected a name and one or more URIs or absolute paths")
                }
                var entries: [PlaylistEntry] = []
                for text in texts {
                    switch TrackInput.parse(text) {
                    case .success(.remote(let url)): entries.append(PlaylistEntry(url: url))
                    case .success(.local(let path)) where path.hasPrefix("/"):
                        entries.append(PlaylistEntry(url: URL(fileURLWithPath: path)))
                    case .success: throw DBusError.invalidArgs("'\(text)' is not an absolute path")
                    case .failure(let problem): throw DBusError.invalidArgs(problem.description)
                    }
                }
                let added = entries
                try await self?.writingPlaylists { () throws(PlaylistError) in try library.add(added, to: name) }
                await self?.playlistsChanged(library)
                return []
            },
            DBusMethod("RemovePlaylist", in: "s", out: "b", argumentNames: ["Name"], resultNames: ["Removed"]) {
                [weak self] arguments in
                let name = try name(arguments)
                let removed =
                    try await self?.writingPlaylists { () throws(PlaylistError) in try library.remove(name) } ?? false
                if removed { await self?.playlistsChanged(library) }
                return [.boolean(removed)]
            },
        ]
    }

    /// The queue as a playlist: each track with the title Spool shows for it and its length,
    /// when known (the current one's as playing, the others' as heard or read ahead).
    static func playlistEntries(_ snapshot: PlayerSnapshot) -> [PlaylistEntry] {
        snapshot.queue.map { entry in
            let playing = snapshot.nowPlaying.flatMap { $0.entry.id == entry.id ? $0 : nil }
            let tags = playing?.tags ?? entry.tags ?? TrackTags()
            let title = tags.title.map { title in
                tags.artists.isEmpty ? title : "\(title) – \(tags.artists.joined(separator: ", "))"
            }
            return PlaylistEntry(
                url: entry.url, title: title ?? entry.title, duration: playing?.duration ?? entry.duration)
        }
    }

    /// Counts the playlists again (off the D-Bus thread) after one was saved or removed, and
    /// announces the count.
    func playlistsChanged(_ library: PlaylistLibrary) async {
        let count = await artQueue.perform { library.list().count }
        publishPlaylistCount(count, announce: true)
    }

    /// Publishes `count` as `PlaylistCount`, which the getter answers from; announced when it
    /// changed (the folders changed behind Spool's back, seen when they are listed) or with
    /// `announce`.
    func publishPlaylistCount(_ count: Int, announce: Bool = false) {
        let value = UInt32(clamping: count)
        let changed = published.withLock { state -> Bool in
            defer { state.playlistCount = value }
            return state.playlistCount != value
        }
        guard announce || changed else { return }
        connection.emitPropertiesChanged(
            path: Self.objectPath, interface: Self.playlistsInterface, changed: [("PlaylistCount", .uint32(value))])
    }

    /// Runs `body` (playlist file writes) on the art queue, off the D-Bus thread; its error
    /// becomes a D-Bus error with the same message.
    func writingPlaylists<T: Sendable>(_ body: @escaping @Sendable () throws(PlaylistError) -> T)
        async throws(DBusError) -> T
    {
        do throws(PlaylistError) {
            return try await artQueue.perform(body)
        } catch {
            throw DBusError.failed(error.description)
        }
    }
}
