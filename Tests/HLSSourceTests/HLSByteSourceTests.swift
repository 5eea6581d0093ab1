import ByteSourceAPI
import Foundation
import HLS
import HLSSource
import Synchronization
import TestSupport
import Testing

@Suite("HLS: segments as one stream")
struct HLSByteSourceTests {
    static let segments = (0..<5).map { Data("segment \($0) ".utf8) + Data(repeating: UInt8($0), count: 20 + $0) }

    /// A master playlist of a 256 kbit/s AAC-LC variant at `high/<media>` and a 64 kbit/s HE-AAC
    /// one at `low/<media>`.
    static func masterPlaylist(media: String) -> String {
        """
        #EXTM3U
        #EXT-X-STREAM-INF:BANDWIDTH=256000,CODECS="mp4a.40.2"
        high/\(media)
        #EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.5"
        low/\(media)

        """
    }

    static func mediaPlaylist(_ names: [String], extra: String = "", end: Bool = true) -> String {
        "#EXTM3U\n#EXT-X-TARGETDURATION:4\n" + extra
            + names.map { "#EXTINF:4.0,\n\($0)\n" }.joined() + (end ? "#EXT-X-ENDLIST\n" : "")
    }

    @Test func theSegmentsAreReadAsOneStreamWithThePlaylistsLength() async throws {
        let names = (0..<5).map { "seg\($0).ts" }
        let origin = Origin(
            playlists: [url("index.m3u8"): Self.mediaPlaylist(names)],
            bodies: Dictionary(uniqueKeysWithValues: zip(names.map(url), Self.segments)),
            slow: [url("seg2.ts")])
        let source = origin.source(url("index.m3u8"))
        let info = try await open(source).get()
        #expect(info.duration == .seconds(20) && info.length == nil && !info.randomAccess)
        let reading = Task { await readAll(source) }
        // The third segment's bytes come late: the read waits for them, then goes on.
        while origin.made(url("seg2.ts")).isEmpty { await Task.yield() }
        try await Task.sleep(for: .milliseconds(20))
        origin.made(url("seg2.ts")).first?.arrive()
        let all = try await reading.value.get()
        #expect(all == Self.segments.reduce(Data(), +))
        #expect(names.allSatisfy { origin.made(url($0)).count == 1 }, "each segment's source made once")
        #expect(origin.made(url("seg0.ts")).first?.closed == true, "parts behind the reader are closed")
        source.close()
        #expect(origin.made(url("seg4.ts")).first?.closed == true)
    }

    @Test func byteRangesOfOneFileAndAnInitializationSectionComeInOrder() async throws {
        let file = Data((0..<200).map { UInt8($0) })
        let playlist = """
            #EXTM3U
            #EXT-X-TARGETDURATION:4
            #EXT-X-MAP:URI="init.mp4"
            #EXTINF:4.0,
            #EXT-X-BYTERANGE:50@10
            media.mp4
            #EXTINF:4.0,
            #EXT-X-BYTERANGE:30
            media.mp4
            #EXT-X-ENDLIST

            """
        let initSection = Data("init".utf8)
        let origin = Origin(
            playlists: [url("a.m3u8"): playlist], bodies: [url("media.mp4"): file, url("init.mp4"): initSection])
        let source = origin.source(url("a.m3u8"))
        _ = try await open(source).get()
        let all = try await readAll(source, chunk: 16).get()
        #expect(all == initSection + file[10..<60] + file[60..<90])
    }

    @Test func aRestartReadsFromTheSegmentOfItsTargetAfterItsInitializationSection() async throws {
        let playlist = """
            #EXTM3U
            #EXT-X-TARGETDURATION:4
            #EXT-X-MAP:URI="init.mp4"
            #EXTINF:4.0,
            s0.m4s
            #EXTINF:4.0,
            s1.m4s
            #EXTINF:4.0,
            s2.m4s
            #EXT-X-ENDLIST

            """
        let names = ["s0.m4s", "s1.m4s", "s2.m4s"]
        var bodies = Dictionary(uniqueKeysWithValues: zip(names.map(url), Self.segments))
        bodies[url("init.mp4")] = Data("init".utf8)
        let origin = Origin(playlists: [url("f.m3u8"): playlist], bodies: bodies)
        let source = origin.source(url("f.m3u8"))
        let info = try await open(source).get()
        #expect(info.seeksByRestart && info.seekable)
        _ = await readOnce(source, at: 0, maxLength: 3)
        #expect(source.restart(at: .milliseconds(9_500)) == .seconds(8))
        #expect(try await readAll(source, chunk: 5).get() == Data("init".utf8) + Self.segments[2])
        #expect(source.restart(at: .seconds(4)) == .seconds(4), "back to a segment before")
        #expect(try await readAll(source, chunk: 5).get() == Data("init".utf8) + Self.segments[1] + Self.segments[2])
    }

