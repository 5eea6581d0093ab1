import Basics
import FoundationEssentials

// Station lists in XML (XSPF, ASX) come from radio directories and old media players and are
// often not well-formed, so they are read with a small tolerant scanner rather than an XML
// parser (PlayerCore does not link FoundationXML either). The scanner only moves forward and
// looks at each byte a bounded number of times, so hostile input costs linear time.

/// The XML station-list formats `PlaylistParser` reads besides M3U and PLS.
enum StationFileFormat: Sendable {
    /// XSPF, the XML Shareable Playlist Format: `<track>`s with `<location>` and `<title>`.
    case xspf
    /// ASX, Windows Media's stream redirector (also `.wax`, `.wvx`): `<entry>`s of `<ref href>`.
    case asx

    /// The lower-case file extensions that name each format.
    static let byExtension: [String: StationFileFormat] = ["xspf": .xspf, "asx": .asx, "wax": .asx, "wvx": .asx]

    /// The format of `text`: from its root element (`<asx>`, or `<playlist>` in the XSPF
    /// namespace), else from `fileExtension` when the text at least starts with markup; nil when
    /// the text is not one of these station lists.
    static func detect(_ text: String, fileExtension: String) -> StationFileFormat? {
        guard startsWithMarkup(text) else { return nil }
        if let root = MarkupScanner.rootElement(of: text) {
            if root.name == "asx" { return .asx }
            let declaresXSPF = root.attributes.contains { name, value in
                (name == "xmlns" || name.hasPrefix("xmlns:")) && value.lowercased().contains("xspf.org/ns/")
            }
            if root.name == "playlist", declaresXSPF { return .xspf }
        }
        return byExtension[fileExtension]
    }

    /// The entries of `text` read as this format, titled by their own title, else the list's.
    func entries(in text: String, base: URL) -> [TrackItem] {
        var reader = StationListReader(format: self, base: base)
        return reader.read(text)
    }

    /// Whether the first character that is not white space or a byte order mark is `<`; checked
    /// before scanning so that other text is not copied and scanned for nothing.
    private static func startsWithMarkup(_ text: String) -> Bool {
        text.unicodeScalars.first { !$0.properties.isWhitespace && $0 != "\u{FEFF}" } == "<"
    }
}

/// A reference from a station list as a URL, resolved like other playlist entries; nil when it
/// is empty or holds control characters. Whether it may be played (`mms://` may not, nor a file
/// from a list on the network) is ``ListTrust``'s to say. A relative reference is a URI, so its
/// percent escapes are decoded before it is resolved as a path.
func stationURL(_ reference: String, base: URL) -> URL? {
    let trimmed = reference.trimmingWhitespaceAndNewlines()
    guard !trimmed.isEmpty, !trimmed.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
    else { return nil }
    let entry = hasURLScheme(trimmed) ? trimmed : removingPercentEncoding(trimmed) ?? trimmed
    return PlaylistParser.resolve(entry, base: base)
}

/// Whether `reference` starts with a URI scheme of two characters or more (one letter is a
/// Windows drive, not a scheme).
private func hasURLScheme(_ reference: String) -> Bool {
    guard let colon = reference.firstIndex(of: ":") else { return false }
    let scheme = reference[..<colon]
    guard scheme.count > 1, let first = scheme.first, first.isASCII, first.isLetter else { return false }
    return scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
}

/// A title as shown: runs of white space and control characters become one space, and the
/// ends are trimmed; nil when nothing is left.
private func cleanedTitle(_ text: String) -> String? {
    var title = ""
    var spacePending = false
    for scalar in text.unicodeScalars {
        if scalar.properties.isWhitespace || scalar.value < 0x20 || scalar.value == 0x7F {
            spacePending = !title.isEmpty
        } else {
            if spacePending { title.unicodeScalars.append(" ") }
            spacePending = false
            title.unicodeScalars.append(scalar)
        }
    }
    return title.isEmpty ? nil : title
}

/// An entry being read (an XSPF `<track>`, an ASX `<entry>`): how deep it is and what it has
/// said so far.
private struct EntryDraft {
    let depth: Int
    var urls: [URL] = []
    var title: String?
    var creator: String?
}

