import Basics
import DBusKit
import FoundationEssentials
import MPRIS

/// What `spool status` knows at one moment, read from the daemon's Player and Spool1
/// properties: the one value the status lines, `--json` and `--format` are all made from,
/// so the three never disagree and each is a pure function tested without a daemon.
struct StatusSnapshot {
    /// `Playing`, `Paused` or `Stopped`, as MPRIS says it.
    var status = "Stopped"
    /// The track's MPRIS object path; nil when nothing is queued.
    var trackID: String?
    /// The title tag, else the URL; nil when nothing is queued.
    var title: String?
    /// The artists, joined with ", ".
    var artist: String?
    /// The album tag.
    var album: String?
    /// The track's URL.
    var url: String?
    /// Seconds from the start of the track.
    var position = 0.0
    /// The track's length in seconds, when known.
    var length: Double?
    /// 0...1, MPRIS's volume.
    var volume = 1.0
    /// The playback rate (1 is normal speed).
    var rate = 1.0
    /// `none`, `track` or `playlist`, as `spool loop` takes them.
    var loop = "none"
    /// Whether shuffle is on.
    var shuffle = false
    /// Whether a read waits for the network.
    var buffering = false
    /// Whether the sound server paused playback for a call.
    var interrupted = false
    /// Whether metered-network rules are in force.
    var metered = false
    /// Whether the track is a local file (then all of it is "cached").
    var isLocal = false
    /// Bytes of the track in the cache.
    var cachedBytes: Int64 = 0
    /// The track's size in bytes, when the origin said it.
    var contentLength: Int64?
    /// The cached byte ranges, `start..<end`.
    var cachedRanges: [(Int64, Int64)] = []
    /// What the track's download is doing (`complete`, `downloading`…), empty when nothing runs.
    var download = ""
    /// The daemon's last error, empty when none.
    var error = ""
    /// The station's name when the track is a live stream (internet radio); nil otherwise.
    var station: String?
    /// The song the station says is on air, as it sent it ("Artist - Title"), when it names one.
    var song: String?
    /// When the audio heard now went on air (a live stream that dates its audio), in seconds
    /// since 1970; nil otherwise.
    var aired: Double?

    /// The variant played, when the track is one of several (an HLS master playlist's):
    /// its bit rate in kbit/s, its place from the lowest and how many there are.
    var variant: (bitrate: Int, number: Int, count: Int)?

    /// Reads the snapshot out of the Player and Spool1 property dictionaries.
    init(player: [String: DBusValue], spool: [String: DBusValue]) {
        status = player["PlaybackStatus"]?.stringValue ?? "Stopped"
        volume = player["Volume"]?.doubleValue ?? 1
        rate = player["Rate"]?.doubleValue ?? 1
        loop = (player["LoopStatus"]?.stringValue ?? "None").lowercased()
        shuffle = player["Shuffle"]?.boolValue == true
        buffering = spool["Buffering"]?.boolValue == true
        interrupted = spool["Interrupted"]?.boolValue == true
        metered = spool["Metered"]?.boolValue == true
        download = spool["DownloadState"]?.stringValue ?? ""
        error = spool["LastError"]?.stringValue ?? ""
        let live = spool["Live"]?.stringVariantDictValue ?? [:]
        station = live["station"]?.stringValue
        song = live["song"]?.stringValue
        if let date = live["aired"]?.int64Value, let then = live["airedPosition"]?.int64Value {
            let now = player["Position"]?.int64Value ?? then
            aired = Double(date + (now - then)) / 1e6
        }
        let chosen = spool["Variant"]?.stringVariantDictValue ?? [:]
        if let bitrate = chosen["bitrate"]?.int32Value, let number = chosen["number"]?.int32Value,
            let count = chosen["count"]?.int32Value
        {
            variant = (Int(bitrate), Int(number), Int(count))
        }
        let metadata = player["Metadata"]?.stringVariantDictValue ?? [:]
        guard let track = metadata["mpris:trackid"]?.objectPathValue, track != MPRISService.noTrack else { return }
        trackID = track
        url = metadata["xesam:url"]?.stringValue
        title = metadata["xesam:title"]?.stringValue ?? url ?? "?"
        artist = metadata["xesam:artist"]?.stringArrayValue.flatMap { $0.isEmpty ? nil : $0.joined(separator: ", ") }
        album = metadata["xesam:album"]?.stringValue
        position = Double(player["Position"]?.int64Value ?? 0) / 1e6
        length = metadata["mpris:length"]?.int64Value.map { Double($0) / 1e6 }
        isLocal = url?.hasPrefix("file:") == true
        cachedRanges =
            spool["CachedRanges"]?.arrayValues?.compactMap { value -> (Int64, Int64)? in
                guard let fields = value.structureFields, fields.count == 2, let start = fields[0].int64Value,
                    let end = fields[1].int64Value
                else { return nil }
                return (start, end)
            } ?? []
        cachedBytes = cachedRanges.reduce(0) { $0 + $1.1 - $1.0 }
        contentLength = spool["ContentLength"]?.int64Value.flatMap { $0 > 0 ? $0 : nil }
    }

