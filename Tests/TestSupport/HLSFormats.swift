import Foundation

/// HLS presentations in the two segment formats besides MPEG-TS, made at test time from the
/// tone ``HLSMedia`` encodes (440 Hz, 44.1 kHz stereo, AAC at 128 kbit/s): packed audio (RFC 8216
/// §3.4: ADTS segments, each led by an ID3 tag with its timestamp) and fragmented MP4 (§3.3: an
/// initialization section, then `moof`+`mdat` segments). Each maker also returns the same audio
/// as one file, which a test decodes to compare what the segments' joins do to the sound.
public enum HLSFormats {
    /// A made presentation: the on-demand playlist, its segments' file names in order, and the
    /// whole encoded file the segments were cut from.
    public typealias Presentation = (playlist: URL, segments: [String], whole: URL)

    /// The owner of the PRIV frame that carries a packed-audio segment's timestamp (RFC 8216 §3.4).
    public static let timestampOwner = "com.apple.streaming.transportStreamTimestamp"

    /// Writes `seconds` of the tone as packed-audio HLS into `folder`: `segNNN.aac` files of
    /// whole ADTS frames, about `targetDuration` seconds each (a short tail joins the last), each
    /// led by an ID3v2 tag whose PRIV frame holds the 90 kHz timestamp of its first sample;
    /// `whole` is the ADTS file they were cut from, with no tags.
    /// `songs` gives the segment numbered `n` a song to name (`TIT2`, `TPE1`) in its tag, as
    /// radio packagers do.
    public static func makePackedAudio(
        in folder: URL, seconds: Int, targetDuration: Int = 4,
        songs: @Sendable (Int) -> (artist: String, title: String)? = { _ in nil }
    ) async throws -> Presentation {
        let whole = folder.appendingPathComponent("whole.aac")
        try await encodeTone(seconds: seconds, into: whole, muxer: ["audio/mpeg,mpegversion=4,stream-format=adts"])
        let bytes = [UInt8](try Data(contentsOf: whole))
        let frames = try ADTSFrame.frames(in: bytes)
        guard let rate = frames.first?.sampleRate else { throw RigError("the encoder wrote no ADTS frame") }
        let perSegment = max(1, targetDuration * rate / 1024)
        var cuts = stride(from: 0, to: frames.count, by: perSegment).map { $0..<min(frames.count, $0 + perSegment) }
        // A tail too short to typefind (hlsdemux refuses a segment of one ADTS frame) joins the
        // segment before it while that still rounds to the target duration.
        if cuts.count > 1, let tail = cuts.last,
            Double((perSegment + tail.count) * 1024) / Double(rate) < Double(targetDuration) + 0.5
        {
            cuts.removeLast()
            cuts[cuts.count - 1] = cuts[cuts.count - 1].lowerBound..<tail.upperBound
        }
        var entries: [PlaylistEntry] = []
        var firstSample = 0
        for (number, range) in cuts.enumerated() {
            let cut = frames[range]
            let samples = cut.reduce(0) { $0 + $1.samples }
            // The MPEG-2 clock runs at 90 kHz and wraps at 33 bits (RFC 8216 §3.4).
            let timestamp = (UInt64(firstSample) * 90_000 / UInt64(rate)) & 0x1_FFFF_FFFF
            let name = String(format: "seg%03d.aac", number)
            let body = bytes[cut.first!.offset..<(cut.last!.offset + cut.last!.length)]
            try (timestampTag(timestamp, song: songs(number)) + Data(body)).write(
                to: folder.appendingPathComponent(name))
            entries.append(PlaylistEntry(name: name, seconds: Double(samples) / Double(rate)))
            firstSample += samples
        }
        let playlist = folder.appendingPathComponent("index.m3u8")
        try writePlaylist(entries, to: playlist, targetDuration: targetDuration)
        return (playlist, entries.map(\.name), whole)
    }