    @Test func aMasterPlaylistPlaysItsLowestAudioVariant() async throws {
        let master = Self.masterPlaylist(media: "index.m3u8")
        let origin = Origin(
            playlists: [
                url("master.m3u8"): master, url("low/index.m3u8"): Self.mediaPlaylist(["a.ts"]),
                url("high/index.m3u8"): Self.mediaPlaylist(["b.ts"]),
            ],
            bodies: [url("low/a.ts"): Data("low".utf8), url("high/b.ts"): Data("high".utf8)])
        let source = origin.source(url("master.m3u8"))
        _ = try await open(source).get()
        #expect(try await readAll(source).get() == Data("low".utf8))
    }

    /// A master playlist starts on its lowest variant; a first segment that came fast moves the
    /// next segments to the highest variant the link carries, the stream going on without a break.
    @Test func aFastFirstSegmentSwitchesTheNextOnesToAHigherVariant() async throws {
        let master = """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=256000,CODECS="mp4a.40.2"
            high/index.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.5"
            low/index.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=4000000,CODECS="mp4a.40.2"
            huge/index.m3u8

            """
        let names = ["s0.ts", "s1.ts", "s2.ts"]
        var bodies: [URL: Data] = [:]
        for (variant, mark) in [("low", "L"), ("high", "H"), ("huge", "X")] {
            for name in names { bodies[url("\(variant)/\(name)")] = Data("\(mark)\(name) ".utf8) }
        }
        // 100 kB in 0.5 s: 1.6 Mbit/s, which carries 256 kbit/s but not 4 Mbit/s.
        let origin = Origin(
            playlists: [
                url("master.m3u8"): master, url("low/index.m3u8"): Self.mediaPlaylist(names),
                url("high/index.m3u8"): Self.mediaPlaylist(names), url("huge/index.m3u8"): Self.mediaPlaylist(names),
            ],
            bodies: bodies,
            transfers: [url("low/s0.ts"): TransferSample(bytes: 100_000, took: .milliseconds(500))])
        let source = origin.source(url("master.m3u8"))
        _ = try await open(source).get()
        let deadline = ContinuousClock.now + .seconds(5)
        while source.variantBandwidth != 256000, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(source.variantBandwidth == 256000)
        #expect(try await readAll(source).get() == Data("Ls0.ts Hs1.ts Hs2.ts ".utf8))
    }

    @Test func aReadBehindTheCurrentPartStartsAgainFromItsPart() async throws {
        let names = ["s0.ts", "s1.ts", "s2.ts"]
        let origin = Origin(
            playlists: [url("i.m3u8"): Self.mediaPlaylist(names)],
            bodies: Dictionary(uniqueKeysWithValues: zip(names.map(url), Self.segments)))
        let source = origin.source(url("i.m3u8"))
        _ = try await open(source).get()
        let all = try await readAll(source).get()
        let back = Int64(Self.segments[0].count + 3)
        let outcome = source.read(at: back, maxLength: 5) {}
        if case .pending = outcome {
            try await Task.sleep(for: .milliseconds(10))
        }
        guard case .data(let bytes) = source.read(at: back, maxLength: 5, wake: {}) else {
            Issue.record("no bytes back at \(back)")
            return
        }
        #expect(bytes == all[Int(back)..<Int(back) + 5])
    }