    /// A snapshot of nothing queued, stopped (for tests and as a starting value).
    init() {}

    /// Whether a track is loaded.
    var hasTrack: Bool { trackID != nil }

    /// The share of the track on disk, 0...1: all of a local file; nil when the length is unknown.
    var cachedFraction: Double? {
        if isLocal { return 1 }
        guard let contentLength else { return nil }
        return min(1, Double(cachedBytes) / Double(contentLength))
    }

    /// "Title – Artist", the one order every command shows a track in.
    var label: String { trackLabel(title: title ?? "", artist: artist) }

    /// How much of the track is here as status shows it: `45%`, else (a stream of unknown
    /// length) the bytes downloaded, else empty.
    var cachedText: String {
        if let fraction = cachedFraction { return "\(Int(fraction * 100))%" }
        return cachedBytes > 0 ? formatBytes(cachedBytes) : ""
    }

    /// `volume 40%`, `rate 1.25×`, `loop none`, `shuffle off`: the settings status shows.
    var settings: [String] {
        [
            "volume \(cFormat("%.0f", volume * 100))%", "rate \(cFormat("%g", rate))×", "loop \(loop)",
            "shuffle \(shuffle ? "on" : "off")",
        ]
    }
}

/// "Title – Artist" (an en dash), or the title alone: the order status, queue and JSON share.
func trackLabel(title: String, artist: String?) -> String {
    guard let artist, !artist.isEmpty else { return title }
    return "\(title) – \(artist)"
}

/// A JSON scalar: the values of the `--json` object.
enum JSONScalar: Encodable, Equatable {
    /// A JSON string.
    case string(String)
    /// A number with a fraction (finite: JSON has no NaN).
    case number(Double)
    /// A whole number, written without a fraction.
    case integer(Int64)
    /// `true` or `false`.
    case bool(Bool)
    /// `null`: a value that is not known.
    case null

    /// Encodes the bare value.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }
}

extension StatusSnapshot {
    /// The `--json` object's fields. Every key is always present (null when unknown), so a
    /// script never needs to test for one; `text`, `tooltip` and `class` are what waybar's
    /// `return-type: json` reads.
    func jsonFields(text: String?) -> [String: JSONScalar] {
        func optional(_ value: String?) -> JSONScalar { value.map(JSONScalar.string) ?? .null }
        // Milliseconds are plenty; JSON has no NaN or infinity, so those become null.
        func number(_ value: Double?) -> JSONScalar {
            guard let value, value.isFinite else { return .null }
            return .number((value * 1000).rounded() / 1000)
        }
        return [
            "status": .string(status),
            "track_id": optional(trackID),
            "title": optional(title),
            "artist": optional(artist),
            "album": optional(album),
            "url": optional(url),
            "position": number(position),
            "length": number(length),
            "volume": volume.isFinite ? .integer(Int64((min(max(volume, 0), 10) * 100).rounded())) : .null,
            "rate": number(rate),
            "loop": .string(loop),
            "shuffle": .bool(shuffle),
            "buffering": .bool(buffering),
            "interrupted": .bool(interrupted),
            "metered": .bool(metered),
            "cached": number(cachedFraction),
            "cached_bytes": .integer(cachedBytes),
            "content_length": contentLength.map(JSONScalar.integer) ?? .null,
            "download": .string(download),
            "error": .string(error),
            "live": .bool(station != nil),
            "station": optional(station),
            "song": optional(song),
            "on_air": aired.map { .integer(Int64($0.rounded(.down))) } ?? .null,
            "variant_bitrate": variant.map { .integer(Int64($0.bitrate)) } ?? .null,
            "text": .string(text ?? (hasTrack ? label : "")),
            "tooltip": .string(hasTrack ? "\(status): \(label)" : "\(status): nothing queued"),
            "class": .string(status.lowercased()),
        ]
    }

    /// The `--json` line: one object, keys sorted, valid UTF-8, no newline inside.
    /// `text` replaces the default `text` field (`Title – Artist`) with a rendered template.
    func json(text: String?) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding strings, numbers and booleans cannot fail; a failure would be a bug here.
        guard let data = try? encoder.encode(jsonFields(text: text)) else { preconditionFailure("unencodable status") }
        return String(decoding: data, as: UTF8.self)
    }
}
