import Basics

/// Strips ICY metadata out of one connection's body.
///
/// A server asked with `Icy-MetaData: 1` interleaves its audio with metadata blocks: `metaInterval`
/// audio bytes, one length byte L, L × 16 bytes of metadata, and again. Chunks may split a block,
/// even its length byte, anywhere; the stripper keeps its place between calls. A new connection
/// needs a new stripper, as the server counts afresh from its first body byte.
public struct ICYStripper: Sendable {
    /// Where the next byte of the body belongs.
    private enum Position: Sendable {
        /// Inside an interval of audio, with this many bytes left before the next length byte.
        case audio(remaining: Int)
        /// At the length byte of a metadata block.
        case lengthByte
        /// Inside a metadata block, with this many bytes left.
        case metadata(remaining: Int)
    }

    private let metaInterval: Int
    private var position: Position
    /// The part of a block that earlier chunks carried; its capacity is kept for the next block.
    private var pendingBlock: [UInt8] = []

    /// Audio bytes passed through so far on this connection.
    public private(set) var audioBytes: Int64 = 0

    /// A stripper for a body whose `icy-metaint` header said `metaInterval`, which must be positive.
    public init(metaInterval: Int) {
        precondition(metaInterval > 0, "icy-metaint must be positive")
        self.metaInterval = metaInterval
        position = .audio(remaining: metaInterval)
    }

    /// Feeds the next chunk of the body; calls `emit` in stream order with the audio parts
    /// (slices of `bytes`, valid only during the call) and each metadata block completed in this chunk.
    ///
    /// Blocks of length zero, and blocks that hold neither a title nor a URL, emit nothing. A body
    /// that ends inside a block simply never emits that block.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, emit: (ICYPiece) -> Void) {
        var index = 0
        while index < bytes.count {
            let available = bytes.count - index
            switch position {
            case .audio(let remaining):
                let taken = min(remaining, available)
                emit(.audio(UnsafeRawBufferPointer(rebasing: bytes[index..<index + taken])))
                audioBytes += Int64(taken)
                index += taken
                position = taken == remaining ? .lengthByte : .audio(remaining: remaining - taken)
            case .lengthByte:
                let blockLength = Int(bytes[index]) * 16
                index += 1
                position = blockLength == 0 ? .audio(remaining: metaInterval) : .metadata(remaining: blockLength)
            case .metadata(let remaining):
                let taken = min(remaining, available)
                let part = UnsafeRawBufferPointer(rebasing: bytes[index..<index + taken])
                index += taken
                guard taken == remaining else {
                    pendingBlock.append(contentsOf: part)
                    position = .metadata(remaining: remaining - taken)
                    continue
                }
                position = .audio(remaining: metaInterval)
                if let metadata = completeBlock(endingWith: part) {
                    emit(.metadata(metadata))
                }
            }
        }
    }

    /// Parses a block whose last bytes are `part`, reading it in place when one chunk carried it whole.
    private mutating func completeBlock(endingWith part: UnsafeRawBufferPointer) -> ICYMetadata? {
        if pendingBlock.isEmpty {
            return part.withMemoryRebound(to: UInt8.self) { ICYMetadata.parse($0) }
        }
        pendingBlock.append(contentsOf: part)
        defer { pendingBlock.removeAll(keepingCapacity: true) }
        return pendingBlock.withUnsafeBufferPointer { ICYMetadata.parse($0) }
    }
}

/// One piece of a body with ICY metadata, in stream order.
public enum ICYPiece {
    /// Audio bytes: a slice of the chunk being fed, valid only while `emit` runs.
    case audio(UnsafeRawBufferPointer)
    /// A metadata block that held a title or a URL.
    case metadata(ICYMetadata)
}

/// One metadata block's fields.
public struct ICYMetadata: Sendable, Equatable {
    /// The `StreamTitle` field: nil when the block had none, "" when the station sent an empty
    /// title (it says no song is playing).
    public var streamTitle: String?
    /// The `StreamUrl` field: nil when the block had none, "" when it was sent empty.
    public var streamURL: String?

    /// Metadata with these fields.
    public init(streamTitle: String?, streamURL: String?) {
        self.streamTitle = streamTitle
        self.streamURL = streamURL
    }

