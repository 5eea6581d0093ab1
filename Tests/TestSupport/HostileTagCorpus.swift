import Foundation

/// One file of the hostile tag corpus: a fixture whose tags were replaced by `tags`.
public struct HostileTagCase: Sendable, CustomStringConvertible {
    /// What the tags do (`control-characters`, `random-3`...), also part of the file name.
    public let name: String
    /// The tags written into the file.
    public let tags: RawTags
    /// The format the tags are written in.
    public let format: FixtureFormat
    /// A case called `name` writing `tags` in `format`.
    public init(name: String, tags: RawTags, format: FixtureFormat) {
        self.name = name
        self.tags = tags
        self.format = format
    }

    /// `name-format`.
    public var description: String { "\(name)-\(format.rawValue)" }
}

/// Tags no tagger writes but files carry anyway: invalid UTF-8, control characters, megabyte
/// strings, ten thousand artists, absurd numbers and dates; and seeded random mixtures of
/// them. Each is written into an MP3 (ID3v2.4), a FLAC and an Ogg Vorbis fixture.
public enum HostileTagCorpus {
    /// The formats every case is written in.
    public static let formats: [FixtureFormat] = [.mp3CBR, .flac, .oggVorbis]

    /// The byte sequences that are not UTF-8: a stray continuation byte, bytes UTF-8 never
    /// uses, an overlong NUL, a UTF-16 surrogate, a code point past U+10FFFF, a sequence cut short.
    public static let invalidUTF8: [[UInt8]] = [
        [0x80], [0xFF], [0xFE], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82],
        [0xF0, 0x9F, 0x8E],
    ]

    /// Control characters (C0, DEL and C1, the latter written as UTF-8), terminal escapes among them.
    public static let controls: [String] = [
        "\u{0}", "\u{7}", "\u{8}", "\t", "\n", "\u{B}", "\u{C}", "\r", "\u{1B}[2J", "\u{1B}]0;title\u{7}", "\u{7F}",
        "\u{80}", "\u{85}", "\u{9B}31m", "\u{9F}",
    ]

    /// Track and disc numbers no release has.
    public static let absurdNumbers = [
        "0", "4294967295", "4294967296", "-1", "99999999999999999999", "0/0", "7/4294967295", "x",
    ]

    /// Dates no release has, or that are not dates.
    public static let oddDates = [
        "0000", "0000-00-00", "9999-99-99", "2024-02-30", "-0001-01-01", "65535", "1970-01-01T25:61:61Z",
        "2001\u{1B}[2J", "",
    ]

    /// A mebibyte (about) of text: `piece` drawn at random, in UTF-8.
    static func megabyte(_ pieces: [String], _ random: inout SeededGenerator) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(1 << 20 + 16)
        while bytes.count < 1 << 20 { bytes += Array(pieces[random.next(below: pieces.count)].utf8) }
        return bytes
    }

    /// Every case in every format: the named ones, then `randomCount` random mixtures per format.
    public static func cases(randomCount: Int, _ random: inout SeededGenerator) -> [HostileTagCase] {
        var named: [(String, RawTags)] = []
        var tags = RawTags()

        tags.add(.title, Array("Bad ".utf8) + invalidUTF8.joined(separator: Array(" ".utf8)))
        tags.add(.artist, [0x80] + Array("lone continuation".utf8))
        tags.add(.album, (0..<64).map { _ in UInt8(0x80 + random.next(below: 0x80)) })
        tags.add(.comment, Array("cut short ".utf8) + [0xF0, 0x9F, 0x8E])
        named.append(("invalid-utf8", tags))

        tags = RawTags()
        tags.add(.title, "Esc\u{1B}[2J\u{7}Bell\r\nNew\u{7F}Del\u{85}Nel\u{9B}Csi\tTab\u{0}Nul")
        tags.add(.artist, "\u{1B}]0;owned\u{7}Artist")
        tags.add(.album, "\u{8}\u{8}\u{8}Back\u{2028}Separated")
        tags.add(.albumArtist, "\u{C}Form\u{B}Feed")
        tags.add(.genre, "\u{1}\u{2}\u{3}")
        tags.add(.comment, "Line one\nLine two\r\n\u{0}")
        named.append(("control-characters", tags))

        tags = RawTags()
        let text = ["a", "b", " ", "é", "中", "🎵", "e\u{301}", "🇫🇷", "👩‍👩‍👧"]
        tags.add(.title, megabyte(text, &random))
        tags.add(.artist, megabyte(text, &random))
        tags.add(.album, megabyte(text, &random))
        tags.add(.comment, megabyte(text + controls, &random))
        // One grapheme cluster of a mebibyte: a letter and its combining marks.
        tags.add(.albumArtist, Array("a".utf8) + megabyte(["\u{301}", "\u{308}", "\u{323}"], &random))
        named.append(("megabyte-strings", tags))

        tags = RawTags()
        tags.add(.title, "Ten thousand artists")
        for index in 1...10_000 { tags.add(.artist, "Artist \(index)") }
        for index in 1...1_000 { tags.add(.genre, "Genre \(index)") }
        named.append(("ten-thousand-artists", tags))

        for (index, (track, disc)) in [
            ("4294967295", "4294967295/4294967295"), ("0", "0/0"), ("-1", "99999999999999999999"),
        ]
        .enumerated() {
            tags = RawTags()
            tags.add(.title, "Absurd numbers \(index)")
            tags.add(.trackNumber, track)
            tags.add(.discNumber, disc)
            named.append(("absurd-numbers-\(index)", tags))
        }

        for (index, date) in ["0000-00-00", "9999-99-99T99:99:99"].enumerated() {
            tags = RawTags()
            tags.add(.title, "Odd date \(index)")
            tags.add(.date, date)
            named.append(("odd-date-\(index)", tags))
        }

        tags = RawTags()
        tags.add(.title, "")
        tags.add(.artist, " \t ")
        tags.add(.album, "\r\n")
        tags.add(.genre, "")
        named.append(("blank", tags))

        var cases = formats.flatMap { format in named.map { HostileTagCase(name: $0.0, tags: $0.1, format: format) } }
        for format in formats {
            for index in 0..<randomCount {
                cases.append(HostileTagCase(name: "random-\(index)", tags: mixture(&random), format: format))
            }
        }
        return cases
    }

    /// Random fields, each a random run of pieces: valid text, controls, invalid UTF-8, raw
    /// bytes, long repeats; numbers and dates from the absurd lists.
    static func mixture(_ random: inout SeededGenerator) -> RawTags {
        var tags = RawTags()
        for _ in 0...random.next(below: 8) {
            let field = RawTagField.allCases[random.next(below: RawTagField.allCases.count)]
            switch field {
            case .trackNumber, .discNumber:
                tags.add(field, absurdNumbers[random.next(below: absurdNumbers.count)])
            case .date:
                tags.add(field, oddDates[random.next(below: oddDates.count)])
            default:
                var value: [UInt8] = []
                for _ in 0..<random.next(below: 12) {
                    switch random.next(below: 5) {
                    case 0: value += Array("Text é 中 🎵".utf8)
                    case 1: value += Array(controls[random.next(below: controls.count)].utf8)
                    case 2: value += invalidUTF8[random.next(below: invalidUTF8.count)]
                    case 3: value += (0..<random.next(below: 32)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                    default: value += Array(String(repeating: "long ", count: random.next(below: 20_000)).utf8)
                    }
                }
                tags.add(field, value)
            }
        }
        return tags
    }

    /// Writes `hostile` into a copy of the fixture of its format, in `directory`; returns the file.
    public static func write(_ hostile: HostileTagCase, fixtures: Fixtures, into directory: URL) throws -> URL {
        let source = try Data(contentsOf: fixtures.fixture(hostile.format).url)
        let data: Data =
            switch hostile.format {
            case .mp3CBR, .mp3VBR: RawTagWriter.mp3(source, hostile.tags)
            case .flac: try RawTagWriter.flac(source, hostile.tags)
            case .oggVorbis: try RawTagWriter.oggVorbis(source, hostile.tags)
            default: throw RigError("no raw tag writer for \(hostile.format)")
            }
        let url = directory.appendingPathComponent("\(hostile).\(hostile.format.fileExtension)")
        try data.write(to: url)
        return url
    }
}