/// The text of the element being read; only its own text, not that of elements inside it.
private struct TextCapture {
    enum Field { case listTitle, title, creator, location }
    let field: Field
    let depth: Int
    var text = ""
}

/// Reads the entries of an XSPF or ASX list from the scanner's events.
private struct StationListReader {
    let format: StationFileFormat
    let base: URL
    private var items: [TrackItem] = []
    private var listTitle: String?
    private var entry: EntryDraft?
    private var capture: TextCapture?

    init(format: StationFileFormat, base: URL) {
        self.format = format
        self.base = base
    }

    private var rootElement: String { format == .xspf ? "playlist" : "asx" }
    private var entryElement: String { format == .xspf ? "track" : "entry" }

    mutating func read(_ text: String) -> [TrackItem] {
        // ASX files often leave `<ref …>` unclosed; it never has content.
        var scanner = MarkupScanner(text, emptyElements: format == .asx ? ["ref", "entryref"] : [])
        while let event = scanner.next() {
            switch event {
            case .start(let name, let attributes): opened(name, attributes: attributes, path: scanner.path)
            case .text(let piece): if capture?.depth == scanner.path.count { capture?.text += piece }
            case .end: closed(depth: scanner.path.count)
            }
        }
        // A list cut short keeps what its last entry completed (an unfinished element is dropped).
        if let draft = entry { add(draft) }
        return items.map { TrackItem(url: $0.url, title: $0.title ?? listTitle, mirrors: $0.mirrors) }
    }

    private mutating func opened(_ name: String, attributes: [String: String], path: [String]) {
        guard capture == nil else { return }  // markup inside a title or location is not read
        guard let draft = entry else {
            if name == entryElement {
                entry = EntryDraft(depth: path.count)
            } else if name == "title", path.count == 2, path.first == rootElement {
                capture = TextCapture(field: .listTitle, depth: path.count)
            }
            return
        }
        guard path.count == draft.depth + 1 else { return }  // only the entry's own children count
        switch (format, name) {
        case (_, "title"): capture = TextCapture(field: .title, depth: path.count)
        case (.xspf, "creator"): capture = TextCapture(field: .creator, depth: path.count)
        case (.xspf, "location"): capture = TextCapture(field: .location, depth: path.count)
        case (.asx, "ref"):
            if let href = attributes["href"], let url = stationURL(href, base: base) {
                entry?.urls.append(url)
            }
        default: break
        }
    }

    private mutating func closed(depth: Int) {
        if let finished = capture, finished.depth == depth {
            capture = nil
            switch finished.field {
            case .listTitle: if listTitle == nil { listTitle = cleanedTitle(finished.text) }
            case .title: if entry?.title == nil { entry?.title = cleanedTitle(finished.text) }
            case .creator: if entry?.creator == nil { entry?.creator = cleanedTitle(finished.text) }
            case .location:
                // An XSPF track's locations are alternatives: the first playable one is the
                // track, the others its mirrors.
                if let url = stationURL(finished.text, base: base) { entry?.urls.append(url) }
            }
        }
        if let draft = entry, draft.depth == depth {
            add(draft)
            entry = nil
        }
    }

    private mutating func add(_ draft: EntryDraft) {
        // An entry's addresses (ASX refs, XSPF locations) are one stream's alternatives.
        guard let first = draft.urls.first else { return }
        items.append(TrackItem(url: first, title: draft.title ?? draft.creator, mirrors: Array(draft.urls.dropFirst())))
    }
}

/// One step of reading markup.
enum MarkupEvent {
    /// An element opens: its local name (after any `prefix:`) in lower case, and its attributes
    /// keyed by lower-case name (the first of a repeated name wins), values entity-decoded.
    case start(name: String, attributes: [String: String])
    /// Character data: text with its entities decoded, or a CDATA section as it is.
    case text(String)
    /// An element closes: by its end tag, by the end tag of an element around it, or by `/>`.
    case end(name: String)
}

