import Basics
import FoundationEssentials
import Glibc

/// A track to queue, as a source names it.
public struct TrackItem: Sendable, Equatable {
    /// What to play.
    public var url: URL
    /// A title known before playing (a playlist's EXTINF, Title or `<title>`).
    public var title: String?
    /// Other addresses of the same stream (a station file's mirrors), tried in turn when the
    /// one playing fails.
    public var mirrors: [URL]

    /// Creates an item.
    public init(url: URL, title: String? = nil, mirrors: [URL] = []) {
        self.url = url
        self.title = title
        self.mirrors = mirrors
    }

    /// Items for plain addresses with their titles, none with mirrors.
    public static func list(_ tracks: [(url: URL, title: String?)]) -> [TrackItem] {
        tracks.map { TrackItem(url: $0.url, title: $0.title) }
    }
}

/// Why an input could not be turned into tracks.
public struct TrackSourceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, for the user.
    public let description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}

/// Reads playlists and internet-radio station lists: M3U / M3U8 (with EXTINF titles and a
/// `#PLAYLIST:` name), PLS, XSPF and ASX. Relative entries are resolved against the playlist's
/// own URL; an entry without a title of its own takes the list's name, when it has one.
public enum PlaylistParser {
    /// Whether `url` names a playlist, by its extension.
    public static func isPlaylist(_ url: URL) -> Bool {
        let fileExtension = url.pathExtension.lowercased()
        return ["m3u", "m3u8", "pls"].contains(fileExtension) || StationFileFormat.byExtension[fileExtension] != nil
    }

    /// Whether `text` looks like a playlist whatever its name.
    public static func looksLikePlaylist(_ text: String) -> Bool {
        let start = text.drop { $0.isWhitespace || $0 == "\u{FEFF}" }.prefix(16).lowercased()
        return start.hasPrefix("#extm3u") || start.hasPrefix("[playlist]")
            || StationFileFormat.detect(text, fileExtension: "") != nil
    }

    /// Whether `text` is an HLS playlist (a line starts with an `#EXT-X-` tag): the segments or
    /// variants of one stream, to be played as a whole, not a list of stations. `parse` gives
    /// no entries for it.
    public static func isHLS(_ text: String) -> Bool {
        text.split(whereSeparator: \.isNewline).contains { line in
            isHLSTag(line.drop { $0.isWhitespace || $0 == "\u{FEFF}" })
        }
    }

    /// The most entries a list queues; the rest are left out (``PlaylistEntries/leftOut``).
    public static let maximumEntries = 10_000

    /// The entries of a playlist that may be played; empty when it has none. See ``read(_:base:)``.
    public static func parse(_ text: String, base: URL) -> [TrackItem] {
        read(text, base: base).items
    }

    /// The entries of a playlist at `base`, each admitted by the list's ``ListTrust`` (a list
    /// from the network names only http(s) addresses, a local one files too): an entry none of
    /// whose addresses may be played is dropped with its reason, and an entry's alternatives
    /// (a station's mirrors) that may not be played are left out. At most ``maximumEntries``.
    public static func read(_ text: String, base: URL) -> PlaylistEntries {
        let trust = ListTrust(listAt: base)
        let fileExtension = base.pathExtension.lowercased()
        var entries: PlaylistEntries
        if let format = StationFileFormat.detect(text, fileExtension: fileExtension) {
            entries = admitted(format.entries(in: text, base: base), trust)
        } else {
            let lines = text.replacing("\r\n", with: "\n").replacing("\r", with: "\n")
                .split(separator: "\n").map { $0.trimmingWhitespace() }
                .map { $0.hasPrefix("\u{FEFF}") ? String($0.dropFirst()) : $0 }
            let isPLS = lines.first(where: { !$0.isEmpty })?.lowercased() == "[playlist]" || fileExtension == "pls"
            entries = admitted(isPLS ? parsePLS(lines, base: base) : parseM3U(lines, base: base), trust)
            entries.items = StationMirrors.merged(entries.items)
        }
        if entries.items.count > maximumEntries {
            entries.leftOut = entries.items.count - maximumEntries
            entries.items.removeLast(entries.leftOut)
        }
        return entries
    }

    /// `items` without the addresses `trust` refuses; an item left without any is dropped.
    private static func admitted(_ items: [TrackItem], _ trust: ListTrust) -> PlaylistEntries {
        var entries = PlaylistEntries()
        for item in items {
            let addresses = [item.url] + item.mirrors
            let kept = addresses.filter { trust.refusal(of: $0) == nil }
            guard let first = kept.first else {
                if let dropped = trust.dropped(item.url) { entries.dropped.append(dropped) }
                continue
            }
            entries.items.append(TrackItem(url: first, title: item.title, mirrors: Array(kept.dropFirst())))
        }
        return entries
    }

