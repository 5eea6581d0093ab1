import DBusKit
import Foundation
import TestSupport
import Testing

/// HLS made at test time by GStreamer's `hlssink2` (AAC in MPEG-TS, 4-s segments), served by
/// the fault origin over a link capped at about 2.5× the stream's rate, played by the real
/// daemon into PulseAudio: one track with the playlist's length, heard to its end with no gap at
/// a segment's join, and a replay that asks the origin for no segment.
@Suite("HLS on demand", .serialized)
struct HLSEndToEndTests {
    /// Seconds of audio in the presentation.
    static let seconds = 12
    /// The link's rate: the segments run at ~26 kB/s (AAC at 128 kbit/s plus MPEG-TS framing).
    static let linkRate = 64_000

    /// Writes `seconds` of a 440 Hz tone as HLS into `folder`; returns the playlist and the
    /// segments' file names.
    static func makeHLS(in folder: URL, seconds: Int) throws -> (playlist: URL, segments: [String]) {
        let playlist = folder.appendingPathComponent("index.m3u8")
        let result = try runCommand(
            "gst-launch-1.0",
            [
                "-q", "-e", "audiotestsrc", "num-buffers=\(seconds * 44100 / 1024)", "freq=440", "volume=0.5", "!",
                "audio/x-raw,rate=44100,channels=2", "!", "avenc_aac", "bitrate=128000", "!", "aacparse", "!",
                "hls.audio", "hlssink2", "name=hls", "location=\(folder.path)/seg%03d.ts",
                "playlist-location=\(playlist.path)", "target-duration=4", "playlist-length=0", "max-files=0",
            ], timeout: 30)
        guard result.status == 0 else { throw RigError("hlssink2 failed: \(result.stderr)") }
        let segments = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".ts") }.sorted()
        return (playlist, segments)
    }

    @Test func anOnDemandPlaylistIsOneTrackWithItsLengthHeardThroughAndReplayedFromTheCache() async throws {
        let rig = try NetworkRig(linkRate: Self.linkRate, recordAudio: true, lifetime: 150)
        let media = try TemporaryDirectory(prefix: "spool-hls")
        let (playlist, segments) = try Self.makeHLS(in: media.url, seconds: Self.seconds)
        try #require(segments.count >= 3, "hlssink2 wrote \(segments)")
        let url = try rig.serve(playlist)
        for segment in segments {
            // Segments never change: cacheable for a day, as HLS servers send them.
            try rig.serve(media.url.appendingPathComponent(segment), headers: ["Cache-Control": "max-age=86400"])
        }
        let player = try rig.startSpool(executable: try spoolExecutable(), logLevel: "debug", lifetime: 140)
        let connection = try DBusConnection(address: rig.bus.address)
        let probe = PlayerProbe(
            remote: DBusMPRISRemote(connection: connection, busName: player.busName), player: player, rig: rig)
        try await probe.waitUntilReady()
        let monitor = try #require(rig.monitor)
        let context = { "daemon log:\n\(player.logTail(60))\norigin: \(rig.origin.requests())" }

        let offset = monitor.offset
        let opened = try await probe.open(url)
        let advancing = try await probe.awaitAdvancing(since: opened)
        print("HLS on demand: open → advancing \(String(format: "%.3f", advancing)) s")
        let track = try await probe.remote.metadata()
        let length = try #require(track.length, "no mpris:length: \(track)\n\(context())")
        #expect(abs(length - Double(Self.seconds)) < 0.5, "length \(length) s\n\(context())")
        let tracks =
            try await connection.call(
                destination: player.busName, path: "/org/mpris/MediaPlayer2",
                interface: "org.freedesktop.DBus.Properties",
                method: "Get", arguments: [.string("org.mpris.MediaPlayer2.TrackList"), .string("Tracks")]
            ).first?.variantValue?.arrayValues ?? []
        #expect(tracks.count == 1, "the playlist is one track: \(tracks)")

        // Heard to the end: the tone sounds from its start to its last second, with no silence
        // at a join, and the end is where the playlist says.
        _ = try await monitor.firstSound(after: offset, since: opened, timeout: 10)
        // Taken just after the first sound was read: a few milliseconds into it.
        let soundStart = monitor.offset
        let end = try await monitor.silence(after: soundStart, lasting: 0.3, timeout: Double(Self.seconds) + 10)
        let heard = Double(end - soundStart) / Double(AudioMonitor.byteRate) - 0.3
        print("HLS on demand: heard \(String(format: "%.2f", heard)) s of \(Self.seconds)")
        // No join drops audio: the first 20 ms of silence is the end's.
        let firstGap = try await monitor.silence(after: soundStart, lasting: 0.02, timeout: 1)
        let gapAt = Double(firstGap - soundStart) / Double(AudioMonitor.byteRate) - 0.02
        #expect(gapAt > heard - 0.05, "silent at \(gapAt) s of \(heard) s heard\n\(context())")
        #expect(
            heard > Double(Self.seconds) - 1.5, "the sound stopped after \(heard) s of \(Self.seconds)\n\(context())")
        let segmentRequests = rig.origin.requests().filter { $0.path.hasSuffix(".ts") }
        #expect(segmentRequests.count == segments.count, "each segment fetched once: \(segmentRequests)")

        // A replay: the playlist may be asked again, a segment never.
        let before = rig.origin.requests().count
        let replayed = try await probe.open(url)
        _ = try await probe.awaitAdvancing(since: replayed)
        let again = rig.origin.requests().dropFirst(before).filter { $0.path.hasSuffix(".ts") }
        #expect(again.isEmpty, "a replay asked for segments: \(again)\n\(context())")
    }
}