/// A tolerant, forward-only reader of XML-like markup. Names are case-insensitive; attribute
/// values may be double-, single- or un-quoted; comments, `<?…?>` and `<!…>` declarations are
/// skipped; an end tag closes the open elements up to the one it names and is ignored when
/// none matches. Markup cut short (an unterminated tag, comment or quote) ends the reading,
/// and so does nesting deeper than `maximumDepth`: no station list needs more.
struct MarkupScanner {
    /// The deepest nesting read.
    static let maximumDepth = 64
    /// Attributes kept per element; the rest are ignored so one tag cannot hold a huge table.
    static let maximumAttributes = 32

    private let bytes: [UInt8]
    private let emptyElements: Set<String>
    private var position = 0
    /// The names of the open elements, outermost first; for `.end` it still holds the closing one.
    private(set) var path: [String] = []
    private var endsPending = 0
    private var popBeforeNextEvent = false

    /// A scanner at the start of `text`; elements named in `emptyElements` (lower case) close
    /// where they open, as if written `<name/>`, since lists often leave them open.
    init(_ text: String, emptyElements: Set<String> = []) {
        bytes = Array(text.utf8)
        self.emptyElements = emptyElements
    }

    /// The first element of `text` with its attributes; nil when text that is not white space
    /// (or a byte order mark) comes before it.
    static func rootElement(of text: String) -> (name: String, attributes: [String: String])? {
        var scanner = MarkupScanner(text)
        while let event = scanner.next() {
            switch event {
            case .start(let name, let attributes): return (name, attributes)
            case .text(let text):
                guard text.unicodeScalars.allSatisfy({ $0.properties.isWhitespace || $0 == "\u{FEFF}" })
                else { return nil }
            case .end: return nil
            }
        }
        return nil
    }

    /// The next event; nil at the end of the text or where the markup stops making sense.
    mutating func next() -> MarkupEvent? {
        if popBeforeNextEvent {
            _ = path.popLast()
            popBeforeNextEvent = false
        }
        if endsPending > 0, let name = path.last {
            endsPending -= 1
            popBeforeNextEvent = true
            return .end(name: name)
        }
        while position < bytes.count {
            guard let kind = markupKind(at: position) else { return .text(readText()) }
            switch kind {
            case .comment: skip(past: Self.commentEnd, from: position + 4)
            case .processingInstruction: skip(past: Self.processingInstructionEnd, from: position + 2)
            case .declaration: skipDeclaration()
            case .cdata:
                let start = position + Self.cdataStart.count
                guard let end = find(Self.cdataEnd, from: start) else {
                    position = bytes.count
                    return nil
                }
                position = end + Self.cdataEnd.count
                return .text(String(decoding: bytes[start..<end], as: UTF8.self))
            case .endTag: if let event = readEndTag() { return event }
            case .startTag: if let event = readStartTag() { return event }
            }
        }
        return nil
    }

    private enum MarkupKind { case comment, cdata, processingInstruction, declaration, endTag, startTag }

    private static let commentStart = Array("<!--".utf8)
    private static let commentEnd = Array("-->".utf8)
    private static let cdataStart = Array("<![CDATA[".utf8)
    private static let cdataEnd = Array("]]>".utf8)
    private static let processingInstructionEnd = Array("?>".utf8)

    /// What the `<` at `index` opens; nil when there is no `<` there or it opens nothing (text).
    private func markupKind(at index: Int) -> MarkupKind? {
        guard bytes[index] == ASCII.lessThan, index + 1 < bytes.count else { return nil }
        switch bytes[index + 1] {
        case UInt8(ascii: "!"):
            if matches(Self.commentStart, at: index) { return .comment }
            return matches(Self.cdataStart, at: index) ? .cdata : .declaration
        case UInt8(ascii: "?"): return .processingInstruction
        case ASCII.slash: return .endTag
        case let byte where isNameStart(byte): return .startTag
        default: return nil
        }
    }

    /// Text up to the next `<` that opens markup, entity-decoded.
    private mutating func readText() -> String {
        let start = position
        var end = position + 1  // the first byte may be a `<` that opens nothing
        while end < bytes.count, !(bytes[end] == ASCII.lessThan && markupKind(at: end) != nil) { end += 1 }
        position = end
        return decoded(start..<end)
    }