    private static func isHLSTag(_ line: some StringProtocol) -> Bool {
        line.prefix(7).uppercased() == "#EXT-X-"
    }

    private static func parseM3U(_ lines: [String], base: URL) -> [TrackItem] {
        guard !lines.contains(where: { isHLSTag($0) }) else { return [] }
        var items: [TrackItem] = []
        var title: String?
        var playlistTitle: String?
        for line in lines where !line.isEmpty {
            if line.hasPrefix("#") {
                let tag = line.prefix(10).uppercased()
                if tag.hasPrefix("#EXTINF:"), let comma = line.firstIndex(of: ",") {
                    let name = line[line.index(after: comma)...].trimmingWhitespace()
                    title = name.isEmpty ? nil : name
                } else if tag == "#PLAYLIST:", playlistTitle == nil {
                    let name = line.dropFirst("#PLAYLIST:".count).trimmingWhitespace()
                    playlistTitle = name.isEmpty ? nil : name
                }
                continue
            }
            if let url = resolve(line, base: base) { items.append(TrackItem(url: url, title: title)) }
            title = nil
        }
        return items.map { TrackItem(url: $0.url, title: $0.title ?? playlistTitle) }
    }

    private static func parsePLS(_ lines: [String], base: URL) -> [TrackItem] {
        var files: [Int: URL] = [:]
        var titles: [Int: String] = [:]
        for line in lines {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].lowercased()
            let value = line[line.index(after: equals)...].trimmingWhitespace()
            if key.hasPrefix("file"), let number = Int(key.dropFirst(4)), let url = resolve(value, base: base) {
                files[number] = url
            } else if key.hasPrefix("title"), let number = Int(key.dropFirst(5)) {
                titles[number] = value
            }
        }
        return files.sorted { $0.key < $1.key }.map { TrackItem(url: $0.value, title: titles[$0.key]) }
    }

    /// An entry as a URL: absolute URLs as they are, absolute paths as files,
    /// anything else relative to the playlist.
    static func resolve(_ entry: String, base: URL) -> URL? {
        if entry.hasPrefix("/") { return URL(fileURLWithPath: entry) }
        if let url = URL(string: entry), let scheme = url.scheme, scheme.count > 1 { return url }
        let encoded = percentEncodingPath(entry)
        return URL(string: encoded, relativeTo: base)?.absoluteURL
    }
}

/// Turns what a user gives (URLs, paths, playlists local or remote, directories)
/// into tracks to queue.
public struct TrackResolver: Sendable {
    /// File extensions queued from directories.
    public static let audioExtensions: Set<String> = ["mp3", "flac", "ogg", "oga", "opus", "m4a", "mp4", "aac", "wav"]
    private static let log = Logger(label: "tracks")

    private static func fileExtension(of name: String) -> String {
        name.lastIndex(of: ".").map { name[name.index(after: $0)...].lowercased() } ?? ""
    }

    private let fetch: @Sendable (URL) async throws -> Data

    /// Creates a resolver; `fetch` downloads a remote playlist (small, whole).
    public init(fetch: @escaping @Sendable (URL) async throws -> Data) {
        self.fetch = fetch
    }

    /// The tracks `input` stands for, in order.
    public func resolve(_ input: String) async throws(TrackSourceError) -> [TrackItem] {
        try await entries(input).items
    }

    /// The tracks `url` stands for.
    public func resolve(_ url: URL) async throws(TrackSourceError) -> [TrackItem] {
        try await entries(url).items
    }

    /// The tracks `input` stands for, in order, with the entries of its list left out and why.
    public func entries(_ input: String) async throws(TrackSourceError) -> PlaylistEntries {
        let url: URL
        if input.hasPrefix("/") || input.hasPrefix("./") || input.hasPrefix("../") || input.hasPrefix("~") {
            let expanded = BaseDirectories(environment: ProcessInfo.processInfo.environment).expandingTilde(input)
            url = URL(fileURLWithPath: expanded)
        } else if let parsed = URL(string: input), let scheme = parsed.scheme?.lowercased(),
            ["file", "http", "https"].contains(scheme)
        {
            url = parsed
        } else if !input.contains(":") {
            url = URL(fileURLWithPath: input)  // a relative path
        } else {
            throw TrackSourceError("unsupported URI '\(input.prefix(200))': use file://, http://, https:// or a path")
        }
        return try await entries(url)
    }

