/// A playlist's text cut into the lines that mean something.
struct ScannedPlaylist {
    /// Whether the first non-blank line is `#EXTM3U`, alone or followed by blank-separated text
    /// (some servers append attributes to the header).
    var startsWithHeader = false
    /// The lines after the header: known tags and URIs, trimmed. Blank lines, comments and
    /// unknown tags are left out.
    var lines: [PlaylistLine] = []
}

/// Scans a playlist's UTF-8 bytes once: lines end at LF (a CR before it is dropped), a leading
/// byte order mark is skipped, spaces and tabs around a line are trimmed. Working on the raw
/// bytes rather than on String views is what keeps a 10,000-segment playlist fast in a debug
/// build.
func scanPlaylist(_ bytes: UnsafeBufferPointer<UInt8>) -> ScannedPlaylist {
    // Constants, not `UInt8(ascii:)` in the loops: a debug build calls that for every byte.
    let lineFeed: UInt8 = 0x0A
    let carriageReturn: UInt8 = 0x0D
    var scanned = ScannedPlaylist()
    scanned.lines.reserveCapacity(bytes.count / 24)
    var lineStart = 0
    if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { lineStart = 3 }
    var number = 0
    var sawFirstLine = false
    while lineStart <= bytes.count {
        number += 1
        var lineEnd = lineStart
        while lineEnd < bytes.count, bytes[lineEnd] != lineFeed { lineEnd += 1 }
        var start = lineStart
        var end = lineEnd
        if end > start, bytes[end - 1] == carriageReturn { end -= 1 }
        while start < end, isBlankByte(bytes[start]) { start += 1 }
        while end > start, isBlankByte(bytes[end - 1]) { end -= 1 }
        lineStart = lineEnd + 1
        guard start < end else { continue }
        guard sawFirstLine else {
            sawFirstLine = true
            scanned.startsWithHeader = isHeader(bytes, start..<end)
            if !scanned.startsWithHeader { return scanned }
            continue
        }
        if let content = lineContent(bytes, start..<end) {
            scanned.lines.append(PlaylistLine(number: number, content: content))
        }
    }
    return scanned
}

private let header = Array("#EXTM3U".utf8)

/// Whether the line is `#EXTM3U`, alone or followed by a blank and more text.
private func isHeader(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool {
    guard range.count >= header.count else { return false }
    for offset in 0..<header.count where bytes[range.lowerBound + offset] != header[offset] { return false }
    return range.count == header.count || isBlankByte(bytes[range.lowerBound + header.count])
}

/// A trimmed non-blank line as a tag or a URI; nil for a comment or an unknown tag.
private func lineContent(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> PlaylistLine.Content? {
    let first = range.lowerBound
    let hash: UInt8 = 0x23
    let colon: UInt8 = 0x3A
    guard bytes[first] == hash else { return .uri(text(bytes, range)) }
    let isTag =
        range.count >= 4 && bytes[first + 1] == UInt8(ascii: "E") && bytes[first + 2] == UInt8(ascii: "X")
        && bytes[first + 3] == UInt8(ascii: "T")
    guard isTag else { return nil }
    var nameEnd = first + 1
    while nameEnd < range.upperBound, bytes[nameEnd] != colon { nameEnd += 1 }
    guard let tag = Tag(rawValue: text(bytes, first + 1..<nameEnd)) else { return nil }
    guard nameEnd < range.upperBound else { return .tag(tag, value: nil) }
    var valueStart = nameEnd + 1
    while valueStart < range.upperBound, isBlankByte(bytes[valueStart]) { valueStart += 1 }
    return .tag(tag, value: text(bytes, valueStart..<range.upperBound))
}

private func text(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
    String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
}

/// A space or a tab.
func isBlankByte(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09  // space, tab
}