    /// A live playlist: it starts three target durations from the end, each reload's new
    /// segments follow without a break, and its end (`EXT-X-ENDLIST`) ends the stream.
    @Test func aLivePlaylistStartsNearItsEndAndGrowsWithEachReload() async throws {
        let names = (0..<6).map { "live\($0).ts" }
        let bodies = Dictionary(uniqueKeysWithValues: zip(names.map(url), Self.segments + [Data("tail".utf8)]))
        let window = { (range: Range<Int>, end: Bool) in
            "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:\(range.lowerBound)\n"
                + range.map { "#EXTINF:1.0,\nlive\($0).ts\n" }.joined() + (end ? "#EXT-X-ENDLIST\n" : "")
        }
        let origin = Origin(playlists: [url("live.m3u8"): window(0..<5, false)], bodies: bodies)
        let source = origin.source(url("live.m3u8"))
        let info = try await open(source).get()
        #expect(info.live != nil && info.duration == nil && info.length == nil)
        let reading = Task { await readAll(source) }
        // The next reload slides the window and ends the presentation.
        origin.playlists.withLock { $0[url("live.m3u8")] = window(3..<6, true) }
        let all = try await reading.value.get()
        let expected = Self.segments[2...].reduce(Data(), +) + Data("tail".utf8)
        #expect(all == expected, "from the third segment (3 s from the end) to the last")
        #expect(source.partsListed <= 1, "a live source forgets the parts it read")
        #expect(origin.fetched.withLock { $0.count } >= 2)
        #expect(origin.liveFlags.withLock { $0.allSatisfy { $0 } }, "a live presentation's segments are live")
    }

    /// A live segment the origin no longer has (404) is skipped: the stream goes on with the
    /// next one instead of failing the station.
    @Test func aMissingLiveSegmentIsSkippedAndTheWindowGoesOn() async throws {
        let names = (0..<5).map { "live\($0).ts" }
        var bodies = Dictionary(uniqueKeysWithValues: zip(names.map(url), Self.segments))
        bodies[url("live3.ts")] = nil
        let playlist =
            "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:0\n"
            + names.map { "#EXTINF:1.0,\n\($0)\n" }.joined()
        let origin = Origin(playlists: [url("live.m3u8"): playlist], bodies: bodies)
        let source = origin.source(url("live.m3u8"))
        _ = try await open(source).get()
        let reading = Task { await readAll(source) }
        origin.playlists.withLock { $0[url("live.m3u8")] = playlist + "#EXT-X-ENDLIST\n" }
        let all = try await reading.value.get()
        #expect(all == Self.segments[2] + Self.segments[4], "live3.ts is gone: the stream skips it")
    }

    /// A live segment listed before the origin serves it (a CDN edge still filling) is asked
    /// for again and plays; one that fails every attempt is skipped.
    @Test(arguments: [(2, true), (HLSByteSource.liveSegmentAttempts, false)])
    func aLiveSegmentNotServedYetIsAskedForAgain(failing: Int, heard: Bool) async throws {
        let names = (0..<5).map { "live\($0).ts" }
        let bodies = Dictionary(uniqueKeysWithValues: zip(names.map(url), Self.segments))
        let playlist =
            "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:0\n"
            + names.map { "#EXTINF:1.0,\n\($0)\n" }.joined()
        let origin = Origin(
            playlists: [url("live.m3u8"): playlist], bodies: bodies, failingOpens: [url("live3.ts"): failing])
        let source = origin.source(url("live.m3u8"))
        _ = try await open(source).get()
        let reading = Task { await readAll(source) }
        origin.playlists.withLock { $0[url("live.m3u8")] = playlist + "#EXT-X-ENDLIST\n" }
        let all = try await reading.value.get()
        #expect(all == Self.segments[2] + (heard ? Self.segments[3] : Data()) + Self.segments[4])
        #expect(origin.made(url("live3.ts")).count == min(failing + 1, HLSByteSource.liveSegmentAttempts))
    }

