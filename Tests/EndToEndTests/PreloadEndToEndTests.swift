import DBusKit
import Foundation
import TestSupport
import Testing

/// `seconds` of a stereo 16-bit 44.1 kHz tone as WAV (176.4 kB per second, so sizes are predictable).
func wavTone(seconds: Int, frequency: Int, in directory: TemporaryDirectory) throws -> Data {
    let file = directory.file("tone-\(seconds)-\(frequency).wav")
    let made = try runCommand(
        "gst-launch-1.0",
        [
            "-q", "audiotestsrc", "num-buffers=\(seconds * 44_100 / 1024)", "freq=\(frequency)", "!",
            "audio/x-raw,format=S16LE,channels=2,rate=44100", "!", "wavenc", "!", "filesink", "location=\(file.path)",
        ])
    guard made.status == 0 else { throw RigError("could not make a tone: \(made.stderr)") }
    return try Data(contentsOf: file)
}

/// One track of `org.spool.Spool1.Preloads`.
struct PreloadRow: CustomStringConvertible {
    var url: String
    var stage: String
    var headReady: Bool
    var cachedBytes: Int64
    var length: Int64

    init?(_ value: DBusValue) {
        guard let map = value.stringVariantDictValue, let url = map["spool:url"]?.stringValue else { return nil }
        self.url = url
        stage = map["spool:stage"]?.stringValue ?? ""
        headReady = map["spool:headReady"]?.boolValue ?? false
        cachedBytes = map["spool:cachedBytes"]?.int64Value ?? -1
        length = map["spool:contentLength"]?.int64Value ?? -1
    }

    var description: String { "\(URL(string: url)?.lastPathComponent ?? url) \(stage) \(cachedBytes)/\(length)" }
}

extension RunningDaemon {
    /// The preload window as the daemon reports it.
    func preloads() async throws -> [PreloadRow] {
        try await spoolProperty("Preloads")?.arrayValues?.compactMap(PreloadRow.init) ?? []
    }
}

/// The `Range` header's `[first, last + 1)`.
private func requested(_ request: ServedRequest) -> Range<Int64>? {
    guard let range = request.range, range.hasPrefix("bytes=") else { return nil }
    let parts = range.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
    guard parts.count == 2, let first = Int64(parts[0]), let last = Int64(parts[1]) else { return nil }
    return first..<(last + 1)
}

@Suite("Preloading upcoming tracks, end to end", .serialized)
struct PreloadEndToEndTests {
    /// Over a bandwidth-limited origin: nothing of the next tracks is requested while the
    /// current one downloads; then their heads (prefix and tail) are; the rest of the next
    /// track only after that; a track removed from the window has its transfer cancelled; no
    /// byte crosses the network twice; and Next then plays from the cache with no request.
    @Test func upcomingTracksArePreparedInStagesAndNextNeedsNoNetwork() async throws {
        let media = try TemporaryDirectory()
        let first = try wavTone(seconds: 20, frequency: 300, in: media)  // 3.5 MB: ~6 s at 600 kB/s
        let second = try wavTone(seconds: 8, frequency: 500, in: media)  // 1.4 MB
        let third = try wavTone(seconds: 8, frequency: 700, in: media)
        let origin = try FaultOrigin()
        origin.serve(
            OriginResource(first, contentType: "audio/x-wav"), at: "/1.wav",
            faults: OriginFaults(bytesPerSecond: 600_000))
        origin.serve(
            OriginResource(second, contentType: "audio/x-wav"), at: "/2.wav",
            faults: OriginFaults(bytesPerSecond: 600_000))
        // Slow enough that its head is still coming when the test removes it.
        origin.serve(
            OriginResource(third, contentType: "audio/x-wav"), at: "/3.wav",
            faults: OriginFaults(bytesPerSecond: 40_000))
        // One head at a time: the third track's waits for the second's.
        let daemon = try RunningDaemon(extraEnvironment: [
            "SPOOL_PRELOAD_TRIGGER": "3s", "SPOOL_PRELOAD_CONCURRENCY": "1",
        ])
        try await daemon.waitUntilReady()
        let urls = ["/1.wav", "/2.wav", "/3.wav"].map { origin.url(for: $0).absoluteString }
        try await daemon.mpris("org.spool.Spool1", "Play", [.array(elementSignature: "s", urls.map(DBusValue.string))])

        // While the first track downloads, nothing else is requested and the window waits.
        var waitingSeen = false
        let deadline = Date().addingTimeInterval(30)
        var log: [ServedRequest] = []
        while Date() < deadline {
            let rows = try await daemon.preloads()
            let snapshot = origin.requests()
            // Lyrics (a track's sibling .lrc, a 404 here) come with the track's own requests.
            log = snapshot.filter { !$0.path.hasSuffix(".lrc") }
            if log.filter({ $0.path == "/1.wav" }).reduce(0, { $0 + $1.bodyBytesSent }) >= first.count { break }
            #expect(
                !snapshot.contains { $0.path != "/1.wav" && $0.path != "/1.lrc" },
                "requested before the trigger: \(snapshot)")
            #expect(rows.map(\.stage) == ["waiting", "waiting"] && rows.allSatisfy { $0.cachedBytes <= 0 }, "\(rows)")
            if rows.count == 2 { waitingSeen = true }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(waitingSeen, "Preloads showed both upcoming tracks waiting")
        // Read off the origin's timeline, not off when this loop looked: a loaded machine may look
        // only after the next track's head has come too.
        let timeline = origin.transfers().filter { !$0.path.hasSuffix(".lrc") }
        let firstDone = timeline.filter { $0.path == "/1.wav" }.compactMap(\.ended).max()
        let early = timeline.filter { transfer in
            transfer.path != "/1.wav" && firstDone.map { transfer.arrived < $0 } ?? true
        }
        #expect(
            firstDone != nil && early.isEmpty,
            "requested before the first track's download ended: \(early); all: \(timeline)")