    /// Parses a block's bytes (NUL padding allowed); nil when it holds neither field.
    ///
    /// Text is UTF-8 when the block is valid UTF-8, else Latin-1; control characters are dropped
    /// and values trimmed, so the fields are always clean, valid text.
    public init?(block: some Collection<UInt8>) {
        let parsed =
            block.withContiguousStorageIfAvailable { Self.parse($0) }
            ?? Array(block).withUnsafeBufferPointer { Self.parse($0) }
        guard let parsed else { return nil }
        self = parsed
    }

    /// "Artist - Title" split where it splits cleanly (first " - ", both sides non-empty after
    /// trimming); with one side empty (" - Title", "Artist - ", as stations send when a field of
    /// their own is blank) the other side alone is the title; else (nil, whole string trimmed).
    public static func artistAndTitle(_ streamTitle: String) -> (artist: String?, title: String) {
        let whole = streamTitle.trimmingWhitespaceAndNewlines()
        // Padded, so a dash at either end still reads as the separator.
        let padded = " " + whole + " "
        if let separator = padded.firstRange(of: " - ") {
            let artist = padded[..<separator.lowerBound].trimmingWhitespaceAndNewlines()
            let title = padded[separator.upperBound...].trimmingWhitespaceAndNewlines()
            switch (artist.isEmpty, title.isEmpty) {
            case (false, false): return (artist, title)
            case (true, false): return (nil, title)
            case (false, true): return (nil, artist)
            case (true, true): break
            }
        }
        return (nil, whole)
    }

    /// Parses a block in place: the work of `init?(block:)`.
    static func parse(_ block: UnsafeBufferPointer<UInt8>) -> ICYMetadata? {
        var end = block.firstIndex(of: 0) ?? block.count
        while end > 0, ICYFieldReader.isBlank(block[end - 1]) {
            end -= 1
        }
        let reader = ICYFieldReader(text: UnsafeBufferPointer(rebasing: block[0..<end]))
        let isUTF8 = reader.isValidUTF8
        var title: String?
        var url: String?
        var start = 0
        while let field = reader.field(from: start) {
            start = field.next
            switch field.key {
            case .streamTitle where title == nil:
                title = reader.text(of: field.value, isUTF8: isUTF8)
            case .streamURL where url == nil:
                url = reader.text(of: field.value, isUTF8: isUTF8)
            default:
                break
            }
        }
        guard title != nil || url != nil else { return nil }
        return ICYMetadata(streamTitle: title, streamURL: url)
    }
}

/// Reads `Key='value';` fields out of a block's text, which is cut at its first NUL and trimmed.
///
/// Positions are byte offsets: every delimiter is ASCII, and ASCII bytes never occur inside a
/// UTF-8 sequence, so the bytes can be split before they are decoded.
private struct ICYFieldReader {
    /// The fields this module reads; the others are skipped.
    enum Key {
        case streamTitle
        case streamURL
        case other
    }

    /// One field: its key, the bytes of its value, and where the search for the next field resumes.
    struct Field {
        var key: Key
        var value: Range<Int>
        var next: Int
    }

    /// The outcome of looking for `Key=` at one offset.
    private enum KeyMatch {
        /// A key in these bytes, with its `=` at `equalsSign`.
        case found(key: Range<Int>, equalsSign: Int)
        /// No key starts here, nor at any offset before `resumeAt`.
        case none(resumeAt: Int)
    }

    let text: UnsafeBufferPointer<UInt8>

    private static let singleQuote = UInt8(ascii: "'")
    private static let doubleQuote = UInt8(ascii: "\"")
    private static let semicolon = UInt8(ascii: ";")
    private static let equalsSign = UInt8(ascii: "=")

    /// Whitespace or a control character: what surrounds fields without belonging to them.
    static func isBlank(_ byte: UInt8) -> Bool { byte <= 0x20 || byte == 0x7F }

