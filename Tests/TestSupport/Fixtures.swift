import Foundation
import Synchronization

/// The container/codec of a generated audio fixture.
public enum FixtureFormat: String, Sendable, CaseIterable {
    /// MP3, constant bit rate, with a Xing/Info + LAME header frame.
    case mp3CBR
    /// MP3, variable bit rate, with a Xing + LAME header frame.
    case mp3VBR
    /// FLAC (native container).
    case flac
    /// Vorbis in Ogg.
    case oggVorbis
    /// Opus in Ogg.
    case oggOpus
    /// AAC in MP4 with the `moov` atom before `mdat` (faststart).
    case m4aFaststart
    /// AAC in MP4 with the `moov` atom after `mdat`.
    case m4aMoovAtEnd
    /// PCM WAV.
    case wav

    /// The file name extension.
    public var fileExtension: String {
        switch self {
        case .mp3CBR, .mp3VBR: "mp3"
        case .flac: "flac"
        case .oggVorbis: "ogg"
        case .oggOpus: "opus"
        case .m4aFaststart, .m4aMoovAtEnd: "m4a"
        case .wav: "wav"
        }
    }

    /// The MIME type a server would report.
    public var mimeType: String {
        switch self {
        case .mp3CBR, .mp3VBR: "audio/mpeg"
        case .flac: "audio/flac"
        case .oggVorbis, .oggOpus: "audio/ogg"
        case .m4aFaststart, .m4aMoovAtEnd: "audio/mp4"
        case .wav: "audio/wav"
        }
    }

    /// Whether the format carries a track number tag GStreamer reads back (WAV's INFO chunk has none).
    public var holdsTrackNumber: Bool { self != .wav }

    /// The gst-launch elements between the tag injector and the file sink.
    fileprivate var encoderElements: [String] {
        switch self {
        case .mp3CBR: ["lamemp3enc", "target=bitrate", "bitrate=128", "cbr=true", "!", "xingmux", "!", "id3v2mux"]
        case .mp3VBR: ["lamemp3enc", "target=quality", "quality=4", "!", "xingmux", "!", "id3v2mux"]
        case .flac: ["flacenc"]
        case .oggVorbis: ["vorbisenc", "!", "oggmux"]
        case .oggOpus: ["audioresample", "!", "opusenc", "!", "oggmux"]  // Opus encodes at 48 kHz
        case .m4aFaststart: ["avenc_aac", "!", "mp4mux", "faststart=true"]
        case .m4aMoovAtEnd: ["avenc_aac", "!", "mp4mux", "faststart=false"]
        case .wav: ["wavenc"]
        }
    }
}

/// One generated audio file: a steady sine tone at its own frequency, 44.1 kHz stereo, tagged.
public struct Fixture: Sendable, Hashable, CustomStringConvertible {
    /// Unique name, also the file's base name (e.g. `tone-440-mp3CBR`).
    public let name: String
    /// Container and codec.
    public let format: FixtureFormat
    /// Where the file is.
    public let url: URL
    /// The sine tone's frequency in Hz, distinct for every fixture.
    public let frequency: Int
    /// Expected title tag.
    public let title: String
    /// Expected artist tag.
    public let artist: String
    /// Expected album tag.
    public let album: String
    /// Expected track number tag, nil when the format cannot hold one.
    public let trackNumber: Int?
    /// Approximate duration in seconds (encoder padding may add a few milliseconds).
    public let duration: Double
    /// Whether a PNG cover image is embedded (ID3v2 APIC for MP3, METADATA_BLOCK_PICTURE for FLAC).
    public let hasCover: Bool
    /// MIME type of the file.
    public var mimeType: String { format.mimeType }
    /// The file's name within the fixtures directory.
    public var fileName: String { url.lastPathComponent }
    /// The fixture's name.
    public var description: String { name }
}

/// The audio fixtures for a test process, generated on first use into a temporary
/// directory with gst-launch-1.0 and shared by every test afterwards.
public final class Fixtures: Sendable {
    /// The directory holding every fixture file (and `cover.png`).
    public let directory: URL
    /// Every fixture, in generation order.
    public let all: [Fixture]
    /// The embedded cover image (a small PNG).
    public let coverPNG: Data

    private static let buffers = 150
    private static let framesPerBuffer = 1024
    /// Samples per channel in every fixture: 150 buffers of 1024 frames, ~3.48 s at 44.1 kHz.
    public static let sampleCount = buffers * framesPerBuffer
    /// The sample rate of every fixture's source audio.
    public static let sampleRate = 44_100

    private static let cache = Mutex<Fixtures?>(nil)

