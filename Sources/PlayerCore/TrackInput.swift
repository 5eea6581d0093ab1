import FoundationEssentials

/// What a user gave to play, checked before anything is queued: an http(s) URL with a host,
/// a `file://` URL or a local path. The `spool` command checks its arguments with it before
/// it calls the daemon, and the daemon checks every URI that arrives over D-Bus with it, so
/// a mistake is reported where the user made it rather than as a failed track later.
public enum TrackInput: Equatable, Sendable {
    /// An `http://` or `https://` URL with a host.
    case remote(URL)
    /// A local file, directory or playlist: the path as given (absolute, relative or `~`).
    case local(path: String)

    /// The URL schemes Spool plays.
    public static let schemes = ["http", "https", "file"]

    /// The longest input accepted, in UTF-8 bytes: far beyond any path Linux opens (4 KiB)
    /// or URL a server takes (usually 8 KiB). Checking a longer one character by character,
    /// and keeping it as a URL, would keep a D-Bus caller waiting for seconds.
    public static let maximumLength = 32 * 1024

    /// Why `text` cannot be played, checking only its form (no disk, no network):
    /// at most `maximumLength` bytes, a scheme Spool plays, a host for http(s), no spaces or
    /// control characters in a URL, no control characters in a path, a file URL's path UTF-8
    /// without NUL once its escapes are decoded.
    public static func parse(_ text: String) -> Result<TrackInput, TrackInputError> {
        if text.isEmpty { return .failure(TrackInputError("an empty URL or path")) }
        if text.utf8.count > maximumLength {
            return .failure(TrackInputError("'\(shown(text))' is longer than \(maximumLength) bytes"))
        }
        if text.unicodeScalars.contains(where: isControl) {
            return .failure(TrackInputError("'\(shown(text))' contains a control character"))
        }
        guard let scheme = scheme(of: text) else { return .success(.local(path: text)) }
        let rest = text.dropFirst(scheme.count + 1)
        let lowered = scheme.lowercased()
        guard schemes.contains(lowered) else {
            // `name:thing` without `//` may be a file name with a colon in it.
            if !rest.hasPrefix("//") { return .success(.local(path: text)) }
            return .failure(
                TrackInputError("'\(shown(text))' is not a supported URL: use http://, https://, file:// or a path"))
        }
        if let space = text.unicodeScalars.first(where: { $0.properties.isWhitespace }) {
            let hint = space == " " ? "; write a space as %20" : ""
            return .failure(TrackInputError("'\(shown(text))' contains a space\(hint)"))
        }
        guard rest.hasPrefix("//") else {
            return .failure(TrackInputError("'\(shown(text))' is not a URL: \(lowered) URLs start with \(lowered)://"))
        }
        let afterSlashes = rest.dropFirst(2)
        let authority = afterSlashes.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if lowered == "file" {
            guard authority.isEmpty || authority.lowercased() == "localhost" else {
                return .failure(
                    TrackInputError("'\(shown(text))' names another machine; file:// URLs are local (file:///path)"))
            }
            let path = afterSlashes.dropFirst(authority.count)
            guard path.hasPrefix("/"), path.count > 1, let url = URL(string: text), url.isFileURL else {
                return .failure(TrackInputError("'\(shown(text))' has no file path; write file:///path/to/file"))
            }
            // Paths are strings here: a name whose escaped bytes are not UTF-8 (a file named
            // in Latin-1) has no path Spool could open, and URL.path is then empty.
            guard let decoded = removingPercentEncoding(String(path)), !url.path.isEmpty else {
                return .failure(
                    TrackInputError("'\(shown(text))' names a file by bytes that are not UTF-8; Spool cannot open it"))
            }
            // No path holds a NUL, and no D-Bus string can carry one to report the missing file.
            guard !decoded.utf8.contains(0) else {
                return .failure(TrackInputError("'\(shown(text))' has a NUL (%00) in its path"))
            }
            return .success(.local(path: url.path))
        }
        if let problem = hostProblem(String(authority)) {
            return .failure(TrackInputError("'\(shown(text))' \(problem)"))
        }
        guard let url = URL(string: text), url.host?.isEmpty == false else {
            return .failure(TrackInputError("'\(shown(text))' is not a valid URL"))
        }
        return .success(.remote(url))
    }

    /// Whether `scalar` is a C0 or C1 control character or DEL.
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// The scheme of `text` (`http` in `http://…`), when it starts with one as RFC 3986 writes it.
    private static func scheme(of text: String) -> String? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let name = text[..<colon]
        guard let first = name.unicodeScalars.first, first.isASCIILetter,
            name.unicodeScalars.allSatisfy({
                $0.isASCIILetter || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0)
            })
        else { return nil }
        return String(name)
    }

    /// What is wrong with the authority part of an http(s) URL (`user@host:port`), or nil.
    private static func hostProblem(_ authority: String) -> String? {
        let hostAndPort = authority.split(separator: "@", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        var host = hostAndPort
        var port = ""
        if hostAndPort.hasPrefix("[") {
            guard let close = hostAndPort.firstIndex(of: "]") else { return "has an unclosed [ in its host" }
            host = String(hostAndPort[...close])
            let after = hostAndPort[hostAndPort.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { return "has text after its [address]" }
            port = String(after.dropFirst())
            let inside = host.dropFirst().dropLast()
            guard !inside.isEmpty,
                inside.unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit || $0 == ":" || $0 == "." })
            else { return "has an invalid IPv6 address" }
        } else if let colon = hostAndPort.lastIndex(of: ":") {
            host = String(hostAndPort[..<colon])
            port = String(hostAndPort[hostAndPort.index(after: colon)...])
        }
        if host.isEmpty { return "has no host name" }
        if !port.isEmpty {
            guard port.allSatisfy(\.isASCII), let number = Int(port), (1...65535).contains(number) else {
                return "has an invalid port '\(port)'"
            }
        }
        if !host.hasPrefix("[") {
            let allowed = host.unicodeScalars.allSatisfy { scalar in
                scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                    || "-._%~".unicodeScalars.contains(scalar)
            }
            guard allowed, !host.hasPrefix("."), !host.contains("..") else {
                return "has an invalid host name '\(shown(host))'"
            }
        }
        return nil
    }

    /// `text` for a one-line message: control characters as `\u{…}`, at most 200 characters.
    static func shown(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars.prefix(200) {
            if isControl(scalar) {
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return text.unicodeScalars.dropFirst(200).isEmpty ? result : result + "…"
    }
}

/// Why an input cannot be played, in one line for the user.
public struct TrackInputError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
}