    /// A reader held back (a pause) while the window slides past the segments it has not begun:
    /// those are skipped without being asked for (RFC 8216 §6.3.3), and the stream goes on at
    /// the oldest segment still listed.
    @Test func segmentsTheWindowSlidPastWhileTheReaderWaitedAreSkippedUnasked() async throws {
        let names = (0..<9).map { "w\($0).ts" }
        let bodies = (0..<9).map { Data("window segment \($0) ".utf8) }
        func listing(_ range: Range<Int>, end: Bool = false) -> String {
            "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:\(range.lowerBound)\n"
                + range.map { "#EXTINF:1.0,\n\(names[$0])\n" }.joined() + (end ? "#EXT-X-ENDLIST\n" : "")
        }
        let origin = Origin(
            playlists: [url("w.m3u8"): listing(0..<5)],
            bodies: Dictionary(uniqueKeysWithValues: zip(names.map(url), bodies)), slow: [url("w3.ts")])
        let source = origin.source(url("w.m3u8"))
        _ = try await open(source).get()
        // The reader starts at w2 (three target durations from the end) and waits in w3.
        let reading = Task { await readAll(source) }
        while origin.made(url("w3.ts")).isEmpty { await Task.yield() }
        origin.playlists.withLock { $0[url("w.m3u8")] = listing(6..<9, end: true) }
        while origin.fetched.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
        origin.made(url("w3.ts")).forEach { $0.arrive() }
        #expect(try await reading.value.get() == bodies[2] + bodies[6] + bodies[7] + bodies[8])
        #expect(origin.made(url("w4.ts")).isEmpty, "w4 left the window unread: never asked for")
    }

    /// A live packed-audio segment's leading ID3 tag names what is on air: its title and artist
    /// are announced at the segment's first byte, and the tag never reaches the stream.
    @Test func aLiveSegmentsID3TitleIsAnnouncedAtItsFirstByte() async throws {
        func tag(_ title: String, _ artist: String) -> Data {
            let frames = [("TIT2", title), ("TPE1", artist)].flatMap { id, text -> [UInt8] in
                let payload = [UInt8(3)] + Array(text.utf8)
                return Array(id.utf8) + [0, 0, 0, UInt8(payload.count), 0, 0] + payload
            }
            return Data([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, UInt8(frames.count)] + frames)
        }
        let names = ["p0.aac", "p1.aac", "p2.aac"]
        let bodies: [URL: Data] = [
            url("p0.aac"): tag("First", "Band") + Self.segments[0], url("p1.aac"): Self.segments[1],
            url("p2.aac"): tag("Second", "Other") + Self.segments[2],
        ]
        let playlist =
            "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:0\n"
            + names.map { "#EXTINF:1.0,\n\($0)\n" }.joined()
        let origin = Origin(playlists: [url("radio.m3u8"): playlist], bodies: bodies)
        let source = origin.source(url("radio.m3u8"))
        let titles = Mutex<[(String, Int64)]>([])
        source.whenStreamTitle { title, offset in titles.withLock { $0.append((title.text, offset)) } }
        let info = try await open(source).get()
        #expect(info.live != nil)
        let reading = Task { await readAll(source) }
        origin.playlists.withLock { $0[url("radio.m3u8")] = playlist + "#EXT-X-ENDLIST\n" }
        let all = try await reading.value.get()
        // Three target durations from the end of three 1-s segments: all of them.
        #expect(all == Self.segments[0] + Self.segments[1] + Self.segments[2], "the tags are stripped")
        let second = Int64(Self.segments[0].count + Self.segments[1].count)
        #expect(titles.withLock { $0.map(\.0) } == ["Band - First", "Other - Second"])
        #expect(titles.withLock { $0.map(\.1) } == [0, second])
    }

    /// Live MPEG-TS segments name what is on air in timed ID3: each title is announced at the
    /// audio its tag comes before, counted in the audio's bytes as the parser behind the demuxer
    /// counts them; read 7 bytes at a time, the segments reach the stream whole.
    @Test func aLiveTransportStreamsTimedID3TitleIsAnnouncedWhereItsTagBegins() async throws {
        let first = try TimedID3Writer.adding(
            TimedID3Writer.songTag(artist: "Band", title: "First"), to: TimedID3Writer.syntheticSegment(audioPackets: 6)
        )
        let plain = TimedID3Writer.syntheticSegment(audioPackets: 6)
        let second = try TimedID3Writer.adding(
            TimedID3Writer.songTag(artist: "Other", title: "Second"),
            to: TimedID3Writer.syntheticSegment(audioPackets: 6))
        let names = ["t0.ts", "t1.ts", "t2.ts"]
        let playlist =
            "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:0\n"
            + names.map { "#EXTINF:1.0,\n\($0)\n" }.joined()
        let origin = Origin(
            playlists: [url("radio.m3u8"): playlist],
            bodies: [url("t0.ts"): first, url("t1.ts"): plain, url("t2.ts"): second])
        let source = origin.source(url("radio.m3u8"))
        let titles = Mutex<[(String, Int64)]>([])
        source.whenStreamTitle { title, offset in titles.withLock { $0.append((title.text, offset)) } }
        _ = try await open(source).get()
        let reading = Task { await readAll(source) }
        origin.playlists.withLock { $0[url("radio.m3u8")] = playlist + "#EXT-X-ENDLIST\n" }
        #expect(try await reading.value.get() == first + plain + second)
        #expect(titles.withLock { $0.map(\.0) } == ["Band - First", "Other - Second"])
        // Six audio packets a segment: 184 bytes of payload each, less the PES header's 14.
        let audioPerSegment: Int64 = 6 * 184 - 14
        #expect(titles.withLock { $0.map(\.1) } == [0, 2 * audioPerSegment])
    }