    /// The process-wide fixtures, generated once (concurrent callers wait for the first).
    public static func shared() throws -> Fixtures {
        try cache.withLock { cached in
            if let cached { return cached }
            let made = try Fixtures()
            cached = made
            return made
        }
    }

    /// The plain (cover-less) fixture of `format`.
    public func fixture(_ format: FixtureFormat) -> Fixture {
        all.first { $0.format == format && !$0.hasCover }!
    }

    /// The fixtures with an embedded cover image.
    public var withCover: [Fixture] { all.filter(\.hasCover) }

    /// The fixture called `name`, if any.
    public subscript(name: String) -> Fixture? { all.first { $0.name == name } }

    private struct Plan {
        let format: FixtureFormat
        let frequency: Int
        let track: Int
        let cover: Bool
    }

    private static let plans: [Plan] = [
        Plan(format: .mp3CBR, frequency: 440, track: 1, cover: false),
        Plan(format: .mp3VBR, frequency: 494, track: 2, cover: false),
        Plan(format: .flac, frequency: 523, track: 3, cover: false),
        Plan(format: .oggVorbis, frequency: 587, track: 4, cover: false),
        Plan(format: .oggOpus, frequency: 659, track: 5, cover: false),
        Plan(format: .m4aFaststart, frequency: 698, track: 6, cover: false),
        Plan(format: .m4aMoovAtEnd, frequency: 784, track: 7, cover: false),
        Plan(format: .wav, frequency: 880, track: 8, cover: false),
        Plan(format: .mp3CBR, frequency: 330, track: 9, cover: true),
        Plan(format: .flac, frequency: 392, track: 10, cover: true),
    ]

    private init() throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
            .appendingPathComponent("spool-fixtures-\(getpid())-\(UUID().uuidString.prefix(6))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        Self.registerRemovalAtExit(directory)
        self.directory = directory

        let duration = Double(Self.sampleCount) / Double(Self.sampleRate)
        let fixtures = Self.plans.map { plan in
            let name = "tone-\(plan.frequency)-\(plan.format.rawValue)\(plan.cover ? "-cover" : "")"
            return Fixture(
                name: name, format: plan.format,
                url: directory.appendingPathComponent("\(name).\(plan.format.fileExtension)"),
                frequency: plan.frequency, title: "Tone \(plan.frequency)", artist: "Spool", album: "Fixtures",
                trackNumber: plan.format.holdsTrackNumber ? plan.track : nil,
                duration: duration, hasCover: plan.cover)
        }

        // All encoders run at once; each takes a fraction of a second.
        let logs = directory.appendingPathComponent("logs", isDirectory: true)
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let coverURL = directory.appendingPathComponent("cover.png")
        var jobs = [(ChildProcess, String)]()
        jobs.append((try Self.gst(Self.coverPipeline(to: coverURL), logs: logs), "cover.png"))
        for (fixture, plan) in zip(fixtures, Self.plans) {
            let target = plan.cover ? directory.appendingPathComponent("\(fixture.name).raw") : fixture.url
            jobs.append((try Self.gst(Self.audioPipeline(fixture, to: target), logs: logs), fixture.name))
        }
        for (job, name) in jobs {
            let status = job.blockUntilExit(timeout: 60)
            guard status == 0 else {
                job.stop(grace: 1)
                throw RigError(
                    "generating fixture \(name) failed (\(String(describing: status))): \(job.standardError)")
            }
        }

        coverPNG = try Data(contentsOf: coverURL)
        for fixture in fixtures where fixture.hasCover {
            let raw = directory.appendingPathComponent("\(fixture.name).raw")
            let plain = try Data(contentsOf: raw)
            let covered: Data
            switch fixture.format {
            case .mp3CBR, .mp3VBR: covered = try CoverEmbedding.mp3(plain, fixture: fixture, png: coverPNG)
            case .flac: covered = try CoverEmbedding.flac(plain, png: coverPNG)
            default: throw RigError("no cover embedding for \(fixture.format)")
            }
            try covered.write(to: fixture.url)
            try FileManager.default.removeItem(at: raw)
        }
        all = fixtures
    }

    private static func gst(_ pipeline: [String], logs: URL) throws -> ChildProcess {
        try ChildProcess("gst-launch-1.0", ["-q"] + pipeline, logDirectory: logs)
    }

    private static func coverPipeline(to url: URL) -> [String] {
        [
            "videotestsrc", "num-buffers=1", "!", "video/x-raw,width=32,height=32", "!", "pngenc", "!",
            "filesink", "location=\(url.path)",
        ]
    }

