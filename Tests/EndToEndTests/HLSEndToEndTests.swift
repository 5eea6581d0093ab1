import DBusKit
import Foundation
import TestSupport
import Testing

/// HLS made at test time by GStreamer's `hlssink2` (AAC in MPEG-TS), served by the fault origin
/// over a link capped at 3× the audio's bitrate, played by the real daemon into
/// PulseAudio. On demand: one track with the playlist's length, heard to its end with no gap at
/// a segment's join, and a replay that asks the origin for no segment. Live: a sliding window,
/// played from near its edge with no stall, nothing stored.
@Suite("HLS", .serialized)
struct HLSEndToEndTests {
    /// Seconds of audio in the presentation.
    static let seconds = 12
    /// The link's rate, 3x the audio's 128 kbit/s: the segments run at ~26 kB/s (MPEG-TS
    /// framing adds a fifth), so the link carries them at 1.85x.
    static let linkRate = 48_000

    /// The real daemon on `rig`'s bus, ready, with a connection and a probe to drive it.
    static func startSpool(on rig: NetworkRig) async throws -> (PlayerProcess, DBusConnection, PlayerProbe) {
        let player = try rig.startSpool(executable: try spoolExecutable(), logLevel: "debug", lifetime: 140)
            .keepingTestLog()
        let connection = try DBusConnection(address: rig.bus.address)
        let probe = PlayerProbe(
            remote: DBusMPRISRemote(connection: connection, busName: player.busName), player: player, rig: rig)
        try await probe.waitUntilReady()
        return (player, connection, probe)
    }

    /// The daemon's Spool1 property `name`, read over `connection`.
    static func spoolProperty(_ name: String, of player: PlayerProcess, over connection: DBusConnection)
        async throws -> DBusValue?
    {
        try await connection.call(
            destination: player.busName, path: "/org/mpris/MediaPlayer2",
            interface: "org.freedesktop.DBus.Properties", method: "Get",
            arguments: [.string("org.spool.Spool1"), .string(name)]
        ).first?.variantValue
    }

    /// Serves `/master.m3u8` on `origin`: variants of 200 and 70 kbit/s whose media playlists are
    /// `high/<media>` and `low/<media>`.
    static func serveMaster(on origin: FaultOrigin, media: String) {
        let master = """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=200000,CODECS="mp4a.40.2"
            high/\(media)
            #EXT-X-STREAM-INF:BANDWIDTH=70000,CODECS="mp4a.40.2"
            low/\(media)

            """
        origin.serve(
            OriginResource(Data(master.utf8), contentType: "application/vnd.apple.mpegurl"), at: "/master.m3u8")
    }

    /// Seconds of sound heard from `soundStart` (an offset of `monitor`'s recording) until
    /// 0.3 s of silence, and where the first 20 ms of silence began: at the end, when no join
    /// dropped audio.
    static func heardThrough(_ monitor: AudioMonitor, from soundStart: Int, timeout: Double) async throws -> (
        heard: Double, firstGap: Double
    ) {
        let end = try await monitor.silence(after: soundStart, lasting: 0.3, timeout: timeout)
        let firstGap = try await monitor.silence(after: soundStart, lasting: 0.02, timeout: 1)
        return (
            Double(end - soundStart) / Double(AudioMonitor.byteRate) - 0.3,
            Double(firstGap - soundStart) / Double(AudioMonitor.byteRate) - 0.02
        )
    }