    /// A live playlist dated by `EXT-X-PROGRAM-DATE-TIME` on its first segment: each segment's
    /// air time (the others counted by their durations) is announced at its first byte, those
    /// of a reload too.
    @Test func eachLiveSegmentsAirTimeIsAnnouncedAtItsFirstByte() async throws {
        let names = (0..<5).map { "d\($0).ts" }
        func listing(_ range: Range<Int>, end: Bool = false) -> String {
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:\(range.lowerBound)\n"
                + "#EXT-X-PROGRAM-DATE-TIME:2027-01-15T10:00:0\(2 * range.lowerBound).500Z\n"
                + range.map { "#EXTINF:2.0,\n\(names[$0])\n" }.joined() + (end ? "#EXT-X-ENDLIST\n" : "")
        }
        let origin = Origin(
            playlists: [url("d.m3u8"): listing(0..<3)],
            bodies: Dictionary(uniqueKeysWithValues: zip(names.map(url), Self.segments)))
        let source = origin.source(url("d.m3u8"))
        let dates = Mutex<[(Date, Int64)]>([])
        source.whenProgramDate { date, offset in dates.withLock { $0.append((date, offset)) } }
        _ = try await open(source).get()
        let reading = Task { await readAll(source) }
        origin.playlists.withLock { $0[url("d.m3u8")] = listing(2..<5, end: true) }
        #expect(try await reading.value.get() == Self.segments.reduce(Data(), +))
        let base = try #require(ISO8601DateFormatter().date(from: "2027-01-15T10:00:00Z")).addingTimeInterval(0.5)
        #expect(dates.withLock { $0.map(\.0) } == (0..<5).map { base.addingTimeInterval(2 * Double($0)) })
        let starts = Self.segments.indices.map { Int64(Self.segments[..<$0].reduce(0) { $0 + $1.count }) }
        #expect(dates.withLock { $0.map(\.1) } == starts)
    }

    /// A live master playlist switches like an on-demand one, at the next reload: the new
    /// variant's playlist is reloaded from then on, and its segments follow the last one read
    /// by their sequence numbers, none repeated and none lost.
    @Test func aLiveMasterSwitchesItsReloadsToTheVariantChosen() async throws {
        let master = Self.masterPlaylist(media: "live.m3u8")
        let window = { (variant: String, range: Range<Int>, end: Bool) in
            "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:\(range.lowerBound)\n"
                + range.map { "#EXTINF:1.0,\n\(variant)\($0).ts\n" }.joined() + (end ? "#EXT-X-ENDLIST\n" : "")
        }
        var bodies: [URL: Data] = [:]
        for (variant, mark) in [("low", "L"), ("high", "H")] {
            for number in 0..<6 { bodies[url("\(variant)/\(variant)\(number).ts")] = Data("\(mark)\(number) ".utf8) }
        }
        let origin = Origin(
            playlists: [
                url("master.m3u8"): master, url("low/live.m3u8"): window("low", 0..<3, false),
                url("high/live.m3u8"): window("high", 0..<3, false),
            ],
            bodies: bodies,
            transfers: [url("low/low0.ts"): TransferSample(bytes: 100_000, took: .milliseconds(500))])
        let source = origin.source(url("master.m3u8"))
        let info = try await open(source).get()
        #expect(info.live != nil)
        let deadline = ContinuousClock.now + .seconds(5)
        while source.variantBandwidth != 256000, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(source.variantBandwidth == 256000)
        let reading = Task { await readAll(source) }
        origin.playlists.withLock {
            $0[url("low/live.m3u8")] = window("low", 3..<6, true)
            $0[url("high/live.m3u8")] = window("high", 3..<6, true)
        }
        let all = String(decoding: try await reading.value.get(), as: UTF8.self)
        // The window's three segments were listed from the low variant at the start; what the
        // reloads add comes from the high one.
        #expect(all == "L0 L1 L2 H3 H4 H5 ", "\(all)")
    }

