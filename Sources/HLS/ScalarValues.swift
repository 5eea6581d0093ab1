// Readers for the scalar value forms of RFC 8216 §4.2, shared by tag values and attribute lists.
// They work on UTF-8 bytes rather than Characters: playlists are ASCII where it matters, and
// grapheme breaking would cost more than the parse itself.

extension Substring {
    /// The text without leading and trailing spaces and tabs.
    func trimmingASCIIWhitespace() -> Substring {
        let bytes = utf8
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, isBlankByte(bytes[start]) { start = bytes.index(after: start) }
        while start < end {
            let last = bytes.index(before: end)
            guard isBlankByte(bytes[last]) else { break }
            end = last
        }
        return self[start..<end]
    }
}

/// Reads a decimal-integer (`[0-9]+`); nil when not one or larger than `Int.max`.
func decimalInteger(_ text: Substring) -> Int? {
    var text = text
    return text.withUTF8(decimalInteger(bytes:))
}

/// ``decimalInteger(_:)`` on bytes: sequence numbers and byte ranges of every segment come
/// through here, so it loops over a pointer with constants (`UInt8(ascii:)` is a call per byte
/// in a debug build).
func decimalInteger(bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    let zero: UInt8 = 0x30
    let nine: UInt8 = 0x39
    guard !bytes.isEmpty else { return nil }
    var value = 0
    for index in 0..<bytes.count {
        let byte = bytes[index]
        guard byte >= zero, byte <= nine else { return nil }
        let shifted = value.multipliedReportingOverflow(by: 10)
        let added = shifted.partialValue.addingReportingOverflow(Int(byte - zero))
        guard !shifted.overflow, !added.overflow else { return nil }
        value = added.partialValue
    }
    return value
}

/// Reads a (signed-)decimal-floating-point number of seconds as an exact `Duration`: `9.009`
/// becomes 9 s and 9 ms, not the nearest `Double`. Digits beyond the attosecond are dropped.
/// Accepts `12`, `12.`, `12.5`, `.5`; a leading `-` only when `signed`. Nil otherwise, or
/// beyond about 31,000 years.
func decimalDuration(_ text: Substring, signed: Bool = false) -> Duration? {
    var text = text
    return text.withUTF8 { decimalDuration(bytes: $0, signed: signed) }
}

/// ``decimalDuration(_:signed:)`` on the text's bytes: every segment's EXTINF comes through
/// here, and a pointer loop with constants (not `UInt8(ascii:)`, a call per byte in a debug
/// build) keeps a 10,000-segment playlist fast.
private func decimalDuration(bytes: UnsafeBufferPointer<UInt8>, signed: Bool) -> Duration? {
    let zero: UInt8 = 0x30
    let nine: UInt8 = 0x39
    let point: UInt8 = 0x2E
    let minus: UInt8 = 0x2D
    var index = 0
    var negative = false
    if signed, bytes.first == minus {
        negative = true
        index = 1
    }
    var wholeSeconds: Int64 = 0
    var attoseconds: Int64 = 0
    var attosecondScale: Int64 = 100_000_000_000_000_000
    var digits = 0
    var seenPoint = false
    while index < bytes.count {
        let byte = bytes[index]
        index += 1
        if byte == point, !seenPoint {
            seenPoint = true
            continue
        }
        guard byte >= zero, byte <= nine else { return nil }
        let digit = Int64(byte - zero)
        digits += 1
        if seenPoint {
            attoseconds += digit * attosecondScale
            attosecondScale /= 10
        } else {
            guard wholeSeconds < 1_000_000_000_000 else { return nil }
            wholeSeconds = wholeSeconds * 10 + digit
        }
    }
    guard digits > 0 else { return nil }
    let magnitude = Duration(secondsComponent: wholeSeconds, attosecondsComponent: attoseconds)
    return negative ? .zero - magnitude : magnitude
}

