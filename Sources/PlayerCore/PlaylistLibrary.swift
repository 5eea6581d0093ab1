import FoundationEssentials
import Glibc

/// One saved playlist: an M3U file in one of the library's folders.
public struct PlaylistInfo: Sendable, Equatable {
    /// Its name: the file's name without `.m3u` / `.m3u8`.
    public var name: String
    /// The file.
    public var file: URL
    /// When the file last changed.
    public var modified: Date
    /// Whether Spool saves into its folder (its own playlists), or only reads it (the music folder's).
    public var isSpools: Bool
}

/// One entry as a saved playlist writes it.
public struct PlaylistEntry: Sendable, Equatable {
    /// The track.
    public var url: URL
    /// "Title – Artist" as Spool shows it everywhere, when known.
    public var title: String?
    /// Its length, when known.
    public var duration: Duration?

    /// Creates an entry.
    public init(url: URL, title: String? = nil, duration: Duration? = nil) {
        self.url = url
        self.title = title
        self.duration = duration
    }
}

/// Why a playlist could not be saved, changed or removed, in words for the user.
public struct PlaylistError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The message.
    public let description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}

/// Saved playlists: extended M3U files in Spool's own folder (`$XDG_DATA_HOME/spool/playlists`),
/// which it writes, and in the music folder's `Playlists` folder, which it only lists and plays.
/// A name in both is Spool's own. Files are read and written when asked; call off the player's
/// and D-Bus's threads (they are small).
public struct PlaylistLibrary: Sendable {
    /// Spool's own folder.
    public let folder: URL
    /// The music folder's `Playlists`, when there is a music folder.
    public let musicFolder: URL?

    /// A library over `folder` (created on the first save) and `musicFolder`.
    public init(folder: URL, musicFolder: URL?) {
        self.folder = folder
        self.musicFolder = musicFolder
    }

    /// Every playlist, by name.
    public func list() -> [PlaylistInfo] {
        var found: [String: PlaylistInfo] = [:]
        for (directory, isSpools) in [(musicFolder, false), (folder, true)] {
            guard let directory, let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else {
                continue
            }
            for name in names {
                let file = directory.appendingPathComponent(name)
                guard ["m3u", "m3u8"].contains(file.pathExtension.lowercased()) else { continue }
                var info = stat()
                guard stat(file.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
                let title = String(name.prefix(upTo: name.lastIndex(of: ".")!))
                let modified = Date(
                    timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
                found[title] = PlaylistInfo(name: title, file: file, modified: modified, isSpools: isSpools)
            }
        }
        return found.values.sorted { ($0.name.lowercased(), $0.name) < ($1.name.lowercased(), $1.name) }
    }

    /// The playlist called `name`, if there is one.
    public func playlist(named name: String) -> PlaylistInfo? { list().first { $0.name == name } }

    /// Saves `entries` as Spool's playlist `name`, replacing one of that name.
    public func save(_ name: String, entries: [PlaylistEntry]) throws(PlaylistError) {
        try Self.check(name)
        try write(Self.m3u(entries), to: folder.appendingPathComponent(name + ".m3u"))
    }

    /// Adds `entries` at the end of Spool's playlist `name` (created when missing; a playlist of
    /// the music folder is copied into Spool's folder first, never written in place).
    public func add(_ entries: [PlaylistEntry], to name: String) throws(PlaylistError) {
        try Self.check(name)
        var existing: [PlaylistEntry] = []
        if let current = playlist(named: name) {
            guard let text = try? String(contentsOf: current.file, encoding: .utf8) else {
                throw PlaylistError("cannot read \(current.file.path)")
            }
            existing = PlaylistParser.parse(text, base: current.file).map {
                PlaylistEntry(url: $0.url, title: $0.title)
            }
        }
        try save(name, entries: existing + entries)
    }

    /// Removes Spool's playlist `name`; false when Spool has none of that name (a playlist of
    /// the music folder is the user's file and is not deleted).
    public func remove(_ name: String) throws(PlaylistError) -> Bool {
        try Self.check(name)
        let file = folder.appendingPathComponent(name + ".m3u")
        guard FileManager.default.fileExists(atPath: file.path) else { return false }
        guard unlink(file.path) == 0 else {
            throw PlaylistError("cannot remove \(file.path): \(String(cString: strerror(errno)))")
        }
        return true
    }

    /// An extended M3U of `entries`: `#EXTINF:seconds,title` before each URL (local files as paths).
    public static func m3u(_ entries: [PlaylistEntry]) -> String {
        var text = "#EXTM3U\n"
        for entry in entries {
            if entry.title != nil || entry.duration != nil {
                let seconds = entry.duration.map { Int(($0 / .seconds(1)).rounded()) } ?? -1
                // A line break in a title would end the entry early.
                let title = (entry.title ?? "").map { $0.isNewline ? " " : $0 }
                text += "#EXTINF:\(seconds),\(String(title))\n"
            }
            text += (entry.url.isFileURL ? entry.url.path : entry.url.absoluteString) + "\n"
        }
        return text
    }

    /// A playlist's name becomes a file's name: not empty, no `/`, not starting with a dot.
    public static func check(_ name: String) throws(PlaylistError) {
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix("."), !name.contains("\0"), name.utf8.count <= 200
        else {
            throw PlaylistError("'\(name)' cannot be a playlist name: use a plain name without '/' or a leading '.'")
        }
    }

    /// Writes `text` to `file` through a temporary file renamed over it, so a crash leaves the
    /// old playlist or the new one, never half of one.
    private func write(_ text: String, to file: URL) throws(PlaylistError) {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: file, options: .atomic)
        } catch {
            throw PlaylistError("cannot save \(file.path): \(error)")
        }
    }
}