    /// A live stream whose key rotates with every segment keeps only the keys of the parts
    /// still listed: hours of listening hold no more keys than the window.
    @Test func aLiveStreamWithRotatingKeysHoldsOnlyTheWindowsKeys() async throws {
        let keys = (0..<5).map { number in Array((0..<16).map { UInt8(($0 + number * 7) & 0xff) }) }
        var bodies: [URL: Data] = [:]
        var blobs: [URL: Data] = [:]
        var playlist = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:0\n"
        for number in 0..<5 {
            let iv = Array(repeating: UInt8(0), count: 15) + [UInt8(number)]
            bodies[url("k\(number).ts")] = try opensslEncrypt(Self.segments[number], key: keys[number], iv: iv)
            blobs[url("keys/\(number)")] = Data(keys[number])
            playlist += "#EXT-X-KEY:METHOD=AES-128,URI=\"keys/\(number)\"\n#EXTINF:1.0,\nk\(number).ts\n"
        }
        let origin = Origin(playlists: [url("rot.m3u8"): playlist], bodies: bodies, blobs: blobs)
        let source = origin.source(url("rot.m3u8"))
        _ = try await open(source).get()
        let reading = Task { await readAll(source) }
        origin.playlists.withLock { $0[url("rot.m3u8")] = playlist + "#EXT-X-ENDLIST\n" }
        let all = try await reading.value.get()
        #expect(all == Self.segments[2...4].reduce(Data(), +), "three target durations from the end")
        #expect(source.keysHeld <= 1, "\(source.keysHeld) keys held after the window was read")
    }

    /// AES-128 segments: the key fetched once, each segment's IV its sequence number unless the
    /// key tag gives one, the plaintext one stream.
    @Test func encryptedSegmentsAreDecryptedWithTheirKeyAndIV() async throws {
        let key = Array((0..<16).map { UInt8($0 * 3) })
        let explicitIV: [UInt8] = Array(repeating: 0xAB, count: 16)
        let sequenceIV = { (number: UInt8) -> [UInt8] in Array(repeating: 0, count: 15) + [number] }
        let bodies: [URL: Data] = [
            url("c5.ts"): try opensslEncrypt(Self.segments[0], key: key, iv: sequenceIV(5)),
            url("c6.ts"): try opensslEncrypt(Self.segments[1], key: key, iv: sequenceIV(6)),
            url("c7.ts"): try opensslEncrypt(Self.segments[2], key: key, iv: explicitIV),
            url("clear.ts"): Self.segments[3],
        ]
        let playlist = """
            #EXTM3U
            #EXT-X-TARGETDURATION:4
            #EXT-X-MEDIA-SEQUENCE:5
            #EXT-X-KEY:METHOD=AES-128,URI="keys/k1"
            #EXTINF:4,
            c5.ts
            #EXTINF:4,
            c6.ts
            #EXT-X-KEY:METHOD=AES-128,URI="keys/k1",IV=0x\(hex(explicitIV))
            #EXTINF:4,
            c7.ts
            #EXT-X-KEY:METHOD=NONE
            #EXTINF:4,
            clear.ts
            #EXT-X-ENDLIST

            """
        let origin = Origin(
            playlists: [url("enc.m3u8"): playlist], bodies: bodies, blobs: [url("keys/k1"): Data(key)])
        let source = origin.source(url("enc.m3u8"))
        _ = try await open(source).get()
        // Reads that go back within a segment, as a type finder's peeks do, get its bytes again.
        // (A read may be short: the decryptor holds back the last block until the segment ends.)
        for offset in [0, 5, 0] {
            guard case .data(let bytes) = await readOnce(source, at: Int64(offset), maxLength: 10) else {
                Issue.record("no bytes at \(offset)")
                return
            }
            #expect(bytes == Self.segments[0][offset..<offset + bytes.count], "at \(offset)")
        }
        let all = try await readAll(source, chunk: 11).get()
        #expect(all == Self.segments[0..<4].reduce(Data(), +))
        #expect(origin.fetched.withLock { $0.filter { $0 == url("keys/k1") }.count } == 1, "the key fetched once")
    }