    /// The tracks `url` stands for, with the entries of its list left out and why. A local
    /// input must be a directory or a regular file: a FIFO, socket or device is refused here,
    /// as reading one could wait forever.
    public func entries(_ url: URL) async throws(TrackSourceError) -> PlaylistEntries {
        if url.isFileURL {
            var info = stat()
            guard stat(url.path, &info) == 0 else {
                throw TrackSourceError(
                    errno == ENOENT ? "no such file: \(url.path)" : "\(url.path): \(String(cString: strerror(errno)))")
            }
            if info.st_mode & S_IFMT == S_IFDIR { return PlaylistEntries(items: try directory(url)) }
            guard info.st_mode & S_IFMT == S_IFREG else { throw TrackSourceError("\(url.path): not a regular file") }
            guard PlaylistParser.isPlaylist(url) else { return PlaylistEntries(items: [TrackItem(url: url)]) }
            return try playlist(try LocalList.read(url.path), base: url)
        }
        guard PlaylistParser.isPlaylist(url) else { return PlaylistEntries(items: [TrackItem(url: url)]) }
        let data: Data
        do {
            data = try await fetch(url)
        } catch {
            throw TrackSourceError("cannot fetch the playlist: \(error)")
        }
        return try playlist(data, base: url)
    }

    private func playlist(_ data: Data, base: URL) throws(TrackSourceError) -> PlaylistEntries {
        let text = String(decoding: data, as: UTF8.self)
        if PlaylistParser.isHLS(text) {
            // The segments or variants of one presentation: one track, played by the HLS source.
            guard !base.isFileURL else {
                throw TrackSourceError(
                    "\(base.lastPathComponent) is an HLS playlist: Spool plays HLS over http(s) only")
            }
            return PlaylistEntries(items: [TrackItem(url: base)])
        }
        let entries = PlaylistParser.read(text, base: base)
        guard entries.items.isEmpty else { return entries }
        guard let problems = entries.problems else {
            throw TrackSourceError("the playlist \(base.lastPathComponent) has no entries")
        }
        throw TrackSourceError("the playlist \(base.lastPathComponent) has nothing to play: \(problems)")
    }

    /// Audio files under a directory, in natural order of their relative paths ("2" before "10").
    /// A subdirectory that cannot be listed is skipped with a warning (one unreadable folder
    /// must not hide a whole library); symbolic links to directories are not followed, so a
    /// link loop cannot recurse forever.
    private func directory(_ url: URL) throws(TrackSourceError) -> [TrackItem] {
        guard let top = try? FileManager.default.contentsOfDirectory(atPath: url.path)
        else { throw TrackSourceError("cannot list \(url.path)") }
        var files: [(relative: String, url: URL)] = []
        var pending: [(relative: String, names: [String])] = [("", top)]
        while let (folder, names) = pending.popLast() {
            for name in names {
                let relative = folder.isEmpty ? name : folder + "/" + name
                let path = url.path + "/" + relative
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                if info.st_mode & S_IFMT == S_IFDIR {
                    if let inner = try? FileManager.default.contentsOfDirectory(atPath: path) {
                        pending.append((relative, inner))
                    } else {
                        Self.log.warning("skipping \(path): it cannot be listed")
                    }
                } else if Self.audioExtensions.contains(Self.fileExtension(of: name)) {
                    // Only regular files (a link to one too): a FIFO or device would never end.
                    guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                        Self.log.info("skipping \(path): not a regular file")
                        continue
                    }
                    files.append((relative, url.appendingPathComponent(relative)))
                }
            }
        }
        guard !files.isEmpty else { throw TrackSourceError("no audio files in \(url.path)") }
        return files.sorted { naturallyPrecedes($0.relative, $1.relative) }.map { TrackItem(url: $0.url) }
    }
}

/// Reads a local list: a regular file of at most ``maximumBytes``, opened without waiting (a FIFO
/// named like a list would otherwise block until a writer came).
enum LocalList {
    /// The largest local list read: a list of ``PlaylistParser/maximumEntries`` long paths fits.
    static let maximumBytes = 16 << 20

    /// The bytes of the list at `path`.
    static func read(_ path: String, limit: Int = maximumBytes) throws(TrackSourceError) -> Data {
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw TrackSourceError("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { Glibc.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw TrackSourceError("\(path): not a regular file")
        }
        guard info.st_size <= limit else { throw TrackSourceError("\(path) is larger than \(limit >> 20) MiB") }
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while data.count <= limit {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw TrackSourceError("cannot read \(path): \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            data.append(contentsOf: chunk[..<count])
        }
        guard data.count <= limit else { throw TrackSourceError("\(path) is larger than \(limit >> 20) MiB") }
        return data
    }
}
