import FoundationEssentials

/// Builds a ``MediaPlaylist`` line by line. Tags before a URI line describe that segment
/// (`EXTINF`, `EXT-X-BYTERANGE`, `EXT-X-DISCONTINUITY`, `EXT-X-PROGRAM-DATE-TIME`, `EXT-X-GAP`);
/// `EXT-X-KEY` and `EXT-X-MAP` stay in effect until replaced.
struct MediaPlaylistBuilder {
    private var playlist: MediaPlaylist
    private let resolver: URIResolver
    private var targetDuration: Duration?
    /// Where the sequence tags were, to blame when numbering overflows.
    private var mediaSequenceLine = 0
    private var discontinuitySequenceLine = 0

    /// `EXTINF` of the segment being described.
    private var pendingDuration: (duration: Duration, title: String?, line: Int)?
    private var pendingByteRange: (length: Int64, offset: Int64?, line: Int)?
    private var pendingDiscontinuity = false
    private var pendingDate: Date?
    private var pendingGap = false

    /// The keys in effect, one per KEYFORMAT, in the order they appeared.
    private var keys: [EncryptionKey] = []
    /// The identity-format key in effect, else the first: see ``MediaSegment/key``. Kept
    /// with ``keys`` rather than looked up for every segment.
    private var preferredKey: EncryptionKey?
    private var map: MediaInitializationSection?
    /// Where each URI's last sub-range ended, for a byte range without an offset.
    private var byteRangeEnds: [URL: Int64] = [:]

    init(url: URL) {
        playlist = MediaPlaylist(url: url, targetDuration: .zero)
        resolver = URIResolver(base: url)
    }

    mutating func consume(_ line: PlaylistLine) throws(HLSParseError) {
        switch line.content {
        case .uri(let text): try appendSegment(uri: text, line: line.number)
        case .tag(let tag, let value): try apply(tag, value: (value ?? "")[...], line: line.number)
        }
    }

    private mutating func apply(_ tag: Tag, value: Substring, line: Int) throws(HLSParseError) {
        switch tag {
        case .segmentDuration:
            if let pending = pendingDuration { throw .segmentWithoutURI(line: pending.line) }
            guard let info = segmentInfo(value) else { throw .invalidTagValue(line: line, tag: tag.rawValue) }
            pendingDuration = (info.duration, info.title, line)
        case .targetDuration:
            guard let duration = decimalDuration(value), duration > .zero else {
                throw .invalidTargetDuration(line: line)
            }
            targetDuration = duration
        case .mediaSequence:
            guard let number = decimalInteger(value) else { throw .invalidTagValue(line: line, tag: tag.rawValue) }
            playlist.mediaSequence = number
            mediaSequenceLine = line
        case .discontinuitySequence:
            guard let number = decimalInteger(value) else { throw .invalidTagValue(line: line, tag: tag.rawValue) }
            playlist.discontinuitySequence = number
            discontinuitySequenceLine = line
        case .byteRange:
            guard let spec = byteRangeSpec(value) else { throw .invalidTagValue(line: line, tag: tag.rawValue) }
            pendingByteRange = (spec.length, spec.offset, line)
        case .key: try applyKey(AttributeList(parsing: value), line: line)
        case .map: try applyMap(AttributeList(parsing: value), line: line)
        case .discontinuity: pendingDiscontinuity = true
        case .gap: pendingGap = true
        case .programDateTime: pendingDate = iso8601Date(value)
        case .endList: playlist.endList = true
        case .playlistType: playlist.playlistType = PlaylistType(rawValue: String(value))
        case .iFramesOnly: playlist.iFramesOnly = true
        case .independentSegments: playlist.independentSegments = true
        case .version: playlist.version = decimalInteger(value)
        case .start: playlist.start = startPoint(AttributeList(parsing: value))
        case .streamInf, .media, .dateRange, .bitrate, .part, .partInf, .serverControl, .skip, .preloadHint,
            .renditionReport, .iFrameStreamInf, .sessionData, .sessionKey, .contentSteering:
            break
        }
    }

    private mutating func applyKey(_ attributes: AttributeList, line: Int) throws(HLSParseError) {
        let tag = "EXT-X-KEY"
        guard let method = attributes.string("METHOD") else {
            throw .missingAttribute(line: line, tag: tag, attribute: "METHOD")
        }
        guard method != "NONE" else {
            keys = []
            preferredKey = nil
            return
        }
        guard let uriText = attributes.string("URI") else {
            throw .missingAttribute(line: line, tag: tag, attribute: "URI")
        }
        var iv: [UInt8]?
        if attributes.string("IV") != nil {
            guard let bytes = attributes.hexadecimalSequence("IV").flatMap(sixteenBytes) else {
                throw .invalidTagValue(line: line, tag: tag)
            }
            iv = bytes
        }
        let versions = attributes.string("KEYFORMATVERSIONS").map { text in
            text.split(separator: "/").compactMap { decimalInteger($0.trimmingASCIIWhitespace()) }
        }
        let encryption = EncryptionMethod(attributeValue: method)
        // Only an AES-128 key is ever fetched; the URIs of other methods' keys (`skd://`) are
        // names of a DRM system, which the segments it encrypts are refused for.
        let keyURI =
            encryption == .aes128
            ? try resolver.resolveAdmitted(uriText, line: line) : try resolver.resolve(uriText, line: line)
        let key = EncryptionKey(
            method: encryption, uri: keyURI,
            iv: iv, keyFormat: attributes.string("KEYFORMAT") ?? EncryptionKey.identityFormat,
            keyFormatVersions: versions.flatMap { $0.isEmpty ? nil : $0 } ?? [1])
        if let index = keys.firstIndex(where: { $0.keyFormat == key.keyFormat }) {
            keys[index] = key
        } else {
            keys.append(key)
        }
        preferredKey = keys.first(where: \.isIdentityFormat) ?? keys.first
    }

