import Basics
import FoundationEssentials

/// Resolves the URIs of one playlist against its URL (RFC 3986 §5.2, as `URL(string:relativeTo:)`
/// does it).
///
/// A segment URI is usually a plain file name beside the playlist, and resolving each of ten
/// thousand through Foundation's general merge would dominate the parse: a plain relative path is
/// appended to the playlist's folder and an absolute URL is read as it is; anything else (`/x`,
/// `//host/x`, `../x`, `?q`, `#f`) goes through Foundation.
struct URIResolver {
    let base: URL
    /// What the playlist may name: only http(s) when it came from the network.
    let trust: ListTrust
    /// The base URL up to and including the last `/` of its path, without query or fragment.
    private let folder: String?

    init(base: URL) {
        self.base = base
        trust = ListTrust(listAt: base)
        let probe = URL(string: "x", relativeTo: base)?.absoluteString
        folder = probe.flatMap { $0.hasSuffix("/x") ? String($0.dropLast()) : nil }
    }

    /// The absolute URL `text` (a URI line or a `URI` attribute) refers to.
    func resolve(_ reference: String, line: Int) throws(HLSParseError) -> URL {
        guard !reference.isEmpty else { throw .invalidURI(line: line) }
        let resolved: URL?
        switch Self.form(of: reference) {
        case .absolute: resolved = URL(string: reference)
        case .plainPath:
            if let folder { resolved = URL(string: folder + reference) } else { resolved = nil }
        case .other: resolved = nil
        }
        guard let url = resolved ?? URL(string: reference, relativeTo: base)?.absoluteURL else {
            throw .invalidURI(line: line)
        }
        return url
    }

    /// The absolute URL `reference` refers to, when the playlist may name it (``ListTrust``):
    /// else a ``HLSParseError/refusedURI(line:uri:reason:)``.
    func resolveAdmitted(_ reference: String, line: Int) throws(HLSParseError) -> URL {
        let url = try resolve(reference, line: line)
        if let dropped = trust.dropped(url) {
            throw .refusedURI(line: line, uri: dropped.entry, reason: dropped.reason)
        }
        return url
    }

    private enum Form {
        /// `scheme:…`.
        case absolute
        /// A relative path without dot segments, starting with a segment name.
        case plainPath
        case other
    }

    private static func form(of reference: String) -> Form {
        var reference = reference
        return reference.withUTF8(form(ofBytes:))
    }

    private static func form(ofBytes bytes: UnsafeBufferPointer<UInt8>) -> Form {
        let colon: UInt8 = 0x3A
        let slash: UInt8 = 0x2F
        let question: UInt8 = 0x3F
        let hash: UInt8 = 0x23
        let dot: UInt8 = 0x2E
        guard let first = bytes.first, first != dot, first != colon, first != slash, first != question, first != hash
        else { return .other }
        var index = 0
        // The first segment: a colon in it ends a scheme (RFC 3986 §4.2).
        while index < bytes.count {
            let byte = bytes[index]
            if byte == colon { return .absolute }
            if byte == slash || byte == question || byte == hash { break }
            index += 1
        }
        // The rest of the path: a dot segment (`/.`) needs Foundation's merge.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == question || byte == hash { return .plainPath }
            if byte == dot, bytes[index - 1] == slash { return .other }
            index += 1
        }
        return .plainPath
    }
}
