import FoundationEssentials
import Glibc

/// Lyrics in a `.lrc` file beside a local track (`Song.flac` → `Song.lrc`), as players of local
/// music look for them. Files hold any bytes: they are read as bytes, at most
/// ``maximumSize``, and decoded with invalid sequences replaced, so the text is valid Unicode
/// (libdbus aborts on a string that is not valid UTF-8).
public enum LyricsFile {
    /// The most bytes read of a lyrics file; a larger one is cut there (a song's lyrics are a few KiB).
    public static let maximumSize = 1 << 20

    /// The path of the lyrics file that goes with `url`: the track's own path with the extension
    /// `.lrc`; nil when `url` is not a local file.
    public static func sidecarPath(for url: URL) -> String? {
        guard url.isFileURL else { return nil }
        return url.deletingPathExtension().path + ".lrc"
    }

    /// The text of the file at `path`, decoded by ``decode(_:)``; nil when it is missing, unreadable
    /// or empty. Blocks on the disk: call it off the player, D-Bus and streaming threads.
    public static func read(atPath path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        // A FIFO or a device named .lrc would block or never end.
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        var bytes = [UInt8](repeating: 0, count: min(maximumSize, max(0, Int(info.st_size))))
        var filled = 0
        while filled < bytes.count {
            let got = bytes.withUnsafeMutableBytes {
                Glibc.read(descriptor, $0.baseAddress! + filled, $0.count - filled)
            }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            filled += got
        }
        guard filled > 0 else { return nil }
        return decode(Array(bytes.prefix(filled)))
    }

    /// Whether `bytes` can be a lyrics file: text in UTF-16 with its byte order mark, or bytes
    /// without NUL that do not open as HTML. A web server may answer a missing file with a page
    /// of its own, or with the audio itself when it ignores the path: neither is lyrics.
    public static func isText(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return false }
        if bytes.count >= 2, bytes[0] == 0xFF && bytes[1] == 0xFE || bytes[0] == 0xFE && bytes[1] == 0xFF {
            return true
        }
        let head = bytes.prefix(4096)
        guard !head.contains(0) else { return false }
        let opening = String(decoding: head.prefix(64), as: UTF8.self)
            .drop { $0.isWhitespace || $0 == "\u{FEFF}" }.lowercased()
        return !(opening.hasPrefix("<!doctype") || opening.hasPrefix("<html") || opening.hasPrefix("<?xml"))
    }

    /// `bytes` as text: UTF-16 when they start with its byte order mark, else UTF-8 with every
    /// invalid sequence (a Latin-1 file, a cut character) shown as U+FFFD.
    public static func decode(_ bytes: [UInt8]) -> String {
        if bytes.count >= 2, bytes[0] == 0xFF && bytes[1] == 0xFE || bytes[0] == 0xFE && bytes[1] == 0xFF {
            let littleEndian = bytes[0] == 0xFF
            let units = stride(from: 2, to: bytes.count - 1, by: 2).map { index -> UInt16 in
                let (first, second) = (UInt16(bytes[index]), UInt16(bytes[index + 1]))
                return littleEndian ? first | second << 8 : first << 8 | second
            }
            return String(decoding: units, as: UTF16.self)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
