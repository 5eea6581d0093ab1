import FoundationEssentials

/// Cover art in a file next to a local track (`cover.jpg`, `Folder.png`, …), shown as
/// `mpris:artUrl` when the track has no embedded picture, as other players do.
public enum SidecarArt {
    /// Base names that hold an album's art, most specific first.
    public static let names = ["cover", "folder", "front", "album"]
    /// Image extensions looked for, in order of preference.
    public static let extensions = ["jpg", "jpeg", "png"]

    /// The art file among the names of a folder's files: the first base name of ``names`` with
    /// an extension of ``extensions``, both in any case; nil when there is none.
    public static func choose(among files: [String]) -> String? {
        var best: (rank: Int, name: String)?
        for file in files {
            guard let dot = file.lastIndex(of: ".") else { continue }
            let base = file[..<dot].lowercased()
            let suffix = file[file.index(after: dot)...].lowercased()
            guard let nameRank = names.firstIndex(of: base), let extensionRank = extensions.firstIndex(of: suffix)
            else {
                continue
            }
            let rank = nameRank * extensions.count + extensionRank
            // Among files differing only in case, the order of the name decides, so the choice is stable.
            if best.map({ rank < $0.rank || (rank == $0.rank && file < $0.name) }) ?? true { best = (rank, file) }
        }
        return best?.name
    }

    /// The art file in `directory`, reading the folder (nil when there is none or it cannot be read).
    public static func find(in directory: String) -> URL? {
        guard let files = try? FileManager.default.contentsOfDirectory(atPath: directory),
            let chosen = choose(among: files)
        else { return nil }
        return URL(fileURLWithPath: directory).appendingPathComponent(chosen)
    }

    /// The folder whose art `track` would show: a local track without embedded art.
    public static func folder(of track: NowPlaying?) -> String? {
        guard let track, track.tags.artURL == nil, track.entry.url.isFileURL else { return nil }
        return track.entry.url.deletingLastPathComponent().path
    }
}