    /// Writes `seconds` of the tone as fragmented-MP4 HLS into `folder`: `init.mp4` (what comes
    /// before the first `moof`: `ftyp` and `moov`) and `segNNN.m4s` files of whole `moof`+`mdat`
    /// fragments, consecutive fragments merged up to `targetDuration` seconds; `whole` is the
    /// fragmented file mp4mux wrote (with its trailing `mfra`, which no segment carries).
    public static func makeFragmentedMP4(
        in folder: URL, seconds: Int, targetDuration: Int = 4, bitrate: Int = 128_000
    ) async throws -> Presentation {
        let whole = folder.appendingPathComponent("whole.mp4")
        try await encodeTone(
            seconds: seconds, into: whole, bitrate: bitrate,
            muxer: ["mp4mux", "fragment-duration=\(targetDuration * 1000)", "streamable=true"])
        let bytes = [UInt8](try Data(contentsOf: whole))
        let boxes = try MP4Box.boxes(in: bytes, from: 0, to: bytes.count)
        guard let firstFragment = boxes.firstIndex(where: { $0.type == "moof" }),
            let moov = boxes[..<firstFragment].first(where: { $0.type == "moov" })
        else { throw RigError("mp4mux wrote no moov before a moof: \(boxes.map(\.type))") }
        let track = try TrackDefaults(moov: moov, in: bytes)
        try Data(bytes[0..<boxes[firstFragment].range.lowerBound]).write(to: folder.appendingPathComponent("init.mp4"))

        // Each fragment: its moof and the mdat right after it, and how long it plays.
        var fragments: [(bytes: Range<Int>, duration: UInt64)] = []
        var index = firstFragment
        while index < boxes.count, boxes[index].type == "moof" {
            guard index + 1 < boxes.count, boxes[index + 1].type == "mdat" else {
                throw RigError("a moof with no mdat after it: \(boxes.map(\.type))")
            }
            let duration = try track.duration(ofFragment: boxes[index], in: bytes)
            fragments.append((boxes[index].range.lowerBound..<boxes[index + 1].range.upperBound, duration))
            index += 2
        }
        let limit = UInt64(targetDuration) * track.timescale
        var entries: [PlaylistEntry] = []
        var start = 0
        while start < fragments.count {
            var end = start + 1
            var duration = fragments[start].duration
            while end < fragments.count, duration + fragments[end].duration <= limit {
                duration += fragments[end].duration
                end += 1
            }
            let name = String(format: "seg%03d.m4s", entries.count)
            let range = fragments[start].bytes.lowerBound..<fragments[end - 1].bytes.upperBound
            try Data(bytes[range]).write(to: folder.appendingPathComponent(name))
            entries.append(PlaylistEntry(name: name, seconds: Double(duration) / Double(track.timescale)))
            start = end
        }
        let playlist = folder.appendingPathComponent("index.m3u8")
        try writePlaylist(entries, to: playlist, targetDuration: targetDuration, version: 7, map: "init.mp4")
        return (playlist, entries.map(\.name), whole)
    }

    /// One segment of a playlist: its URI and its duration in seconds.
    public struct PlaylistEntry: Sendable {
        /// The segment's URI as the playlist lists it (here a file name next to the playlist).
        public let name: String
        /// How long the segment plays: its `#EXTINF`.
        public let seconds: Double

        /// An entry for the segment `name` that plays `seconds`.
        public init(name: String, seconds: Double) {
            self.name = name
            self.seconds = seconds
        }
    }

    /// Writes an on-demand media playlist of `entries` to `url`; `map` names an initialization
    /// section (`#EXT-X-MAP`). The target duration is raised to the longest rounded `#EXTINF`
    /// when one is longer, since RFC 8216 §4.3.3.1 makes a shorter one invalid.
    public static func writePlaylist(
        _ entries: [PlaylistEntry], to url: URL, targetDuration: Int, version: Int = 3, map: String? = nil
    ) throws {
        let longest = entries.map { Int($0.seconds.rounded()) }.max() ?? 0
        var text = "#EXTM3U\n#EXT-X-VERSION:\(version)\n#EXT-X-TARGETDURATION:\(max(targetDuration, longest))\n"
        text += "#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        if let map { text += "#EXT-X-MAP:URI=\"\(map)\"\n" }
        for entry in entries { text += String(format: "#EXTINF:%.5f,\n", entry.seconds) + entry.name + "\n" }
        text += "#EXT-X-ENDLIST\n"
        try Data(text.utf8).write(to: url)
    }

    /// The 90 kHz timestamp in a packed-audio segment's leading ID3v2 tag (the PRIV frame of
    /// ``timestampOwner``), or nil when the segment starts with no such tag.
    public static func transportStreamTimestamp(of segment: Data) -> UInt64? {
        let bytes = [UInt8](segment)
        guard bytes.count >= 10, bytes[0..<3] == [0x49, 0x44, 0x33] else { return nil }
        let end = min(bytes.count, 10 + synchsafe(bytes[6..<10]))
        let owner = Array(timestampOwner.utf8) + [0]
        var offset = 10
        while offset + 10 <= end {
            let size =
                bytes[3] >= 4 ? synchsafe(bytes[offset + 4..<offset + 8]) : bigEndian(bytes[offset + 4..<offset + 8])
            let body = offset + 10
            guard size > 0, body + size <= end else { return nil }
            if bytes[offset..<offset + 4] == [0x50, 0x52, 0x49, 0x56], size == owner.count + 8,
                Array(bytes[body..<body + owner.count]) == owner
            {
                return UInt64(bigEndian(bytes[(body + owner.count)..<(body + size)]))
            }
            offset = body + size
        }
        return nil
    }