    private mutating func applyMap(_ attributes: AttributeList, line: Int) throws(HLSParseError) {
        guard let uriText = attributes.string("URI") else {
            throw .missingAttribute(line: line, tag: "EXT-X-MAP", attribute: "URI")
        }
        var range: ByteRange?
        if let text = attributes.string("BYTERANGE") {
            guard let spec = byteRangeSpec(text[...]) else { throw .invalidTagValue(line: line, tag: "EXT-X-MAP") }
            range = ByteRange(offset: spec.offset ?? 0, length: spec.length)
        }
        map = MediaInitializationSection(
            uri: try resolver.resolveAdmitted(uriText, line: line), byteRange: range, key: preferredKey)
    }

    private mutating func appendSegment(uri text: String, line: Int) throws(HLSParseError) {
        guard let pending = pendingDuration else { throw .segmentWithoutDuration(line: line) }
        // A segment cannot be left out of an on-demand timeline: one that may not be fetched
        // fails the playlist.
        let uri = try resolver.resolveAdmitted(text, line: line)
        var range: ByteRange?
        if let spec = pendingByteRange {
            guard let offset = spec.offset ?? byteRangeEnds[uri] else {
                throw .byteRangeWithoutPrevious(line: spec.line)
            }
            guard !offset.addingReportingOverflow(spec.length).overflow else {
                throw .invalidTagValue(line: spec.line, tag: "EXT-X-BYTERANGE")
            }
            range = ByteRange(offset: offset, length: spec.length)
            byteRangeEnds[uri] = offset + spec.length
        }
        playlist.segments.append(
            MediaSegment(
                uri: uri, duration: pending.duration, title: pending.title, byteRange: range,
                discontinuity: pendingDiscontinuity, key: preferredKey, keys: keys, map: map,
                programDateTime: pendingDate, mediaSequenceNumber: 0, isGap: pendingGap))
        pendingDuration = nil
        pendingByteRange = nil
        pendingDiscontinuity = false
        pendingDate = nil
        pendingGap = false
    }

    /// The playlist, once every line is consumed. Sequence numbers are assigned here because
    /// `EXT-X-MEDIA-SEQUENCE` may (against the RFC) come after the first segment.
    mutating func finish() throws(HLSParseError) -> MediaPlaylist {
        if let pending = pendingDuration { throw .segmentWithoutURI(line: pending.line) }
        guard let targetDuration else { throw .missingTargetDuration }
        playlist.targetDuration = targetDuration
        // A sequence number near 2^63 (the RFC allows up to 2^64 - 1) would overflow while numbering.
        guard !playlist.mediaSequence.addingReportingOverflow(playlist.segments.count).overflow else {
            throw .invalidTagValue(line: mediaSequenceLine, tag: "EXT-X-MEDIA-SEQUENCE")
        }
        guard !playlist.discontinuitySequence.addingReportingOverflow(playlist.segments.count).overflow else {
            throw .invalidTagValue(line: discontinuitySequenceLine, tag: "EXT-X-DISCONTINUITY-SEQUENCE")
        }
        var discontinuitySequenceNumber = playlist.discontinuitySequence
        for index in playlist.segments.indices {
            if playlist.segments[index].discontinuity { discontinuitySequenceNumber += 1 }
            playlist.segments[index].mediaSequenceNumber = playlist.mediaSequence + index
            playlist.segments[index].discontinuitySequenceNumber = discontinuitySequenceNumber
        }
        return playlist
    }
}

/// `EXT-X-START`, when its `TIME-OFFSET` is readable.
func startPoint(_ attributes: AttributeList) -> StartPoint? {
    attributes.duration("TIME-OFFSET").map { StartPoint(timeOffset: $0, precise: attributes.isYes("PRECISE")) }
}

/// A hexadecimal IV as exactly 16 bytes: a shorter value is the same 128-bit number with
/// leading zeros; a longer one only when its excess leading bytes are zeros.
private func sixteenBytes(_ bytes: [UInt8]) -> [UInt8]? {
    if bytes.count <= 16 { return [UInt8](repeating: 0, count: 16 - bytes.count) + bytes }
    let excess = bytes.count - 16
    guard bytes.prefix(excess).allSatisfy({ $0 == 0 }) else { return nil }
    return Array(bytes.suffix(16))
}
