import FoundationEssentials

/// Reads an `EXT-X-PROGRAM-DATE-TIME` value, an ISO 8601 date and time
/// (`2010-02-19T14:54:23.031+08:00`): seconds and their fraction optional, the zone `Z`,
/// `±hh:mm`, `±hhmm` or `±hh`. A time without a zone is taken as UTC, not local time (RFC 8216
/// §4.3.2.6 lets the client choose, and a pure parser cannot depend on the machine's zone).
/// Written by hand because it is a few lines and needs neither a formatter nor ICU.
func iso8601Date(_ text: Substring) -> Date? {
    var text = text
    return text.withUTF8 { bytes in
        var reader = DigitReader(bytes: bytes)
        return iso8601Date(&reader)
    }
}

private func iso8601Date(_ reader: inout DigitReader) -> Date? {
    guard let year = reader.number(digits: 4), reader.skip("-"), let month = reader.number(digits: 2),
        reader.skip("-"), let day = reader.number(digits: 2),
        reader.skip("T") || reader.skip("t") || reader.skip(" "),
        let hour = reader.number(digits: 2), reader.skip(":"), let minute = reader.number(digits: 2)
    else { return nil }
    var second = 0
    var fraction = 0.0
    if reader.skip(":") {
        guard let whole = reader.number(digits: 2) else { return nil }
        second = whole
        if reader.skip(".") || reader.skip(",") {
            var scale = 0.1
            var digits = 0
            while let digit = reader.digit() {
                fraction += Double(digit) * scale
                scale /= 10
                digits += 1
            }
            guard digits > 0 else { return nil }
        }
    }
    guard (1...12).contains(month), (1...31).contains(day), hour <= 24, minute <= 59, second <= 60 else { return nil }
    var zoneOffsetSeconds = 0
    if reader.skip("Z") || reader.skip("z") {
        zoneOffsetSeconds = 0
    } else if let sign = reader.sign() {
        guard let zoneHours = reader.number(digits: 2), zoneHours <= 23 else { return nil }
        var zoneMinutes = 0
        if reader.skip(":") {
            guard let minutes = reader.number(digits: 2) else { return nil }
            zoneMinutes = minutes
        } else if let minutes = reader.number(digits: 2) {
            zoneMinutes = minutes
        }
        guard zoneMinutes <= 59 else { return nil }
        zoneOffsetSeconds = sign * (zoneHours * 3600 + zoneMinutes * 60)
    }
    guard reader.isAtEnd else { return nil }
    let days = daysSince1970(year: year, month: month, day: day)
    let secondsOfDay = hour * 3600 + minute * 60 + second
    let epochSeconds = days * 86_400 + secondsOfDay - zoneOffsetSeconds
    return Date(timeIntervalSince1970: TimeInterval(epochSeconds) + fraction)
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
/// `days_from_civil`).
private func daysSince1970(year: Int, month: Int, day: Int) -> Int {
    let shiftedYear = month <= 2 ? year - 1 : year
    let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
    let yearOfEra = shiftedYear - era * 400
    let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
}

/// A cursor over ASCII bytes for the date reader.
private struct DigitReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0

    var isAtEnd: Bool { position == bytes.count }

    /// Consumes `character` when it is next.
    mutating func skip(_ character: Unicode.Scalar) -> Bool {
        guard position < bytes.count, bytes[position] == UInt8(truncatingIfNeeded: character.value) else {
            return false
        }
        position += 1
        return true
    }

    /// Consumes one decimal digit.
    mutating func digit() -> Int? {
        guard position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 else { return nil }
        position += 1
        return Int(bytes[position - 1] - 0x30)
    }

    /// Consumes exactly `digits` decimal digits, or nothing.
    mutating func number(digits: Int) -> Int? {
        let saved = position
        var value = 0
        for _ in 0..<digits {
            guard let digit = digit() else {
                position = saved
                return nil
            }
            value = value * 10 + digit
        }
        return value
    }

    /// Consumes `+` (1) or `-` (-1).
    mutating func sign() -> Int? {
        if skip("+") { return 1 }
        if skip("-") { return -1 }
        return nil
    }
}