        // The third track's head starts; remove it mid-transfer: its request ends at once.
        var rows: [PreloadRow] = []
        let started = try await eventuallyAsync(timeout: 10) {
            rows = try await daemon.preloads()
            return rows.first { $0.url.hasSuffix("/3.wav") }.map { $0.cachedBytes > 0 } == true
        }
        #expect(started, "\(rows)")
        let secondHead = origin.requests().filter { $0.path == "/2.wav" }.map(requested)
        #expect(
            secondHead.prefix(2) == [0..<524_288, Int64(second.count - 65_536)..<Int64(second.count)],
            "with preload.concurrency 1 the third head starts after the second: \(secondHead)")
        let status = try daemon.spool("status")
        #expect(status.stdout.contains("preload: 2.wav"), "\(status.stdout)")
        #expect(status.stdout.contains("3.wav fetching-head"), "\(status.stdout)")
        let tracks = try await daemon.property("org.mpris.MediaPlayer2.TrackList", "Tracks")?.arrayValues ?? []
        #expect(tracks.count == 3)
        try await daemon.mpris("org.mpris.MediaPlayer2.TrackList", "RemoveTrack", [tracks[2]])
        let thirdEnded = try await eventuallyAsync(timeout: 5) { origin.requests().contains { $0.path == "/3.wav" } }
        #expect(thirdEnded, "the removed track's transfer was not cancelled")
        let thirdRequests = origin.requests().filter { $0.path == "/3.wav" }
        #expect(thirdRequests.count == 1 && thirdRequests[0].range == "bytes=0-524287", "\(thirdRequests)")
        #expect(thirdRequests.allSatisfy { $0.bodyBytesSent < 524_288 }, "cancelled before its prefix was complete")

        // The second track: prefix and tail first, then the rest, each byte once.
        let length = Int64(second.count)
        let complete = try await eventuallyAsync(timeout: 20) {
            origin.requests().filter { $0.path == "/2.wav" }.reduce(0) { $0 + $1.bodyBytesSent } >= second.count
        }
        #expect(complete, "\(origin.requests())")
        let secondRequests = origin.requests().filter { $0.path == "/2.wav" }
        #expect(
            secondRequests.map(requested) == [0..<524_288, (length - 65_536)..<length, 524_288..<(length - 65_536)],
            "\(secondRequests)")
        #expect(
            secondRequests.dropFirst().allSatisfy { $0.ifRange != nil }, "later ranges are conditional on the version")
        #expect(secondRequests.reduce(0) { $0 + $1.bodyBytesSent } == second.count, "no byte fetched twice")
        rows = try await daemon.preloads()
        #expect(rows.map(\.url) == [urls[1]], "the window is the second track alone now: \(rows)")
        #expect(rows.first.map { $0.headReady && $0.cachedBytes == length } == true, "\(rows)")

        // Next plays it from the cache: not one request more.
        let before = origin.requests().count
        _ = try await daemon.playerctl("next")
        _ = try await daemon.waitForPlayerctl(["metadata", "xesam:url"]) { $0.hasSuffix("/2.wav") }
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.5 }
        #expect(origin.requests().count == before, "\(origin.requests().dropFirst(before))")
    }
}