    /// Whether the whole text is UTF-8; checked once, so every value of a block decodes alike.
    var isValidUTF8: Bool {
        var iterator = text.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    /// The first field at or after `start`, skipping bytes that start none.
    func field(from start: Int) -> Field? {
        var index = start
        while index < text.count {
            switch key(at: index) {
            case .none(let resumeAt):
                index = resumeAt
            case .found(let keyBytes, let equalsSign):
                let (value, next) = value(after: equalsSign)
                return Field(key: Self.identify(keyBytes, in: text), value: value, next: next)
            }
        }
        return nil
    }

    /// The value after a field's `=`, and where the next field may start.
    ///
    /// A quoted value ends at the quote and `;` (blanks allowed between them) that are followed by
    /// the end of the text or by another key, so quotes and semicolons inside titles survive.
    /// Failing that, a closing quote at the very end ends it, then the last quote and `;`; failing
    /// all, it runs to the end.
    private func value(after equalsSign: Int) -> (Range<Int>, next: Int) {
        var start = equalsSign + 1
        while start < text.count, Self.isBlank(text[start]) {
            start += 1
        }
        let quote: UInt8? =
            start < text.count && (text[start] == Self.singleQuote || text[start] == Self.doubleQuote)
            ? text[start] : nil
        if quote != nil { start += 1 }
        var lastQuoteAndSemicolon: (quote: Int, next: Int)?
        for index in start..<text.count {
            guard let quote else {
                if text[index] == Self.semicolon, endsField(at: index + 1) {
                    return (start..<index, index + 1)
                }
                continue
            }
            guard text[index] == quote else { continue }
            var after = index + 1
            while after < text.count, Self.isBlank(text[after]) {
                after += 1
            }
            if after == text.count {
                return (start..<index, text.count)
            }
            if text[after] == Self.semicolon {
                if endsField(at: after + 1) {
                    return (start..<index, after + 1)
                }
                lastQuoteAndSemicolon = (index, after + 1)
            }
        }
        if let lastQuoteAndSemicolon {
            return (start..<lastQuoteAndSemicolon.quote, lastQuoteAndSemicolon.next)
        }
        return (start..<text.count, text.count)
    }

    /// Whether only blanks follow `index`, or blanks and then another `Key=`.
    private func endsField(at index: Int) -> Bool {
        var index = index
        while index < text.count, Self.isBlank(text[index]) {
            index += 1
        }
        if index == text.count { return true }
        if case .found = key(at: index) { return true }
        return false
    }

    /// A key starting at `index`: a letter, then letters, digits or `_`, then `=` (stations add
    /// fields such as `adw_ad`, so digits and `_` are taken too).
    private func key(at index: Int) -> KeyMatch {
        guard Self.isLetter(text[index]) else { return .none(resumeAt: index + 1) }
        var end = index + 1
        while end < text.count, Self.isLetter(text[end]) || Self.isDigitOrUnderscore(text[end]) {
            end += 1
        }
        guard end < text.count, text[end] == Self.equalsSign else {
            // Every offset up to `end` runs into the same byte, which is no `=`.
            return .none(resumeAt: end + 1)
        }
        return .found(key: index..<end, equalsSign: end)
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
    }

    private static func isDigitOrUnderscore(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
    }

    private static let streamTitleKey = Array("streamtitle".utf8)
    private static let streamURLKey = Array("streamurl".utf8)

    /// Which field these key bytes name, in any case.
    private static func identify(_ key: Range<Int>, in text: UnsafeBufferPointer<UInt8>) -> Key {
        let bytes = UnsafeBufferPointer(rebasing: text[key])
        if bytes.elementsEqual(streamTitleKey, by: { $0 | 0x20 == $1 }) { return .streamTitle }
        if bytes.elementsEqual(streamURLKey, by: { $0 | 0x20 == $1 }) { return .streamURL }
        return .other
    }

    /// A value's bytes as trimmed text without control characters (C0, DEL and C1).
    func text(of value: Range<Int>, isUTF8: Bool) -> String {
        let bytes = UnsafeBufferPointer(rebasing: text[value])
        var scalars = String.UnicodeScalarView()
        func keep(_ scalar: Unicode.Scalar) {
            if scalar.value >= 0x20 && !(0x7F...0x9F).contains(scalar.value) {
                scalars.append(scalar)
            }
        }
        if isUTF8 {
            var iterator = bytes.makeIterator()
            var decoder = UTF8()
            while case .scalarValue(let scalar) = decoder.decode(&iterator) {
                keep(scalar)
            }
        } else {
            // Latin-1: each byte is the code point of the same value.
            for byte in bytes {
                keep(Unicode.Scalar(byte))
            }
        }
        return String(scalars).trimmingWhitespaceAndNewlines()
    }
}

/// The icy-* headers of a response.
public struct ICYHeaders: Sendable, Equatable {
    /// `icy-metaint`: audio bytes between metadata blocks, when a positive integer of at most 1 MiB.
    public var metaInterval: Int?
    /// `icy-name`: the station's name.
    public var name: String?
    /// `icy-genre`.
    public var genre: String?
    /// `icy-url`: the station's home page.
    public var url: String?
    /// `icy-description`.
    public var description: String?
    /// `icy-br`: the bitrate in kbit/s.
    public var bitrate: Int?
    /// Whether an icy-* header was present that gave none of the fields above (blank, unparsable,
    /// or one this type does not read).
    private var hasOtherICYHeader = false