/// Reads an `EXTINF` value, `<duration>[,<title>]`: the duration, and the title when not
/// blank. The comma may be missing (servers drop it when there is no title). Works on the bytes,
/// as every segment comes through here.
func segmentInfo(_ value: Substring) -> (duration: Duration, title: String?)? {
    var value = value
    return value.withUTF8 { bytes in
        let comma: UInt8 = 0x2C
        var durationEnd = 0
        while durationEnd < bytes.count, bytes[durationEnd] != comma { durationEnd += 1 }
        var end = durationEnd
        while end > 0, isBlankByte(bytes[end - 1]) { end -= 1 }
        guard let duration = decimalDuration(bytes: UnsafeBufferPointer(rebasing: bytes[0..<end]), signed: false)
        else { return nil }
        var titleStart = durationEnd + 1
        while titleStart < bytes.count, isBlankByte(bytes[titleStart]) { titleStart += 1 }
        var titleEnd = bytes.count
        while titleEnd > titleStart, isBlankByte(bytes[titleEnd - 1]) { titleEnd -= 1 }
        guard titleStart < titleEnd else { return (duration, nil) }
        return (duration, String(decoding: UnsafeBufferPointer(rebasing: bytes[titleStart..<titleEnd]), as: UTF8.self))
    }
}

/// Reads a decimal-floating-point (or, when `signed`, a signed one) as a `Double`. Exponents,
/// `inf` and `nan` are refused, as the RFC's grammar has none.
func decimalFloatingPoint(_ text: Substring, signed: Bool = false) -> Double? {
    guard isPlainDecimal(text, signed: signed) else { return nil }
    return Double(text)
}

/// Whether `text` is digits with at most one point (and an optional leading `-` when `signed`),
/// whatever its size: a frame rate or a score can exceed what `decimalDuration` holds.
private func isPlainDecimal(_ text: Substring, signed: Bool) -> Bool {
    var bytes = text.utf8[...]
    if signed, bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
    var points = 0
    var digits = 0
    for byte in bytes {
        if byte == UInt8(ascii: ".") {
            points += 1
        } else if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
            digits += 1
        } else {
            return false
        }
    }
    return digits > 0 && points <= 1
}

/// Reads a hexadecimal-sequence (`0x` or `0X` then hex digits) as bytes, most significant
/// first; an odd digit count gets a leading zero nibble.
func hexadecimalSequence(_ text: Substring) -> [UInt8]? {
    let bytes = Array(text.utf8)
    guard bytes.count > 2, bytes[0] == UInt8(ascii: "0"), bytes[1] == UInt8(ascii: "x") || bytes[1] == UInt8(ascii: "X")
    else { return nil }
    var nibbles: [UInt8] = []
    nibbles.reserveCapacity(bytes.count - 1)
    if bytes.count % 2 == 1 { nibbles.append(0) }
    for byte in bytes[2...] {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): nibbles.append(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): nibbles.append(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): nibbles.append(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }
    return stride(from: 0, to: nibbles.count, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
}

/// Reads `<n>[@<o>]` (`EXT-X-BYTERANGE`, a map's `BYTERANGE`): the length, and the offset when
/// written. Nil when either is not a decimal-integer or their sum overflows.
func byteRangeSpec(_ text: Substring) -> (length: Int64, offset: Int64?)? {
    var text = text
    return text.withUTF8 { bytes -> (length: Int64, offset: Int64?)? in
        let at: UInt8 = 0x40
        var split = 0
        while split < bytes.count, bytes[split] != at { split += 1 }
        guard let length = decimalInteger(bytes: trimmedBlanks(bytes, 0..<split)) else { return nil }
        guard split < bytes.count else { return (Int64(length), nil) }
        guard let offset = decimalInteger(bytes: trimmedBlanks(bytes, split + 1..<bytes.count)),
            !Int64(offset).addingReportingOverflow(Int64(length)).overflow
        else { return nil }
        return (Int64(length), Int64(offset))
    }
}

/// The bytes of `range` without the spaces and tabs around them.
private func trimmedBlanks(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> UnsafeBufferPointer<UInt8> {
    var start = range.lowerBound
    var end = range.upperBound
    while start < end, isBlankByte(bytes[start]) { start += 1 }
    while end > start, isBlankByte(bytes[end - 1]) { end -= 1 }
    return UnsafeBufferPointer(rebasing: bytes[start..<end])
}

/// Reads `<width>x<height>` (decimal-resolution).
func decimalResolution(_ text: Substring) -> (width: Int, height: Int)? {
    let parts = text.split(separator: "x", maxSplits: 1, omittingEmptySubsequences: false)
    guard parts.count == 2, let width = decimalInteger(parts[0]), let height = decimalInteger(parts[1]) else {
        return nil
    }
    return (width, height)
}