    private mutating func readStartTag() -> MarkupEvent? {
        var cursor = position + 1
        let nameStart = cursor
        while cursor < bytes.count, !isNameEnd(bytes[cursor]) { cursor += 1 }
        let name = localName(nameStart..<cursor)
        var attributes: [String: String] = [:]
        while true {
            while cursor < bytes.count, isSpace(bytes[cursor]) { cursor += 1 }
            guard cursor < bytes.count else {
                position = bytes.count  // an unterminated tag: nothing after it is markup
                return nil
            }
            switch bytes[cursor] {
            case ASCII.greaterThan:
                position = cursor + 1
                return open(name, attributes: attributes, selfClosing: false)
            case ASCII.slash where cursor + 1 < bytes.count && bytes[cursor + 1] == ASCII.greaterThan:
                position = cursor + 2
                return open(name, attributes: attributes, selfClosing: true)
            case ASCII.slash:
                cursor += 1
            case ASCII.lessThan:
                position = cursor  // a tag that never closed: read on from the next one
                return nil
            default:
                let attributeStart = cursor
                while cursor < bytes.count, !isNameEnd(bytes[cursor]), bytes[cursor] != ASCII.equals { cursor += 1 }
                let attributeName = lowercased(attributeStart..<cursor)
                while cursor < bytes.count, isSpace(bytes[cursor]) { cursor += 1 }
                var value = ""
                if cursor < bytes.count, bytes[cursor] == ASCII.equals {
                    cursor += 1
                    while cursor < bytes.count, isSpace(bytes[cursor]) { cursor += 1 }
                    guard let read = attributeValue(at: cursor) else {
                        position = bytes.count  // an unterminated quote
                        return nil
                    }
                    (value, cursor) = read
                }
                if attributes.count < Self.maximumAttributes, attributes[attributeName] == nil {
                    attributes[attributeName] = value
                }
            }
        }
    }

