import DBusKit
import Foundation
import TestSupport
import Testing

/// HLS end to end where nothing is timed against the wall clock to the millisecond (what is
/// asked of the origin, where a seek lands, which title shows): these run beside other tests;
/// the suites that listen for gaps run alone (``HLSEndToEndTests``).
@Suite("HLS behaviour")
struct HLSBehaviourEndToEndTests {
    static let seconds = HLSEndToEndTests.seconds
    static let linkRate = HLSEndToEndTests.linkRate

    static func startSpool(on rig: NetworkRig) async throws -> (PlayerProcess, DBusConnection, PlayerProbe) {
        try await HLSEndToEndTests.startSpool(on: rig)
    }

    /// On demand, a track like a file: it can seek; a seek to 80 % lands at its target at once
    /// (the segments between are never fetched), and after a quit the session comes back at
    /// the place it was paused, heard from there.
    @Test func anOnDemandPlaylistSeeksToItsTargetAndResumesThereAfterAQuit() async throws {
        let rig = try NetworkRig(linkRate: Self.linkRate, recordAudio: false, lifetime: 150)
        let media = try TemporaryDirectory(prefix: "spool-hls-seek")
        let (playlist, segments) = try await HLSMedia.make(in: media.url, seconds: 24)
        try #require(segments.count >= 6, "hlssink2 wrote \(segments)")
        let url = try rig.serve(playlist)
        for segment in segments {
            try rig.serve(media.url.appendingPathComponent(segment), headers: ["Cache-Control": "max-age=86400"])
        }
        let (player, connection, probe) = try await Self.startSpool(on: rig)
        let context = { "daemon log:\n\(player.logTail(60))\norigin: \(rig.origin.requests())" }
        let opened = try await probe.open(url)
        _ = try await probe.awaitAdvancing(since: opened)
        let canSeek = try await connection.call(
            destination: player.busName, path: "/org/mpris/MediaPlayer2", interface: "org.freedesktop.DBus.Properties",
            method: "Get", arguments: [.string("org.mpris.MediaPlayer2.Player"), .string("CanSeek")]
        ).first?.variantValue?.boolValue
        #expect(canSeek == true, "\(context())")

        let track = try await probe.currentTrack()
        let target = 0.8 * (track.length ?? Double(Self.seconds))
        let asked = try await probe.setPosition(target, track: track)
        let landed = try await probe.awaitAdvancing(since: asked, near: target, tolerance: 0.5)
        print("HLS on demand: seek to 80 % → advancing at the target \(String(format: "%.3f", landed)) s")
        // The segments between were never asked for (the log lists ended responses only).
        let fetched = rig.origin.requests().filter { $0.path.hasSuffix(".ts") }.map(\.path)
        #expect(!fetched.contains("/" + segments[2]), "a segment the seek skipped was fetched: \(fetched)")

        try await probe.remote.pause()
        let paused = Double(try await probe.remote.positionMicroseconds()) / 1e6
        #expect(paused >= target && paused < target + 3, "paused at \(paused) after a seek to \(target)")
        await onOwnThread { player.stop() }
        // The target (80 % of 24 s of 4-s segments) is 3.2 s into the fifth segment: the
        // stream entered it near there, and the segment's bytes before were never sent.
        let deep = segments[4]
        let size = try Data(contentsOf: media.url.appendingPathComponent(deep)).count
        let sent = try rig.origin.settledRequests().filter { $0.path == "/" + deep }.map(\.bodyBytesSent)
        #expect(sent.reduce(0, +) < size * 6 / 10, "sent \(sent) of the \(size) bytes of \(deep)")

        let again = try rig.startSpool(executable: try spoolExecutable(), home: player.home, lifetime: 60)
            .keepingTestLog()
        defer { again.stop() }
        let resumed = PlayerProbe(
            remote: DBusMPRISRemote(connection: connection, busName: again.busName), player: again, rig: rig)
        try await resumed.waitUntilReady()
        let played = ContinuousClock.now
        try await resumed.remote.play()
        let back = try await resumed.awaitAdvancing(since: played, near: paused, tolerance: 0.5)
        print("HLS on demand: resumed after a quit, advancing at the paused place \(String(format: "%.3f", back)) s")
    }