    /// The `tfdt` base decode time of each `moof` in `data` (a segment or a whole fragmented
    /// file), in the track's timescale; nil for a fragment that carries none.
    public static func fragmentDecodeTimes(in data: Data) throws -> [UInt64?] {
        let bytes = [UInt8](data)
        return try MP4Box.boxes(in: bytes, from: 0, to: bytes.count).filter { $0.type == "moof" }.map { moof in
            guard let traf = try moof.children(in: bytes).first(where: { $0.type == "traf" }),
                let tfdt = try traf.children(in: bytes).first(where: { $0.type == "tfdt" })
            else { return nil }
            let body = tfdt.body.lowerBound
            return bytes[body] == 1
                ? UInt64(bigEndian(bytes[body + 4..<body + 12])) : UInt64(bigEndian(bytes[body + 4..<body + 8]))
        }
    }

    /// Encodes `seconds` of the tone at `bitrate` into `file` through `muxer` (gst-launch
    /// elements after aacparse).
    private static func encodeTone(seconds: Int, into file: URL, bitrate: Int = 128_000, muxer: [String]) async throws {
        let result = try await runCommandAwaiting(
            "gst-launch-1.0",
            [
                "-q", "-e", "audiotestsrc", "num-buffers=\(seconds * 44100 / 1024)", "freq=440", "volume=0.5", "!",
                "audio/x-raw,rate=44100,channels=2", "!", "avenc_aac", "bitrate=\(bitrate)", "!", "aacparse", "!",
            ] + muxer + ["!", "filesink", "location=\(file.path)"], timeout: 60)
        guard result.status == 0 else { throw RigError("encoding \(file.lastPathComponent) failed: \(result.stderr)") }
    }

    /// An ID3v2.4 tag holding one PRIV frame: ``timestampOwner`` and `timestamp` as 8 bytes;
    /// and a song's `TIT2` and `TPE1` (UTF-8) when one is given.
    private static func timestampTag(_ timestamp: UInt64, song: (artist: String, title: String)? = nil) -> Data {
        var payload = Data(timestampOwner.utf8) + [0]
        payload += (0..<8).reversed().map { UInt8(truncatingIfNeeded: timestamp >> (8 * $0)) }
        var frames = Data("PRIV".utf8) + synchsafeBytes(payload.count) + [0, 0] + payload
        if let song {
            for (id, text) in [("TIT2", song.title), ("TPE1", song.artist)] {
                let body = Data([3]) + Data(text.utf8)
                frames += Data(id.utf8) + synchsafeBytes(body.count) + [0, 0] + body
            }
        }
        return Data("ID3".utf8) + [4, 0, 0] + synchsafeBytes(frames.count) + frames
    }

    private static func synchsafeBytes(_ value: Int) -> [UInt8] {
        [21, 14, 7, 0].map { UInt8((value >> $0) & 0x7F) }
    }

    private static func synchsafe(_ bytes: ArraySlice<UInt8>) -> Int {
        bytes.reduce(0) { $0 << 7 | Int($1 & 0x7F) }
    }
}

/// A big-endian unsigned integer of up to eight bytes.
private func bigEndian(_ bytes: ArraySlice<UInt8>) -> Int {
    bytes.reduce(0) { $0 << 8 | Int($1) }
}

/// One ADTS frame of an AAC stream: where it is and how many samples it decodes to.
private struct ADTSFrame {
    let offset: Int
    let length: Int
    let samples: Int
    let sampleRate: Int

    private static let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000]

    /// The frames of `bytes`, which must be ADTS frames back to back and nothing else.
    static func frames(in bytes: [UInt8]) throws -> [ADTSFrame] {
        var frames: [ADTSFrame] = []
        var offset = 0
        while offset < bytes.count {
            guard offset + 7 <= bytes.count, bytes[offset] == 0xFF, bytes[offset + 1] & 0xF6 == 0xF0 else {
                throw RigError("no ADTS frame header at byte \(offset)")
            }
            let length = Int(bytes[offset + 3] & 0x03) << 11 | Int(bytes[offset + 4]) << 3 | Int(bytes[offset + 5]) >> 5
            let rateIndex = Int(bytes[offset + 2] >> 2) & 0x0F
            guard length >= 7, offset + length <= bytes.count, rateIndex < rates.count else {
                throw RigError("a broken ADTS frame at byte \(offset)")
            }
            // Each of a frame's raw data blocks decodes to 1024 samples.
            let blocks = Int(bytes[offset + 6] & 0x03) + 1
            frames.append(
                ADTSFrame(offset: offset, length: length, samples: 1024 * blocks, sampleRate: rates[rateIndex]))
            offset += length
        }
        return frames
    }
}

