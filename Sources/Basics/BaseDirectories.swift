import FoundationEssentials

/// The folders of the XDG base-directory specification, and the user's music folder of the
/// user-directory specification, read from an environment: the one place Spool decides
/// where its cache, state, configuration and playlists live.
///
/// A variable that is unset, empty or relative is ignored, as the specification says; the
/// default under the home folder is used instead. The home folder is `$HOME` when set,
/// else the password database's.
public struct BaseDirectories: Sendable, Equatable {
    /// The user's home folder.
    public let home: URL
    /// `$XDG_CACHE_HOME` (default `~/.cache`): files that can be deleted at any time.
    public let cacheHome: URL
    /// `$XDG_STATE_HOME` (default `~/.local/state`): state worth keeping across restarts,
    /// but not worth backing up.
    public let stateHome: URL
    /// `$XDG_CONFIG_HOME` (default `~/.config`): settings the user writes.
    public let configHome: URL
    /// `$XDG_DATA_HOME` (default `~/.local/share`): data the user keeps.
    public let dataHome: URL

    /// The folders `environment` names (usually `ProcessInfo.processInfo.environment`).
    public init(environment: [String: String]) {
        let home =
            environment["HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser
        func folder(_ variable: String, default relative: String) -> URL {
            environment[variable].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil }
                ?? home.appendingPathComponent(relative)
        }
        self.home = home
        cacheHome = folder("XDG_CACHE_HOME", default: ".cache")
        stateHome = folder("XDG_STATE_HOME", default: ".local/state")
        configHome = folder("XDG_CONFIG_HOME", default: ".config")
        dataHome = folder("XDG_DATA_HOME", default: ".local/share")
    }

    /// `path` with a leading `~` replaced by ``home`` and a leading `~user` by that user's home
    /// folder (from the password database), trailing slashes dropped, as `expandingTildeInPath`
    /// does; unchanged without a leading `~` or for an unknown user.
    public func expandingTilde(_ path: String) -> String {
        guard path.hasPrefix("~") else { return path }
        let end = path.firstIndex(of: "/") ?? path.endIndex
        let user = String(path[path.index(after: path.startIndex)..<end])
        guard let userHome = user.isEmpty ? home : FileManager.default.homeDirectory(forUser: user) else {
            return path
        }
        var expanded = userHome.path + path[end...]
        while expanded.count > 1, expanded.hasSuffix("/") { expanded.removeLast() }
        return expanded
    }

    /// The user's music folder: `XDG_MUSIC_DIR` from `user-dirs.dirs` in ``configHome``
    /// (the file `xdg-user-dirs-update` writes); nil when there is no such file or it names
    /// no folder.
    public func music() -> URL? {
        let file = configHome.appendingPathComponent("user-dirs.dirs").path
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
        return Self.musicFolder(inUserDirs: text, home: home.path)
    }

    /// `XDG_MUSIC_DIR` of a `user-dirs.dirs` text: `"$HOME/…"` or an absolute path, quoted.
    /// Nil when the text names none, or names the home folder itself (which the
    /// specification uses for "disabled").
    public static func musicFolder(inUserDirs text: String, home: String) -> URL? {
        for line in text.split(separator: "\n") {
            let trimmed = line.trimmingPrefix(while: \.isWhitespace)
            guard trimmed.hasPrefix("XDG_MUSIC_DIR=") else { continue }
            var value = String(trimmed.dropFirst("XDG_MUSIC_DIR=".count))
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                value = String(value.dropFirst().dropLast())
            }
            if value.hasPrefix("$HOME") { value = home + value.dropFirst("$HOME".count) }
            guard value.hasPrefix("/"),
                URL(fileURLWithPath: value).standardizedFileURL.path
                    != URL(fileURLWithPath: home).standardizedFileURL.path
            else { return nil }
            return URL(fileURLWithPath: value)
        }
        return nil
    }
}