    /// The attribute value at `start` (after its `=`), entity-decoded, and the index after it;
    /// nil when its quote is never closed.
    private func attributeValue(at start: Int) -> (value: String, next: Int)? {
        guard start < bytes.count else { return ("", start) }
        let quote = bytes[start]
        if quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") {
            guard let close = bytes[(start + 1)...].firstIndex(of: quote) else { return nil }
            return (decoded((start + 1)..<close), close + 1)
        }
        var end = start
        while end < bytes.count, !isSpace(bytes[end]), bytes[end] != ASCII.greaterThan, bytes[end] != ASCII.lessThan {
            end += 1
        }
        return (decoded(start..<end), end)
    }

    private mutating func open(_ name: String, attributes: [String: String], selfClosing: Bool) -> MarkupEvent? {
        guard path.count < Self.maximumDepth else {
            position = bytes.count
            return nil
        }
        path.append(name)
        if selfClosing || emptyElements.contains(name) { endsPending = 1 }
        return .start(name: name, attributes: attributes)
    }

    private mutating func readEndTag() -> MarkupEvent? {
        var cursor = position + 2
        let nameStart = cursor
        while cursor < bytes.count, !isNameEnd(bytes[cursor]) { cursor += 1 }
        let name = localName(nameStart..<cursor)
        while cursor < bytes.count, bytes[cursor] != ASCII.greaterThan, bytes[cursor] != ASCII.lessThan { cursor += 1 }
        guard cursor < bytes.count else {
            position = bytes.count
            return nil
        }
        position = bytes[cursor] == ASCII.greaterThan ? cursor + 1 : cursor
        guard let index = path.lastIndex(of: name), let innermost = path.last else { return nil }
        endsPending = path.count - index - 1
        popBeforeNextEvent = true
        return .end(name: innermost)
    }

    /// Skips `<!DOCTYPE …>` and the like, including an internal subset in brackets.
    private mutating func skipDeclaration() {
        var cursor = position + 2
        var bracketDepth = 0
        while cursor < bytes.count {
            switch bytes[cursor] {
            case UInt8(ascii: "["): bracketDepth += 1
            case UInt8(ascii: "]"): bracketDepth = max(0, bracketDepth - 1)
            case ASCII.greaterThan where bracketDepth == 0:
                position = cursor + 1
                return
            case ASCII.lessThan where bracketDepth == 0:
                position = cursor
                return
            default: break
            }
            cursor += 1
        }
        position = bytes.count
    }

    private mutating func skip(past terminator: [UInt8], from start: Int) {
        position = find(terminator, from: start).map { $0 + terminator.count } ?? bytes.count
    }

    private func find(_ pattern: [UInt8], from start: Int) -> Int? {
        guard let first = pattern.first else { return start }
        var index = start
        while index + pattern.count <= bytes.count {
            if bytes[index] == first, matches(pattern, at: index) { return index }
            index += 1
        }
        return nil
    }

    private func matches(_ pattern: [UInt8], at index: Int) -> Bool {
        guard index + pattern.count <= bytes.count else { return false }
        var offset = 0
        while offset < pattern.count, bytes[index + offset] == pattern[offset] { offset += 1 }
        return offset == pattern.count
    }

    private func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D  // space, tab, line feed, carriage return
    }

    private func isNameStart(_ byte: UInt8) -> Bool {
        let folded = byte | 0x20  // ASCII letters in lower case
        return (folded >= UInt8(ascii: "a") && folded <= UInt8(ascii: "z")) || byte == UInt8(ascii: "_")
            || byte == ASCII.colon || byte >= 0x80
    }

    private func isNameEnd(_ byte: UInt8) -> Bool {
        isSpace(byte) || byte == ASCII.greaterThan || byte == ASCII.slash || byte == ASCII.lessThan
    }

    private func lowercased(_ range: Range<Int>) -> String {
        String(decoding: bytes[range].map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// An element name without its namespace prefix, in lower case.
    private func localName(_ range: Range<Int>) -> String {
        let start = bytes[range].lastIndex(of: ASCII.colon).map { $0 + 1 } ?? range.lowerBound
        return lowercased(start..<range.upperBound)
    }

    /// The bytes in `range` as text with `&amp; &lt; &gt; &quot; &apos; &#N; &#xN;` decoded;
    /// any other `&` is kept as it is (ASX links often hold bare ones).
    private func decoded(_ range: Range<Int>) -> String {
        guard bytes[range].contains(ASCII.ampersand) else { return String(decoding: bytes[range], as: UTF8.self) }
        var text: [UInt8] = []
        text.reserveCapacity(range.count)
        var index = range.lowerBound
        while index < range.upperBound {
            if bytes[index] == ASCII.ampersand, let found = entity(at: index, before: range.upperBound) {
                text.append(contentsOf: found.scalar.utf8)
                index = found.next
            } else {
                text.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The character the entity at `ampersand` stands for and the index after its `;`. The
    /// `;` is looked for in the next few bytes only, so a text of bare `&` stays linear.
    private func entity(at ampersand: Int, before limit: Int) -> (scalar: Unicode.Scalar, next: Int)? {
        let searchEnd = min(limit, ampersand + 12)
        var semicolon = ampersand + 1
        while semicolon < searchEnd, bytes[semicolon] != UInt8(ascii: ";") { semicolon += 1 }
        guard semicolon < searchEnd else { return nil }
        let name = String(decoding: bytes[(ampersand + 1)..<semicolon], as: UTF8.self)
        let scalar: Unicode.Scalar?
        switch name {
        case "amp": scalar = "&"
        case "lt": scalar = "<"
        case "gt": scalar = ">"
        case "quot": scalar = "\""
        case "apos": scalar = "'"
        default:
            guard name.hasPrefix("#") else { return nil }
            let digits = name.dropFirst()
            let isHex = digits.first == "x" || digits.first == "X"
            let value = isHex ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
            scalar = value.flatMap { $0 == 0 ? nil : Unicode.Scalar($0) }
        }
        return scalar.map { ($0, semicolon + 1) }
    }
}

/// The bytes the scanner looks for.
private enum ASCII {
    static let lessThan = UInt8(ascii: "<")
    static let greaterThan = UInt8(ascii: ">")
    static let slash = UInt8(ascii: "/")
    static let equals = UInt8(ascii: "=")
    static let ampersand = UInt8(ascii: "&")
    static let colon = UInt8(ascii: ":")
}