/// One ISO BMFF box: its four-character type, its bytes and its body's.
private struct MP4Box {
    let type: String
    let range: Range<Int>
    let body: Range<Int>

    /// The boxes laid end to end in `bytes[from..<to]`.
    static func boxes(in bytes: [UInt8], from start: Int, to end: Int) throws -> [MP4Box] {
        var boxes: [MP4Box] = []
        var offset = start
        while offset < end {
            guard offset + 8 <= end else { throw RigError("a truncated box header at byte \(offset)") }
            var size = bigEndian(bytes[offset..<offset + 4])
            var header = 8
            if size == 1 {
                guard offset + 16 <= end else { throw RigError("a truncated box header at byte \(offset)") }
                size = bigEndian(bytes[offset + 8..<offset + 16])
                header = 16
            } else if size == 0 {
                size = end - offset
            }
            guard size >= header, offset + size <= end else { throw RigError("a box overruns at byte \(offset)") }
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            boxes.append(MP4Box(type: type, range: offset..<offset + size, body: offset + header..<offset + size))
            offset += size
        }
        return boxes
    }

    /// The boxes inside this one (for a container box).
    func children(in bytes: [UInt8]) throws -> [MP4Box] {
        try Self.boxes(in: bytes, from: body.lowerBound, to: body.upperBound)
    }

    /// The first box down `path` of container types, starting inside this one.
    func descendant(_ path: [String], in bytes: [UInt8]) throws -> MP4Box? {
        var box = self
        for type in path {
            guard let next = try box.children(in: bytes).first(where: { $0.type == type }) else { return nil }
            box = next
        }
        return box
    }
}

/// What a fragment's duration is counted in and with: the track's timescale (`mdhd`) and its
/// default sample duration (`trex`), for a `trun` that lists none.
private struct TrackDefaults {
    let timescale: UInt64
    let sampleDuration: UInt64

    init(moov: MP4Box, in bytes: [UInt8]) throws {
        guard let mdhd = try moov.descendant(["trak", "mdia", "mdhd"], in: bytes) else {
            throw RigError("the moov has no mdhd")
        }
        // mdhd: version and flags, then two times (4 or 8 bytes each), then the timescale.
        let at = mdhd.body.lowerBound + (bytes[mdhd.body.lowerBound] == 1 ? 20 : 12)
        timescale = UInt64(bigEndian(bytes[at..<at + 4]))
        if let trex = try moov.descendant(["mvex", "trex"], in: bytes) {
            let body = trex.body.lowerBound
            sampleDuration = UInt64(bigEndian(bytes[body + 12..<body + 16]))
        } else {
            sampleDuration = 0
        }
        guard timescale > 0 else { throw RigError("the track's timescale is 0") }
    }

    /// How long the fragment `moof` plays, in the timescale: its samples' durations from its
    /// `trun`, or its sample count times the `tfhd` or `trex` default.
    func duration(ofFragment moof: MP4Box, in bytes: [UInt8]) throws -> UInt64 {
        guard let traf = try moof.children(in: bytes).first(where: { $0.type == "traf" }),
            let tfhd = try traf.children(in: bytes).first(where: { $0.type == "tfhd" })
        else { throw RigError("a moof with no traf or tfhd") }
        var fallback = sampleDuration
        let tfhdFlags = bigEndian(bytes[tfhd.body.lowerBound + 1..<tfhd.body.lowerBound + 4])
        if tfhdFlags & 0x08 != 0 {
            // Optional fields before it: the track ID, then base data offset and description index.
            let at = tfhd.body.lowerBound + 8 + (tfhdFlags & 0x01 != 0 ? 8 : 0) + (tfhdFlags & 0x02 != 0 ? 4 : 0)
            fallback = UInt64(bigEndian(bytes[at..<at + 4]))
        }
        var total: UInt64 = 0
        for trun in try traf.children(in: bytes) where trun.type == "trun" {
            let flags = bigEndian(bytes[trun.body.lowerBound + 1..<trun.body.lowerBound + 4])
            let count = bigEndian(bytes[trun.body.lowerBound + 4..<trun.body.lowerBound + 8])
            guard flags & 0x100 != 0 else {
                total += UInt64(count) * fallback
                continue
            }
            var at = trun.body.lowerBound + 8 + (flags & 0x01 != 0 ? 4 : 0) + (flags & 0x04 != 0 ? 4 : 0)
            // Per sample: the duration first, then whichever of size, flags and composition offset are present.
            let stride = 4 * [0x100, 0x200, 0x400, 0x800].filter { flags & $0 != 0 }.count
            for _ in 0..<count {
                total += UInt64(bigEndian(bytes[at..<at + 4]))
                at += stride
            }
        }
        guard total > 0 else { throw RigError("a fragment of no duration") }
        return total
    }
}
