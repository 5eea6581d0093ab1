import FoundationEssentials

/// The folders the XDG base-directory and user-directory specifications name, as the daemon
/// uses them for saved playlists.
enum UserDirectories {
    /// `$XDG_DATA_HOME` (default `~/.local/share`); a relative value is ignored, as the
    /// specification says.
    static func dataHome(_ environment: [String: String]) -> URL {
        environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share")
    }

    /// The user's music folder: `XDG_MUSIC_DIR` from `$XDG_CONFIG_HOME/user-dirs.dirs` (the file
    /// `xdg-user-dirs-update` writes), nil when it names none or names the home folder itself
    /// (which the specification uses for "disabled").
    static func music(_ environment: [String: String]) -> URL? {
        let home = FileManager.default.homeDirectoryForCurrentUser.path
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.config"
        guard let text = try? String(contentsOfFile: config + "/user-dirs.dirs", encoding: .utf8) else { return nil }
        return musicFolder(inUserDirs: text, home: home)
    }

    /// `XDG_MUSIC_DIR` of a `user-dirs.dirs` text: `"$HOME/…"` or an absolute path, quoted.
    static func musicFolder(inUserDirs text: String, home: String) -> URL? {
        for line in text.split(separator: "\n") {
            let trimmed = line.trimmingPrefix(while: \.isWhitespace)
            guard trimmed.hasPrefix("XDG_MUSIC_DIR=") else { continue }
            var value = String(trimmed.dropFirst("XDG_MUSIC_DIR=".count))
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            if value.hasPrefix("$HOME") { value = home + value.dropFirst("$HOME".count) }
            guard value.hasPrefix("/"), URL(fileURLWithPath: value).standardizedFileURL.path != URL(fileURLWithPath: home).standardizedFileURL.path
            else { return nil }
            return URL(fileURLWithPath: value)
        }
        return nil
    }
}
