import Foundation

/// HLS presentations made at test time by GStreamer's `hlssink2` (a 440 Hz tone as AAC at
/// 128 kbit/s in MPEG-TS segments), and a live window of them served by the fault origin.
public enum HLSMedia {
    /// Writes `seconds` of the tone as HLS into `folder`, AAC at `bitrate` bit/s; returns the
    /// on-demand playlist and the segments' file names in order.
    public static func make(
        in folder: URL, seconds: Int, targetDuration: Int = 4, bitrate: Int = 128_000
    ) async throws -> (
        playlist: URL, segments: [String]
    ) {
        let playlist = folder.appendingPathComponent("index.m3u8")
        let logs = try TemporaryDirectory(prefix: "spool-hlssink")
        let segmenter = try ChildProcess(
            "gst-launch-1.0",
            [
                "-q", "-e", "audiotestsrc", "num-buffers=\(seconds * 44100 / 1024)", "freq=440", "volume=0.5", "!",
                "audio/x-raw,rate=44100,channels=2", "!", "avenc_aac", "bitrate=\(bitrate)", "!", "aacparse", "!",
                "hls.audio", "hlssink2", "name=hls", "location=\(folder.path)/seg%03d.ts",
                "playlist-location=\(playlist.path)", "target-duration=\(targetDuration)", "playlist-length=0",
                "max-files=0",
            ], logDirectory: logs.url, selfStopAfter: 60)
        // gst-launch sometimes hangs at the end of a long hlssink2 run after writing it all
        // (1 run in 4 of 60 s here): the playlist's end marker is the sign it is done.
        let done = await eventually(timeout: 30, interval: 0.05) {
            (try? String(contentsOf: playlist, encoding: .utf8))?.contains("#EXT-X-ENDLIST") == true
        }
        segmenter.stop(grace: 1)
        guard done else { throw RigError("hlssink2 never finished: \(segmenter.standardError)") }
        let segments = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".ts") }.sorted()
        return (playlist, segments)
    }

    /// Serves `segments` (files in `folder`) on `origin` as a live presentation at `/live.m3u8`:
    /// `window` segments listed at a time, the window sliding by one every `targetDuration`
    /// seconds from now, as a live packager's does. Cancel the task to stop the sliding.
    /// `firstAired`: the date the first segment went on air, given to the first one listed as
    /// `EXT-X-PROGRAM-DATE-TIME` (the others' follow by their durations). `directory` (e.g.
    /// `high/`) puts the playlist and its segments under a folder of the origin.
    public static func serveLive(
        _ segments: [String], from folder: URL, on origin: FaultOrigin, window: Int = 6, targetDuration: Int = 2,
        contentType: String = "video/mp2t", firstAired: Date? = nil, directory: String = ""
    ) throws -> Task<Void, any Error> {
        let live = try LiveWindow(
            segments, from: folder, on: origin, window: window, targetDuration: targetDuration,
            contentType: contentType, firstAired: firstAired, directory: directory)
        let begun = ContinuousClock.now
        return Task {
            for first in 1...(segments.count - window) {
                try await Task.sleep(until: begun + .seconds(targetDuration * first), clock: .continuous)
                live.slide(to: first)
            }
        }
    }

    /// An ISO 8601 date and time in UTC with milliseconds, as packagers write it.
    static func programDateTime(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}

/// A live presentation's window of segments on a fault origin, slid by whoever holds it: by
/// ``HLSMedia/serveLive(_:from:on:window:targetDuration:contentType:firstAired:directory:)``'s
/// clock, or by a test that wants the slide at a moment it knows.
public struct LiveWindow: Sendable {
    /// The segments' file names, in order.
    public let segments: [String]
    /// The origin's path of the playlist.
    public let path: String
    private let origin: FaultOrigin
    private let window: Int
    private let targetDuration: Int
    private let firstAired: Date?

    /// Serves `segments` (files in `folder`) on `origin`, and the playlist at
    /// `/<directory>live.m3u8` listing the first `window` of them; the parameters are those of
    /// ``HLSMedia/serveLive(_:from:on:window:targetDuration:contentType:firstAired:directory:)``.
    public init(
        _ segments: [String], from folder: URL, on origin: FaultOrigin, window: Int = 6, targetDuration: Int = 2,
        contentType: String = "video/mp2t", firstAired: Date? = nil, directory: String = ""
    ) throws {
        for segment in segments {
            origin.serve(
                OriginResource(
                    try Data(contentsOf: folder.appendingPathComponent(segment)), contentType: contentType,
                    headers: ["Cache-Control": "max-age=86400"]),
                at: "/" + directory + segment)
        }
        self.segments = segments
        self.path = "/\(directory)live.m3u8"
        self.origin = origin
        self.window = window
        self.targetDuration = targetDuration
        self.firstAired = firstAired
        origin.serve(listing(from: 0), at: path)
    }

    /// Lists the window from segment `first` on.
    public func slide(to first: Int) { origin.replace(path, with: listing(from: first)) }

    private func listing(from first: Int) -> OriginResource {
        let text =
            "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:\(targetDuration)\n#EXT-X-MEDIA-SEQUENCE:\(first)\n"
            + (firstAired.map {
                "#EXT-X-PROGRAM-DATE-TIME:\(HLSMedia.programDateTime($0 + Double(first * targetDuration)))\n"
            } ?? "")
            + segments[first..<(first + window)].map { "#EXTINF:\(targetDuration).0,\n\($0)\n" }.joined()
        return OriginResource(Data(text.utf8), contentType: "application/vnd.apple.mpegurl")
    }
}
