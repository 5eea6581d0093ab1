import FoundationEssentials

// PlayerCore imports FoundationEssentials, not Foundation (the daemon must not
// map libFoundation and the ICU data). These stand in for the few
// NSString methods the track sources used.

/// The characters Foundation's `CharacterSet.urlPathAllowed` leaves as they are.
private let pathAllowed = Set("!$&'()*+,-./0123456789:=@ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~".utf8)

/// `text` with every UTF-8 byte outside `urlPathAllowed` written as `%XX`, as
/// `addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)` does.
func percentEncodingPath(_ text: String) -> String {
    var encoded = ""
    for byte in text.utf8 {
        if pathAllowed.contains(byte) {
            encoded.unicodeScalars.append(Unicode.Scalar(byte))
        } else {
            let hex = String(byte, radix: 16, uppercase: true)
            encoded += byte < 16 ? "%0" + hex : "%" + hex
        }
    }
    return encoded
}

/// `text` with its `%XX` escapes decoded; nil when an escape is malformed or
/// the bytes are not UTF-8, as `removingPercentEncoding`.
func removingPercentEncoding(_ text: String) -> String? {
    let utf8 = Array(text.utf8)
    var bytes: [UInt8] = []
    var index = 0
    while index < utf8.count {
        guard utf8[index] == UInt8(ascii: "%") else {
            bytes.append(utf8[index])
            index += 1
            continue
        }
        guard index + 2 < utf8.count, let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2])
        else { return nil }
        bytes.append(high << 4 | low)
        index += 3
    }
    return String(validating: bytes, as: UTF8.self)
}

private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

/// Whether `lhs` sorts before `rhs` the way a file manager lists names, like
/// `localizedStandardCompare` but without ICU: runs of digits compare by value
/// ("2" before "10"), letters ignore case, and spaces and punctuation come
/// before digits, digits before letters. Names equal by those rules fall back
/// to plain string order, so the order is total.
func naturallyPrecedes(_ lhs: String, _ rhs: String) -> Bool {
    var left = lhs[...]
    var right = rhs[...]
    while let l = left.first, let r = right.first {
        if l.isASCIIDigit, r.isASCIIDigit {
            let leftDigits = left.prefix(while: \.isASCIIDigit)
            let rightDigits = right.prefix(while: \.isASCIIDigit)
            let leftValue = leftDigits.drop { $0 == "0" }
            let rightValue = rightDigits.drop { $0 == "0" }
            if leftValue.count != rightValue.count { return leftValue.count < rightValue.count }
            if leftValue != rightValue { return leftValue < rightValue }
            left = left.dropFirst(leftDigits.count)
            right = right.dropFirst(rightDigits.count)
            continue
        }
        let (leftRank, rightRank) = (l.sortRank, r.sortRank)
        if leftRank != rightRank { return leftRank < rightRank }
        let (leftFolded, rightFolded) = (l.lowercased(), r.lowercased())
        if leftFolded != rightFolded { return leftFolded < rightFolded }
        left = left.dropFirst()
        right = right.dropFirst()
    }
    if left.isEmpty != right.isEmpty { return left.isEmpty }
    return lhs < rhs
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
    /// Spaces and punctuation, then digits, then letters and everything else.
    fileprivate var sortRank: Int { isLetter ? 2 : isNumber ? 1 : isWhitespace || isPunctuation || isSymbol ? 0 : 2 }
}