    @Test func aSegmentThatDoesNotDecryptWithItsKeyFailsTheRead() async throws {
        let cipher = try opensslEncrypt(
            Self.segments[0], key: Array(repeating: 1, count: 16), iv: Array(repeating: 0, count: 16))
        let playlist =
            "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n#EXTINF:4,\nx.ts\n#EXT-X-ENDLIST\n"
        let origin = Origin(
            playlists: [url("bad.m3u8"): playlist], bodies: [url("x.ts"): cipher],
            blobs: [url("k"): Data(repeating: 2, count: 16)])
        let source = origin.source(url("bad.m3u8"))
        _ = try await open(source).get()
        guard case .failure(let error) = await readAll(source) else {
            Issue.record("wrong bytes read as the segment")
            return
        }
        #expect(error.description.contains("does not decrypt"), "\(error)")
    }

    @Test(arguments: [
        (
            "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"k\"\n#EXTINF:4,\na.ts\n#EXT-X-ENDLIST\n",
            "SAMPLE-AES"
        ),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-ENDLIST\n", "no segment"),
        ("<html>not found</html>", "not a valid HLS playlist"),
    ])
    func whatCannotBePlayedFailsToOpenWithAClearError(_ text: String, _ words: String) async {
        let origin = Origin(playlists: [url("x.m3u8"): text], bodies: [url("a.ts"): Data("a".utf8)])
        guard case .failure(let error) = await open(origin.source(url("x.m3u8"))) else {
            Issue.record("opened")
            return
        }
        #expect(error.description.contains(words), "\(error)")
    }

    @Test func aSegmentThatIsGoneFailsTheReadAtItsPlace() async throws {
        let origin = Origin(
            playlists: [url("i.m3u8"): Self.mediaPlaylist(["s0.ts", "missing.ts"])],
            bodies: [url("s0.ts"): Self.segments[0]])
        let source = origin.source(url("i.m3u8"))
        _ = try await open(source).get()
        guard case .failure(let error) = await readAll(source) else {
            Issue.record("read through a missing segment")
            return
        }
        #expect(error == .gone("/missing.ts"))
    }
}

@Suite("Where an HLS stream restarts")
struct RestartPointTests {
    let base = URL(string: "https://example.com/a/")!

    func segment(_ name: String, _ seconds: Double) -> StreamPart {
        StreamPart(url: base.appendingPathComponent(name), duration: .milliseconds(Int(seconds * 1000)))
    }

    func initialization(_ name: String) -> StreamPart {
        StreamPart(url: base.appendingPathComponent(name), isInitialization: true)
    }

    @Test func aTargetMapsToTheSegmentPlayingThenAndItsStart() {
        let parts = [segment("0.ts", 4), segment("1.ts", 4), segment("2.ts", 3.5)]
        let rows: [(Duration, Int, Duration)] = [
            (.zero, 0, .zero), (.milliseconds(3_999), 0, .zero), (.seconds(4), 1, .seconds(4)),
            (.milliseconds(10_000), 2, .seconds(8)), (.seconds(11), 2, .seconds(8)),
            // Past the end: the last segment (the stream then ends at once after it).
            (.seconds(60), 2, .seconds(8)),
        ]
        for (target, segment, start) in rows {
            let point = SegmentStream.restartPoint(in: parts, at: target)
            #expect(point?.segment == segment && point?.start == start, "\(target): \(String(describing: point))")
            #expect(point?.initialization == nil)
        }
    }

    @Test func aRestartBeginsWithTheInitializationSectionInForceThere() {
        let parts = [
            initialization("init-a.mp4"), segment("0.m4s", 4), segment("1.m4s", 4), initialization("init-b.mp4"),
            segment("2.m4s", 4),
        ]
        #expect(SegmentStream.restartPoint(in: parts, at: .seconds(5))?.initialization == 0)
        let late = SegmentStream.restartPoint(in: parts, at: .seconds(9))
        #expect(late?.segment == 4 && late?.initialization == 3 && late?.start == .seconds(8))
        #expect(SegmentStream.restartPoint(in: [initialization("init.mp4")], at: .zero) == nil)
    }
}