    /// A live station whose segments name the song on air, as radio packagers do: packed audio
    /// in each segment's leading ID3 tag, MPEG-TS in timed ID3 (a metadata stream beside the
    /// audio). The song reaches Metadata when its segment is heard, a new one replacing it. The
    /// MPEG-TS station also dates its segments (`EXT-X-PROGRAM-DATE-TIME`): Live says when what
    /// is heard went on air.
    @Test(arguments: ["packed audio", "MPEG-TS"])
    func aLiveSongNamedInItsSegmentsShowsWhenHeard(format: String) async throws {
        let rig = try NetworkRig(linkRate: Self.linkRate, recordAudio: false, lifetime: 120)
        let media = try TemporaryDirectory(prefix: "spool-hls-songs")
        // 2-s segments: the first six name one song, the rest another.
        let song: @Sendable (Int) -> (artist: String, title: String) = { number in
            number < 6 ? ("Miles Davis", "So What") : ("John Coltrane", "Naima")
        }
        let sliding: Task<Void, any Error>
        let firstAired = Date(timeIntervalSince1970: 1_800_000_000.25)
        if format == "MPEG-TS" {
            let made = try await HLSMedia.make(in: media.url, seconds: 30, targetDuration: 2)
            for (number, name) in made.segments.enumerated() {
                let (artist, title) = song(number)
                let file = media.url.appendingPathComponent(name)
                let tag = TimedID3Writer.songTag(artist: artist, title: title)
                try TimedID3Writer.adding(tag, to: Data(contentsOf: file)).write(to: file)
            }
            sliding = try HLSMedia.serveLive(made.segments, from: media.url, on: rig.origin, firstAired: firstAired)
        } else {
            let made = try await HLSFormats.makePackedAudio(in: media.url, seconds: 30, targetDuration: 2, songs: song)
            sliding = try HLSMedia.serveLive(made.segments, from: media.url, on: rig.origin, contentType: "audio/aac")
        }
        defer { sliding.cancel() }
        let (player, connection, probe) = try await Self.startSpool(on: rig)
        let context = { "daemon log:\n\(player.logTail(60))\norigin: \(rig.origin.requests())" }
        let opened = try await probe.open(rig.origin.url(for: "live.m3u8"))
        _ = try await probe.awaitAdvancing(since: opened)
        var titles: [String] = []
        _ = try await awaitValue(
            "the titles shown, up to Naima\n\(context())", timeout: 20, interval: .milliseconds(100),
            {
                if let title = try await probe.remote.metadata().title, titles.last != title { titles.append(title) }
                return titles
            }, until: { $0.last == "Naima" })
        #expect(titles.contains("So What"), "titles shown: \(titles)\n\(context())")
        #expect(try await probe.remote.metadata().artists == ["John Coltrane"])
        let live =
            try await HLSEndToEndTests.spoolProperty("Live", of: player, over: connection)?.stringVariantDictValue
            ?? [:]
        if format == "MPEG-TS" {
            // Each segment aired 2 s after the one before it; the first one fetched is heard at
            // position 0: what is heard at position p aired 2 s × its number + p after the first.
            let first = try #require(rig.origin.requests().first { $0.path.hasSuffix(".ts") }?.path)
            let number = try #require(Int(first.filter(\.isNumber)))
            let aired = try #require(live["aired"]?.int64Value, "Live: \(live)")
            let position = try #require(live["airedPosition"]?.int64Value)
            let expected = firstAired.timeIntervalSince1970 + 2 * Double(number) + Double(position) / 1e6
            #expect(
                abs(Double(aired) / 1e6 - expected) < 0.3,
                "aired \(aired) µs at \(position) µs; expected \(expected) s; started at \(first)")
        } else {
            #expect(live["aired"] == nil, "an undated station has no air time: \(live)")
        }
    }

    /// A live station paused until the window (six 2-s segments) slid past segments it had
    /// listed but the player had not begun, within the pause window: Play plays on at once,
    /// and the segments that left the window meanwhile are never asked for (RFC 8216 §6.3.3).
    /// The origin still serves them: only the player's requests tell. The test slides the
    /// window itself, once the player is paused, and presses Play once the player has loaded
    /// the slid listing: a player can skip only what its latest reload no longer lists.
    @Test func aLiveStationPausedPastItsWindowSkipsWhatLeftItUnasked() async throws {
        let rig = try NetworkRig(linkRate: Self.linkRate, recordAudio: false, lifetime: 120)
        let media = try TemporaryDirectory(prefix: "spool-hls-pause")
        let (_, segments) = try await HLSMedia.make(in: media.url, seconds: 60, targetDuration: 2)
        let live = try LiveWindow(segments, from: media.url, on: rig.origin)
        let (player, _, probe) = try await Self.startSpool(on: rig)
        let context = { "daemon log:\n\(player.logTail(60))\norigin: \(rig.origin.requests().map(\.path))" }
        let number = { (path: String) in Int(path.filter(\.isNumber)) ?? -1 }
        let segmentsAsked = { rig.origin.requests().map(\.path).filter { $0.hasSuffix(".ts") }.map(number) }
        let reloadsBegun = { rig.origin.requests().filter { $0.path == live.path }.count }
        let opened = try await probe.open(rig.origin.url(for: "live.m3u8"))
        _ = try await probe.awaitAdvancing(since: opened)
        try await probe.remote.pause()
        _ = try await probe.awaitStatus("Paused")
        // The window slides two segments past the last the player asked for by then. A paused
        // player may still be filling its queue, under load for a while: if it asked past the
        // slide meanwhile, the window slides again past what it asked.
        var listedAtPlay = 0
        var askedBefore: [Int] = []
        for _ in 0..<5 {
            _ = try rig.origin.settledRequests()
            listedAtPlay = try #require(segmentsAsked().last) + 3
            let reloadsBefore = reloadsBegun()
            live.slide(to: listedAtPlay)
            // A reload under way at the slide may bring the old listing; the one after it brings
            // the new, which the player has taken in once it asks for the one after that.
            _ = try await awaitValue(
                "three reloads after \(reloadsBefore)\n\(context())", timeout: 20, reloadsBegun,
                until: { $0 >= reloadsBefore + 3 })
            askedBefore = segmentsAsked()
            if let last = askedBefore.last, listedAtPlay >= last + 3 { break }
        }
        let lastAsked = try #require(askedBefore.last)
        try #require(listedAtPlay >= lastAsked + 3, "asked \(askedBefore) while paused\n\(context())")
        let played = ContinuousClock.now
        try await probe.remote.play()
        let resumed = try await probe.awaitAdvancing(since: played)
        print(
            "HLS live paused past its window (listed from \(listedAtPlay) at Play): advancing \(String(format: "%.3f", resumed)) s"
        )
        // The player goes on to the window: the next segment it asks for is one still listed.
        _ = try await awaitValue(
            "a segment asked for after Play\n\(context())", timeout: 20, segmentsAsked,
            until: { $0.count > askedBefore.count })
        let askedAfter = Array(segmentsAsked().dropFirst(askedBefore.count))
        #expect(askedAfter.first.map { $0 >= listedAtPlay } == true, "asked after Play: \(askedAfter)\n\(context())")
        #expect(
            !askedAfter.contains { $0 > lastAsked && $0 < listedAtPlay },
            "asked for what left the window: \(askedAfter)")
    }

    /// A live master playlist of 64 and 192 kbit/s variants over a link at 3× the higher: it
    /// starts low and moves up, and from then on reloads the higher variant's playlist and takes
    /// its segments in sequence, none asked twice, while playing on.
    @Test func aLiveMasterMovesUpAndFollowsTheVariantItPlays() async throws {
        let rig = try NetworkRig(linkRate: 72_000, recordAudio: false, lifetime: 120)
        let media = try TemporaryDirectory(prefix: "spool-hls-live-master")
        var made: [(name: String, segments: [String])] = []
        for (name, bitrate) in [("low", 64_000), ("high", 192_000)] {
            let folder = media.url.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            made.append(
                (name, try await HLSMedia.make(in: folder, seconds: 40, targetDuration: 2, bitrate: bitrate).segments))
        }
        // Both windows slide together, as one packager's variants do.
        let slides = try made.map { variant in
            try HLSMedia.serveLive(
                variant.segments, from: media.url.appendingPathComponent(variant.name), on: rig.origin,
                directory: variant.name + "/")
        }
        defer { slides.forEach { $0.cancel() } }
        HLSEndToEndTests.serveMaster(on: rig.origin, media: "live.m3u8")
        let (player, connection, probe) = try await Self.startSpool(on: rig)
        let context = { "daemon log:\n\(player.logTail(60))\norigin: \(rig.origin.requests().map(\.path))" }
        let opened = try await probe.open(rig.origin.url(for: "master.m3u8"))
        _ = try await probe.awaitAdvancing(since: opened)
        let variantNumber = { () async throws -> Int32? in
            try await HLSEndToEndTests.spoolProperty("Variant", of: player, over: connection)?
                .stringVariantDictValue?["number"]?.int32Value
        }
        _ = try await awaitValue(
            "the variant, moving up to 2\n\(context())", timeout: 20, interval: .milliseconds(100), variantNumber,
            until: { $0 == 2 })
        // The segments already listed play out; those after them come from the higher variant,
        // whose playlist alone is reloaded from the switch on.
        let paths = { rig.origin.requests().map(\.path) }
        _ = try await awaitValue(
            "a segment of the higher variant asked for\n\(context())", timeout: 20, paths,
            until: { $0.contains { $0.hasPrefix("/high/") && $0.hasSuffix(".ts") } })
        let afterSwitch = paths().drop { $0 != "/high/live.m3u8" }.dropFirst()
        #expect(!afterSwitch.contains("/low/live.m3u8"), "the lower playlist still reloaded\n\(context())")
        _ = try await probe.awaitAdvancing(since: .now)
        // The segments in sequence across the switch: each number once, in order.
        let numbers = paths().filter { $0.hasSuffix(".ts") }.map { Int($0.filter(\.isNumber)) ?? -1 }
        #expect(numbers == numbers.sorted() && Set(numbers).count == numbers.count, "segments: \(paths())")
        #expect(paths().contains { $0.hasPrefix("/high/") && $0.hasSuffix(".ts") }, "\(context())")
    }

    /// Served by nginx, which sends validators but no freshness: a replay revalidates each
    /// segment (304s) and fetches none of its bytes again.
    @Test func fromNginxAReplayFetchesNoSegmentByteAgain() async throws {
        let media = try TemporaryDirectory(prefix: "spool-hls-nginx")
        let (_, segments) = try await HLSMedia.make(in: media.url, seconds: 8)
        let nginx = try NginxServer(serving: media.url, lifetime: 120)
        defer { nginx.stop() }
        let rig = try NetworkRig(lifetime: 120)
        let (player, _, probe) = try await Self.startSpool(on: rig)
        let context = { "daemon log:\n\(player.logTail(60))\nnginx: \(nginx.accessLog())" }
        let url = nginx.url(for: "index.m3u8")
        for play in 1...2 {
            let opened = try await probe.open(url)
            _ = try await probe.awaitAdvancing(since: opened)
            _ = try await probe.awaitStatus("Stopped", timeout: 20)
            let served = nginx.accessLog().filter { $0.path.hasSuffix(".ts") }
            if play == 1 {
                #expect(
                    served.count == segments.count && served.allSatisfy { [200, 206].contains($0.status) },
                    "the first play fetches each segment once: \(served)\n\(context())")
            } else {
                let again = served.dropFirst(segments.count)
                #expect(again.map(\.bodyBytesSent).reduce(0, +) == 0, "a replay fetched segment bytes: \(again)")
                #expect(again.allSatisfy { $0.status == 304 }, "\(again)\n\(context())")
            }
        }
    }

    /// An origin that honours no Range and sends no Content-Length (chunked), 150 ms to every
    /// first byte and a cut connection mid-segment: the presentation plays with its length,
    /// a seek to 80 % lands, and a replay asks for no segment again.
    @Test func anOriginWithoutRangeOrLengthWithLatencyAndACutStillPlaysSeeksAndReplays() async throws {
        let rig = try NetworkRig(linkRate: Self.linkRate, recordAudio: false, lifetime: 150)
        let media = try TemporaryDirectory(prefix: "spool-hls-bare")
        let (playlist, segments) = try await HLSMedia.make(in: media.url, seconds: Self.seconds)
        var faults = OriginFaults()
        faults.ignoresRange = true
        faults.chunked = true
        faults.firstByteLatency = 0.15
        let url = try rig.serve(playlist, faults: faults, headers: ["Cache-Control": "max-age=60"])
        for (number, segment) in segments.enumerated() {
            var segmentFaults = faults
            // The second segment's first connection breaks off half-way.
            if number == 1 { segmentFaults.closeAfterBodyBytes = 40_000 }
            try rig.serve(
                media.url.appendingPathComponent(segment), faults: segmentFaults,
                headers: ["Cache-Control": "max-age=86400"])
        }
        let (player, _, probe) = try await Self.startSpool(on: rig)
        let context = { "daemon log:\n\(player.logTail(60))\norigin: \(rig.origin.requests())" }
        let opened = try await probe.open(url)
        _ = try await probe.awaitAdvancing(since: opened)
        let track = try await probe.currentTrack()
        #expect(abs((track.length ?? 0) - Double(Self.seconds)) < 0.5, "length \(String(describing: track.length))")
        // Past the cut segment, then to 80 %.
        _ = try await probe.awaitAdvancing(since: opened, near: 5, tolerance: 0.5, timeout: 15)
        let target = 0.8 * (track.length ?? Double(Self.seconds))
        let asked = try await probe.setPosition(target, track: track)
        _ = try await probe.awaitAdvancing(since: asked, near: target, tolerance: 0.5, timeout: 10)
        try await probe.awaitStatus("Stopped", timeout: 15)
        let before = rig.origin.requests().count
        let replayed = try await probe.open(url)
        _ = try await probe.awaitAdvancing(since: replayed)
        let again = rig.origin.requests().dropFirst(before).map(\.path)
        #expect(again.isEmpty, "a replay asked for \(again)\n\(context())")
    }
}
