/// The lyrics of an ID3v2 `USLT` frame. GStreamer 1.22's id3 reader maps no frame to its lyrics
/// tag: it passes `USLT` on as a raw frame (`private-id3v2-frame`), header included, which this
/// reads. Pure, so it is tested on bytes.
enum ID3Lyrics {
    /// The text of `frame` (a whole frame, its 10-byte header first) when it is a `USLT` frame
    /// of an ID3v2.`version` tag that is neither compressed nor encrypted; nil otherwise.
    static func text(ofFrame frame: [UInt8], version: Int) -> String? {
        guard frame.count > 10, frame[0..<4].elementsEqual("USLT".utf8) else { return nil }
        let flags = frame[9]
        var start = 10
        if version >= 4 {
            guard flags & 0x0C == 0 else { return nil }  // compressed, encrypted
            if flags & 0x40 != 0 { start += 1 }  // group id
            if flags & 0x01 != 0 { start += 4 }  // data length indicator
        } else {
            guard flags & 0xC0 == 0 else { return nil }  // compressed, encrypted
            if flags & 0x20 != 0 { start += 1 }  // group id
        }
        // Encoding, a three-letter language, a description ended by NUL (two in UTF-16), the text.
        guard frame.count > start + 4 else { return nil }
        let encoding = frame[start]
        let body = Array(frame[(start + 4)...])
        let wide = encoding == 1 || encoding == 2
        var textStart = body.count
        if wide {
            for index in stride(from: 0, to: body.count - 1, by: 2) where body[index] == 0 && body[index + 1] == 0 {
                textStart = index + 2
                break
            }
        } else if let end = body.firstIndex(of: 0) {
            textStart = end + 1
        }
        let text = decode(Array(body[textStart...]), encoding: encoding)
        let trimmed = String(text.unicodeScalars.reversed().drop { $0 == "\0" }.reversed().map(Character.init))
        return trimmed.isEmpty ? nil : trimmed
    }

    /// `bytes` in an ID3 text encoding: 0 Latin-1, 1 UTF-16 with a byte order mark, 2 UTF-16BE,
    /// 3 UTF-8; invalid sequences become U+FFFD.
    static func decode(_ bytes: [UInt8], encoding: UInt8) -> String {
        switch encoding {
        case 0:
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        case 1, 2:
            var bigEndian = encoding == 2
            var units = bytes[...]
            if encoding == 1, bytes.count >= 2,
                (bytes[0], bytes[1]) == (0xFF, 0xFE) || (bytes[0], bytes[1]) == (0xFE, 0xFF)
            {
                bigEndian = bytes[0] == 0xFE
                units = units.dropFirst(2)
            }
            let values = stride(from: units.startIndex, to: units.endIndex - 1, by: 2).map { index -> UInt16 in
                let (first, second) = (UInt16(units[index]), UInt16(units[index + 1]))
                return bigEndian ? first << 8 | second : first | second << 8
            }
            return String(decoding: values, as: UTF16.self)
        default:
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