    @Test func anOnDemandPlaylistIsOneTrackWithItsLengthHeardThroughAndReplayedFromTheCache() async throws {
        let rig = try NetworkRig(linkRate: Self.linkRate, recordAudio: true, lifetime: 150)
        let media = try TemporaryDirectory(prefix: "spool-hls")
        let (playlist, segments) = try await HLSMedia.make(in: media.url, seconds: Self.seconds)
        try #require(segments.count >= 3, "hlssink2 wrote \(segments)")
        // An on-demand playlist never changes either; a minute of freshness is plenty here.
        let url = try rig.serve(playlist, headers: ["Cache-Control": "max-age=60"])
        for segment in segments {
            // Segments never change: cacheable for a day, as HLS servers send them.
            try rig.serve(media.url.appendingPathComponent(segment), headers: ["Cache-Control": "max-age=86400"])
        }
        let (player, connection, probe) = try await Self.startSpool(on: rig)
        let monitor = try #require(rig.monitor)
        let context = { "daemon log:\n\(player.logTail(60))\norigin: \(rig.origin.requests())" }

        let offset = monitor.offset
        let opened = try await probe.open(url)
        let advancing = try await probe.awaitAdvancing(since: opened)
        print("HLS on demand: open → advancing \(String(format: "%.3f", advancing)) s")
        // The length comes with the track's description, which may follow its first audio.
        let track = try await awaitValue("Metadata with mpris:length\n\(context())") {
            try await probe.remote.metadata()
        } until: {
            $0.length != nil
        }
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
        let (heard, gapAt) = try await Self.heardThrough(monitor, from: soundStart, timeout: Double(Self.seconds) + 10)
        print("HLS on demand: heard \(String(format: "%.2f", heard)) s of \(Self.seconds)")
        // No join drops audio: the first 20 ms of silence is the end's.
        #expect(gapAt > heard - 0.05, "silent at \(gapAt) s of \(heard) s heard\n\(context())")
        #expect(
            heard > Double(Self.seconds) - 1.5, "the sound stopped after \(heard) s of \(Self.seconds)\n\(context())")
        let segmentRequests = rig.origin.requests().filter { $0.path.hasSuffix(".ts") }
        #expect(segmentRequests.count == segments.count, "each segment fetched once: \(segmentRequests)")
        // The buffer bar's facts: the whole presentation's time is cached (in milliseconds).
        let spoolProperty = { (name: String) in try await Self.spoolProperty(name, of: player, over: connection) }
        let timeLength = try await spoolProperty("ContentLength")?.int64Value ?? -1
        #expect(abs(Double(timeLength) / 1000 - Double(Self.seconds)) < 0.5, "length \(timeLength) ms")
        let cached = try await spoolProperty("CachedRanges")?.arrayValues?.compactMap(\.structureFields)
        #expect(
            cached?.count == 1 && cached?.first?.first?.int64Value == 0
                && cached?.first?.last?.int64Value == timeLength, "cached \(String(describing: cached))")

        // A replay while the playlist is fresh asks the origin for nothing at all.
        let before = rig.origin.requests().count
        let replayed = try await probe.open(url)
        _ = try await probe.awaitAdvancing(since: replayed)
        let again = rig.origin.requests().dropFirst(before)
        #expect(again.isEmpty, "a replay asked for \(again.map(\.path))\n\(context())")
    }

    /// A master playlist of two variants (64 and 192 kbit/s, three aligned 4-s segments) over a link
    /// at 3x the higher one: it starts on the lower, the first segment's download moves it up,
    /// and the switch is heard without a gap; the interface and `spool status` say which plays.
    /// On a metered network whose quality is 96 kbit/s it stays on the lower.
    @Test func aMasterPlaylistMovesUpToTheVariantTheLinkCarriesWithoutAGap() async throws {
        let rig = try NetworkRig(linkRate: 72_000, recordAudio: true, lifetime: 150)
        let media = try TemporaryDirectory(prefix: "spool-hls-variants")
        var names: [String: [String]] = [:]
        for (name, bitrate) in [("low", 64_000), ("high", 192_000)] {
            let folder = media.url.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let (playlist, segments) = try await HLSMedia.make(in: folder, seconds: 12, bitrate: bitrate)
            names[name] = segments
            rig.origin.serve(
                OriginResource(try Data(contentsOf: playlist), contentType: "application/vnd.apple.mpegurl"),
                at: "/\(name)/index.m3u8")
            for segment in segments {
                rig.origin.serve(
                    OriginResource(
                        try Data(contentsOf: folder.appendingPathComponent(segment)), contentType: "video/mp2t",
                        headers: ["Cache-Control": "max-age=86400"]),
                    at: "/\(name)/\(segment)")
            }
        }
        Self.serveMaster(on: rig.origin, media: "index.m3u8")
        let (player, connection, probe) = try await Self.startSpool(on: rig)
        let monitor = try #require(rig.monitor)
        let context = { "daemon log:\n\(player.logTail(60))\norigin: \(rig.origin.requests())" }

        let offset = monitor.offset
        let opened = try await probe.open(rig.origin.url(for: "master.m3u8"))
        _ = try await monitor.firstSound(after: offset, since: opened, timeout: 10)
        let soundStart = monitor.offset
        let variant = { () async throws -> [String: DBusValue] in
            try await Self.spoolProperty("Variant", of: player, over: connection)?.stringVariantDictValue ?? [:]
        }
        _ = try await awaitValue(
            "the variant, to be number 2\n\(context())", timeout: 10, interval: .milliseconds(50), variant,
            until: { $0["number"]?.int32Value == 2 })
        #expect(try await variant()["bitrate"]?.int32Value == 200)
        let status = try await runCommandAwaiting(
            try spoolExecutable(), ["status"], environment: rig.bus.environment)
        #expect(status.stdout.contains("variant: 2 of 2, 200 kbit/s"), "\(status.stdout)")
        // Heard to the end with no silence at the switch or at a join.
        let (heard, gapAt) = try await Self.heardThrough(monitor, from: soundStart, timeout: 30)
        #expect(heard > 10.5, "heard \(heard) s of 12\n\(context())")
        #expect(gapAt > heard - 0.05, "silent at \(gapAt) s of \(heard) s heard\n\(context())")
        let high = rig.origin.requests().filter { $0.path.hasPrefix("/high/") && $0.path.hasSuffix(".ts") }
        #expect(!high.isEmpty && high.count < names["high"]!.count, "high segments: \(high.map(\.path))")
        // The buffer bar of a master playlist: the time whose segments are stored, of either
        // variant (the low one's first segments, the high one's after): all of it.
        let cached = try await Self.spoolProperty("CachedRanges", of: player, over: connection)?.arrayValues?
            .compactMap(\.structureFields).map { $0.compactMap(\.int64Value) }
        #expect(cached?.count == 1 && cached?.first?.first == 0, "cached \(String(describing: cached))")
        #expect((cached?.first?.last ?? 0) > 11_000, "cached \(String(describing: cached))")

        // Metered, with a quality below the higher variant: it is never chosen.
        player.stop()
        let metered = try rig.startSpool(
            executable: try spoolExecutable(),
            extraArguments: [
                "--network-metered", "yes",
                "--network-metered-quality", "96k",
            ], lifetime: 60
        ).keepingTestLog()
        defer { metered.stop() }
        let meteredProbe = PlayerProbe(
            remote: DBusMPRISRemote(connection: connection, busName: metered.busName), player: metered, rig: rig)
        try await meteredProbe.waitUntilReady()
        let before = rig.origin.requests().count
        let again = try await meteredProbe.open(rig.origin.url(for: "master.m3u8"))
        _ = try await meteredProbe.awaitAdvancing(since: again)
        // Until two segments were asked for: unmetered, the second was the higher variant's
        // (a switch follows the first measured segment).
        let asked = try await awaitValue("two segments asked for", timeout: 15, interval: .milliseconds(50)) {
            rig.origin.requests().dropFirst(before).map(\.path)
        } until: {
            $0.filter { $0.hasSuffix(".ts") }.count >= 2
        }
        #expect(asked.filter { $0.hasSuffix(".ts") }.count >= 2, "segments asked while metered: \(asked)")
        #expect(!asked.contains { $0.hasPrefix("/high/") }, "a metered play asked for \(asked)")
        #expect(try await variant()["bitrate"]?.int32Value == 70)
    }

    /// The other segment formats over the production path (each segment an `HTTPByteSource` over
    /// its cache entry, the link at 3x the bitrate): packed AAC, its ID3 tags stripped, and fMP4
    /// with its initialization section, each heard to its end with no silence at a join.
    @Test(arguments: ["packed", "fmp4"])
    func packedAudioAndFragmentedMP4AreHeardThroughWithoutAGap(format: String) async throws {
        let rig = try NetworkRig(linkRate: Self.linkRate, recordAudio: true, lifetime: 120)
        let media = try TemporaryDirectory(prefix: "spool-hls-\(format)")
        let made =
            format == "packed"
            ? try await HLSFormats.makePackedAudio(in: media.url, seconds: 8)
            : try await HLSFormats.makeFragmentedMP4(in: media.url, seconds: 8)
        let url = try rig.serve(made.playlist)
        let files = made.segments + (format == "fmp4" ? ["init.mp4"] : [])
        for file in files {
            try rig.serve(media.url.appendingPathComponent(file), headers: ["Cache-Control": "max-age=86400"])
        }
        let (player, _, probe) = try await Self.startSpool(on: rig)
        let monitor = try #require(rig.monitor)
        let context = { "daemon log:\n\(player.logTail(60))\norigin: \(rig.origin.requests())" }
        let offset = monitor.offset
        let opened = try await probe.open(url)
        _ = try await monitor.firstSound(after: offset, since: opened, timeout: 10)
        let soundStart = monitor.offset
        let (heard, gapAt) = try await Self.heardThrough(monitor, from: soundStart, timeout: 20)
        print("HLS \(format): heard \(String(format: "%.2f", heard)) s of 8")
        #expect(heard > 7.4, "heard \(heard) s of 8\n\(context())")
        #expect(gapAt > heard - 0.05, "silent at \(gapAt) s of \(heard) s heard\n\(context())")
        let asked = rig.origin.requests().map(\.path)
        for file in files { #expect(asked.filter { $0 == "/" + file }.count == 1, "\(file): \(asked)") }
    }

    /// A live presentation: 2-s segments of one continuous encoding, listed six at a time in a
    /// window that slides by one segment every 2 s, as a live packager's does; heard for a
    /// minute through what live origins do: reloads that fail (503) and answer slowly, and
    /// segments listed before the origin serves them (404 once, then twice).
    @Test func aLivePlaylistPlaysFromNearItsEdgeForAMinuteOfFaultsWithoutAStallAndKeepsNothing() async throws {
        let rig = try NetworkRig(linkRate: Self.linkRate, recordAudio: true, lifetime: 200)
        let media = try TemporaryDirectory(prefix: "spool-hls-live")
        let (_, segments) = try await HLSMedia.make(in: media.url, seconds: 90, targetDuration: 2)
        try #require(segments.count >= 40, "hlssink2 wrote \(segments)")
        let window = 6
        let sliding = try HLSMedia.serveLive(segments, from: media.url, on: rig.origin, window: window)
        defer { sliding.cancel() }
        let (player, connection, probe) = try await Self.startSpool(on: rig)
        let monitor = try #require(rig.monitor)
        let context = { "daemon log:\n\(player.logTail(60))\norigin: \(rig.origin.requests())" }

        let offset = monitor.offset
        let opened = try await probe.open(rig.origin.url(for: "live.m3u8"))
        let advancing = try await probe.awaitAdvancing(since: opened)
        print("HLS live: open → advancing \(String(format: "%.3f", advancing)) s")
        _ = try await monitor.firstSound(after: offset, since: opened, timeout: 10)
        let soundStart = monitor.offset
        // The faults, from the first sound on: the next two reloads fail and every reload takes
        // 150 ms to answer; two segments not yet served when first asked for.
        rig.origin.setFaults(
            OriginFaults(firstByteLatency: 0.15, errorResponses: .init(count: 2, status: 503)), for: "/live.m3u8")
        let notYetServed = [(segments[8], 1), (segments[14], 2)]
        for (segment, times) in notYetServed {
            rig.origin.setFaults(OriginFaults(errorResponses: .init(count: times, status: 404)), for: "/" + segment)
        }
        // A minute of listening while the window slides thirty times: no stall (0.3 s of silence).
        let listened: Double = 60
        await #expect(throws: (any Error).self, "a stall while the window slid\n\(context())") {
            _ = try await monitor.silence(after: soundStart, lasting: 0.3, timeout: listened)
        }
        let canSeek = try await connection.call(
            destination: player.busName, path: "/org/mpris/MediaPlayer2", interface: "org.freedesktop.DBus.Properties",
            method: "Get", arguments: [.string("org.mpris.MediaPlayer2.Player"), .string("CanSeek")]
        ).first?.variantValue?.boolValue
        #expect(canSeek == false)
        #expect(try await probe.remote.metadata().length == nil, "a live presentation has no length")
        // Each segment fetched once, those not served yet once more per refusal; the first one
        // played is three target durations from the edge.
        let fetched = rig.origin.requests().filter { $0.path.hasSuffix(".ts") }.map(\.path)
        var expected = Dictionary(uniqueKeysWithValues: Set(fetched).map { ($0, 1) })
        for (segment, times) in notYetServed { expected["/" + segment] = 1 + times }
        #expect(Dictionary(fetched.map { ($0, 1) }, uniquingKeysWith: +) == expected, "fetched: \(fetched)")
        #expect(fetched.first == "/" + segments[window - 3], "started at \(fetched.first ?? "none")")
        let reloads = rig.origin.requests().filter { $0.path == "/live.m3u8" }.count
        #expect(reloads >= 28, "the playlist was reloaded \(reloads) times in \(listened) s")
        // Nothing of a live presentation is stored: no data file holds a byte.
        let files = cachedFiles(of: player)
        #expect(files.filter { $0.key.hasPrefix("/spool/data/") }.values.reduce(0, +) == 0, "stored: \(files)")
    }

    /// The same presentation encrypted as packagers do it (AES-128-CBC with `openssl enc`, the
    /// IV each segment's sequence number, the key behind its own URL): heard to the end, the key
    /// fetched once.
    @Test func anEncryptedPresentationIsHeardThroughWithItsKeyFetchedOnce() async throws {
        let rig = try NetworkRig(linkRate: Self.linkRate, recordAudio: true, lifetime: 150)
        let media = try TemporaryDirectory(prefix: "spool-hls-aes")
        let (playlist, segments) = try await HLSMedia.make(in: media.url, seconds: Self.seconds)
        let key = (0..<16).map { String(format: "%02x", $0 * 11 % 256) }.joined()
        var listing = try String(contentsOf: playlist, encoding: .utf8)
        listing = listing.replacingOccurrences(
            of: "#EXT-X-TARGETDURATION:4", with: "#EXT-X-TARGETDURATION:4\n#EXT-X-KEY:METHOD=AES-128,URI=\"key.bin\"")
        try Data(listing.utf8).write(to: playlist)
        for (number, segment) in segments.enumerated() {
            let clear = media.url.appendingPathComponent(segment)
            let sealed = media.url.appendingPathComponent("enc-" + segment)
            let iv = String(repeating: "0", count: 30) + String(format: "%02x", number)
            let result = try runCommand(
                "openssl", ["enc", "-aes-128-cbc", "-K", key, "-iv", iv, "-in", clear.path, "-out", sealed.path])
            try #require(result.status == 0, "openssl: \(result.stderr)")
            try rig.serve(sealed, as: segment, headers: ["Cache-Control": "max-age=86400"])
        }
        let keyBytes = Data(
            stride(from: 0, to: key.count, by: 2).map {
                UInt8(
                    key[key.index(key.startIndex, offsetBy: $0)..<key.index(key.startIndex, offsetBy: $0 + 2)],
                    radix: 16)!
            })
        rig.origin.serve(OriginResource(keyBytes), at: "/key.bin")
        let url = try rig.serve(playlist)
        let (player, connection, probe) = try await Self.startSpool(on: rig)
        let monitor = try #require(rig.monitor)
        let context = { "daemon log:\n\(player.logTail(60))\norigin: \(rig.origin.requests())" }

        let offset = monitor.offset
        let opened = try await probe.open(url)
        _ = try await monitor.firstSound(after: offset, since: opened, timeout: 10)
        let soundStart = monitor.offset
        let end: Int
        do {
            end = try await monitor.silence(after: soundStart, lasting: 0.3, timeout: Double(Self.seconds) + 10)
        } catch {
            Issue.record("\(error); position \(try await probe.remote.positionMicroseconds()) µs\n\(context())")
            return
        }
        let heard = Double(end - soundStart) / Double(AudioMonitor.byteRate) - 0.3
        #expect(heard > Double(Self.seconds) - 0.5, "heard \(heard) s of \(Self.seconds)\n\(context())")
        let keyRequests = rig.origin.requests().filter { $0.path == "/key.bin" }
        #expect(keyRequests.count == 1, "the key was fetched \(keyRequests.count) times")
    }

}