    /// Any icy-* header was present, even an unparsable one.
    public var isPresent: Bool {
        hasOtherICYHeader || metaInterval != nil || name != nil || genre != nil || url != nil
            || description != nil || bitrate != nil
    }

    /// The largest `icy-metaint` believed: real stations use 8 KiB to 64 KiB.
    private static let maximumMetaInterval = 1 << 20
    /// The largest `icy-br` believed, in kbit/s.
    private static let maximumBitrate = 100_000
    /// icy-* headers that are only looked at to tell an ICY server.
    private static let otherHeaderNames = [
        "icy-pub", "icy-notice1", "icy-notice2", "icy-sr", "icy-audio-info", "icy-private", "icy-version",
    ]

    /// No headers.
    public init() {}

    /// Reads them through a case-insensitive header lookup; blank values are nil.
    public init(header: (String) -> String?) {
        var present = false
        func read(_ name: String) -> String? {
            guard let raw = header(name) else { return nil }
            present = true
            let value = raw.trimmingWhitespaceAndNewlines()
            return value.isEmpty ? nil : value
        }
        metaInterval = read("icy-metaint").flatMap(Int.init).flatMap {
            (1...Self.maximumMetaInterval).contains($0) ? $0 : nil
        }
        name = read("icy-name")
        genre = read("icy-genre")
        url = read("icy-url")
        description = read("icy-description")
        // Some servers repeat the value, comma-separated ("128,128").
        bitrate = read("icy-br").flatMap { $0.split(separator: ",", omittingEmptySubsequences: false).first }
            .flatMap { Int($0.trimmingWhitespaceAndNewlines()) }
            .flatMap { (1...Self.maximumBitrate).contains($0) ? $0 : nil }
        hasOtherICYHeader = !isPresent && (present || Self.otherHeaderNames.contains { header($0) != nil })
    }
}

/// Whether a response is a live stream (internet radio), not a file.
public enum LiveStreamDetection {
    /// Live when: the status is 200 and there is no total length, AND either any icy-* header is
    /// present, or the content type is audio (audio/*, application/ogg; video/MP2T is not audio
    /// here, nor are playlists such as audio/x-mpegurl) with no validator (no ETag, no
    /// Last-Modified) and no `Accept-Ranges: bytes`.
    ///
    /// A response that has a total length is never live: a stream that turns out to have a length
    /// plays as a file.
    public static func isLive(
        status: Int, totalLength: Int64?, contentType: String?, hasValidator: Bool, acceptsRanges: Bool,
        icy: ICYHeaders
    ) -> Bool {
        guard status == 200, totalLength == nil else { return false }
        if icy.isPresent { return true }
        guard let contentType, isAudio(contentType) else { return false }
        return !hasValidator && !acceptsRanges
    }

    /// Playlist types filed under audio/: their bodies are text naming streams, never audio.
    private static let playlistTypes: Set<String> = [
        "audio/x-mpegurl", "audio/mpegurl", "audio/x-scpls", "audio/scpls", "audio/x-ms-asx",
    ]

    /// Whether a Content-Type (parameters allowed, any case) names audio.
    private static func isAudio(_ contentType: String) -> Bool {
        let mediaType =
            (contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
            .trimmingWhitespaceAndNewlines().lowercased()
        if playlistTypes.contains(mediaType) { return false }
        return mediaType == "application/ogg" || (mediaType.hasPrefix("audio/") && mediaType.count > "audio/".count)
    }
}