    private static func audioPipeline(_ fixture: Fixture, to url: URL) -> [String] {
        var tags = "title=\"\(fixture.title)\",artist=\(fixture.artist),album=\(fixture.album)"
        if let track = fixture.trackNumber { tags += ",track-number=(uint)\(track)" }
        let escaped = tags.replacingOccurrences(of: "\"", with: "\\\"")
        return [
            "audiotestsrc", "wave=sine", "freq=\(fixture.frequency)", "num-buffers=\(buffers)",
            "samplesperbuffer=\(framesPerBuffer)", "!",
            "audio/x-raw,rate=\(sampleRate),channels=2", "!", "audioconvert", "!", "taginject", "tags=\"\(escaped)\"",
            "!",
        ]
            + fixture.format.encoderElements + ["!", "filesink", "location=\(url.path)"]
    }

    private static let removalPath = Mutex<String?>(nil)

    private static func registerRemovalAtExit(_ directory: URL) {
        removalPath.withLock { $0 = directory.path }
        atexit {
            if let path = Fixtures.removalPath.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
        }
    }
}

/// Writers for the binary cover-art structures GStreamer's command line cannot produce.
/// Writes cover art into fixture files the way taggers do.
public enum CoverEmbedding {
    /// Replaces the MP3's leading ID3v2 tag (if any) with an ID3v2.3 tag holding
    /// TIT2, TPE1, TALB, TRCK and an APIC front cover.
    /// `file` (an MP3) with an ID3v2.3 tag holding `fixture`'s texts and `png` as the front cover.
    public static func mp3(_ file: Data, fixture: Fixture, png: Data) throws -> Data {
        let frames =
            file.prefix(3) == Data("ID3".utf8) && file.count > 10 ? file.dropFirst(id3TagLength(file)) : file[...]
        func textFrame(_ id: String, _ text: String) -> Data {
            id3Frame(id, Data([0]) + Data(text.utf8))  // encoding 0: ISO-8859-1
        }
        var body = Data()
        body += textFrame("TIT2", fixture.title)
        body += textFrame("TPE1", fixture.artist)
        body += textFrame("TALB", fixture.album)
        if let track = fixture.trackNumber { body += textFrame("TRCK", String(track)) }
        // APIC: encoding, MIME type, NUL, picture type 3 (front cover), empty description, image.
        body += id3Frame("APIC", Data([0]) + Data("image/png".utf8) + Data([0, 3, 0]) + png)
        var header = Data("ID3".utf8) + Data([3, 0, 0])
        header += syncsafe(body.count)
        return header + body + frames
    }

    /// Inserts a METADATA_BLOCK_PICTURE block right after STREAMINFO.
    static func flac(_ file: Data, png: Data) throws -> Data {
        let bytes = [UInt8](file)
        guard bytes.count > 42, bytes[0..<4] == [0x66, 0x4C, 0x61, 0x43] else { throw RigError("not a FLAC file") }
        let streamInfoHeader = bytes[4]
        guard streamInfoHeader & 0x7F == 0 else { throw RigError("FLAC does not start with STREAMINFO") }
        let streamInfoIsLast = streamInfoHeader & 0x80 != 0
        let streamInfoEnd = 8 + (Int(bytes[5]) << 16 | Int(bytes[6]) << 8 | Int(bytes[7]))

        let mime = Data("image/png".utf8)
        var picture = bigEndian32(3) + bigEndian32(mime.count) + mime + bigEndian32(0)  // front cover, no description
        // Width, height, depth, colours.
        picture += bigEndian32(32) + bigEndian32(32) + bigEndian32(24) + bigEndian32(0)
        picture += bigEndian32(png.count) + png
        let header = Data([(streamInfoIsLast ? 0x80 : 0) | 6]) + bigEndian32(picture.count).suffix(3)

        var result = Data(bytes[0..<streamInfoEnd])
        result[4] = streamInfoHeader & 0x7F
        return result + header + picture + Data(bytes[streamInfoEnd...])
    }

    /// The whole length of the ID3v2 tag at the start of `file`: header, body and optional footer.
    private static func id3TagLength(_ file: Data) -> Int {
        let header = [UInt8](file.prefix(10))
        let size = header[6...9].reduce(0) { $0 << 7 | Int($1 & 0x7F) }
        let footer = header[5] & 0x10 != 0 ? 10 : 0
        return 10 + size + footer
    }

    private static func id3Frame(_ id: String, _ content: Data) -> Data {
        Data(id.utf8) + bigEndian32(content.count) + Data([0, 0]) + content
    }

    private static func syncsafe(_ value: Int) -> Data {
        Data([3, 2, 1, 0].map { UInt8((value >> ($0 * 7)) & 0x7F) })
    }

    private static func bigEndian32(_ value: Int) -> Data {
        Data([3, 2, 1, 0].map { UInt8((value >> ($0 * 8)) & 0xFF) })
    }
}
