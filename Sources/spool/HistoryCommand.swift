import Basics
import DBusKit
import FoundationEssentials
import Glibc
import PlayerCore

extension ControlCommand {
    /// `spool history`: the songs the daemon heard on internet radio.
    static let history = ControlCommand(
        name: "history", usage: "history [--limit N] [--json]",
        summary: "List the songs heard on internet radio, newest first", run: runHistory)
}

/// What `spool history` was asked for.
struct HistoryRequest: Equatable {
    /// How many songs are listed without `--limit`: a screenful.
    static let defaultLimit = 20

    /// At most this many songs.
    var limit = defaultLimit
    /// One JSON object a line instead of the text lines.
    var json = false

    /// Reads `--limit N` (or `--limit=N`, N from 1 to ``HeardSong/historyLimit``) and `--json`.
    init(_ arguments: [String]) throws(CommandFailure) {
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--json": json = true
            case "--limit":
                guard let value = rest.popFirst() else {
                    throw .usage("'--limit' needs a number of songs, from 1 to \(HeardSong.historyLimit)")
                }
                limit = try Self.limit(value)
            default:
                guard argument.hasPrefix("--limit=") else {
                    throw .usage(
                        "unknown option '\(argument)' for 'spool history'\(hint(argument, among: ["--limit", "--json"]))"
                    )
                }
                limit = try Self.limit(String(argument.dropFirst("--limit=".count)))
            }
        }
    }

    private static func limit(_ text: String) throws(CommandFailure) -> Int {
        guard let number = Int(text), (1...HeardSong.historyLimit).contains(number) else {
            throw .usage("'--limit' takes a number of songs from 1 to \(HeardSong.historyLimit), not '\(text)'")
        }
        return number
    }
}

/// One song of the daemon's `History` reply.
struct ListedSong: Equatable {
    /// When it was heard, in Unix seconds.
    var heard: Double
    /// The station it was heard on.
    var station: String
    /// The artist, when the station named one.
    var artist: String?
    /// The song's title.
    var title: String

    /// The songs of a `History` reply (`a(dsss)`), in its order; a malformed one is skipped.
    static func songs(in reply: DBusValue?) -> [ListedSong] {
        (reply?.arrayValues ?? []).compactMap { value in
            guard let fields = value.structureFields, fields.count == 4, let heard = fields[0].doubleValue,
                // A time a calendar can show (a C time_t of it cannot overflow).
                heard.isFinite, abs(heard) < 1e11, let station = fields[1].stringValue,
                let artist = fields[2].stringValue, let title = fields[3].stringValue
            else { return nil }
            return ListedSong(heard: heard, station: station, artist: artist.isEmpty ? nil : artist, title: title)
        }
    }

    /// "Artist – Title" (an en dash) as a station announces them, or the title alone.
    var label: String {
        guard let artist else { return title }
        return "\(artist) – \(title)"
    }

    /// The line `spool history` prints: when (to the minute) at `utcOffset` seconds east of UTC
    /// (nil: the local time zone's then), the station, the song.
    func line(utcOffset: Int? = nil) -> String {
        "\(minuteText(heard, utcOffset: utcOffset ?? localUTCOffset(at: heard)))  \(station)  \(label)"
    }

    /// The `--json` line: one object, keys sorted, `artist` null when the station named none.
    var json: String {
        let fields: [String: JSONScalar] = [
            "heard": .number((heard * 1000).rounded() / 1000), "station": .string(station),
            "artist": artist.map(JSONScalar.string) ?? .null, "title": .string(title),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings and finite numbers always encode; a failure would be a bug here.
        guard let data = try? encoder.encode(fields) else { preconditionFailure("unencodable song") }
        return String(decoding: data, as: UTF8.self)
    }
}

/// `YYYY-MM-DD HH:MM` of `seconds` (Unix time) at `utcOffset` seconds east of UTC.
func minuteText(_ seconds: Double, utcOffset: Int) -> String {
    var time = time_t(seconds.rounded(.down)) + time_t(utcOffset)
    var parts = tm()
    gmtime_r(&time, &parts)
    return cFormat(
        "%04d-%02d-%02d %02d:%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min)
}

/// How far east of UTC local time was at `seconds` (Unix time), summer time included (`TZ`).
func localUTCOffset(at seconds: Double) -> Int {
    var time = time_t(seconds.rounded(.down))
    var parts = tm()
    tzset()
    localtime_r(&time, &parts)
    return parts.tm_gmtoff
}

/// `spool history [--limit N] [--json]`.
@Sendable func runHistory(_ arguments: [String]) async throws(CommandFailure) {
    let request = try HistoryRequest(arguments)
    let reply = try await SpoolClient.connect().spool("History", [.uint32(UInt32(request.limit))])
    let songs = ListedSong.songs(in: reply.first)
    if request.json {
        for song in songs { print(song.json) }
    } else if songs.isEmpty {
        print("no songs heard yet")
    } else {
        for song in songs { print(song.line()) }
    }
}
