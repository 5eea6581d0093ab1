import DBusKit
import Foundation
import TestSupport
import Testing

private let spoolInterface = "org.spool.Spool1"
private let playerInterface = "org.mpris.MediaPlayer2.Player"

/// The `LyricsLine` a PropertiesChanged of `org.spool.Spool1` carries, if it is one.
private func lyricsLine(_ message: DBusSignalMessage) -> Int32? {
    guard message.arguments.first?.stringValue == spoolInterface else { return nil }
    return changedProperties(message)["LyricsLine"]?.int32Value
}

/// `Lyrics` as (microseconds, text) pairs.
private func lyricsLines(_ value: DBusValue?) -> [(Int64, String)] {
    value?.arrayValues?.compactMap { line in
        guard let fields = line.structureFields, fields.count == 2, let time = fields[0].int64Value,
            let text = fields[1].stringValue
        else { return nil }
        return (time, text)
    } ?? []
}

@Suite("Synchronized lyrics end to end", .serialized)
struct LyricsEndToEndTests {
    @Test func aSidecarLRCFileGivesTheTextTheLinesAndAFollowedLineIndex() async throws {
        let media = try TemporaryDirectory()
        let track = try longTone(seconds: 20, in: media)
        let lrc = "\u{FEFF}[ar:Spool]\r\n[00:10.00]Third\r\n[00:00.50]First\r\n[00:05.00]Second\r\n[00:15.00]Fourth\r\n"
        try Data(lrc.utf8).write(to: track.deletingPathExtension().appendingPathExtension("lrc"))
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let signals = SignalLog()
        let stream = try await daemon.client.subscribe(matching: "type='signal',path='\(playerPath)'")
        let listener = Task { for await message in stream { await signals.append(message) } }
        defer { listener.cancel() }

        try await daemon.mpris(playerInterface, "OpenUri", [.string(track.absoluteString)])
        let text = "First\nSecond\nThird\nFourth"
        #expect(
            try await daemon.waitForProperty(playerInterface, "Metadata") {
                $0?.stringVariantDictValue?["xesam:asText"]?.stringValue == text
            }, "xesam:asText")
        let lines = lyricsLines(try await daemon.property(spoolInterface, "Lyrics"))
        #expect(lines.map(\.0) == [500_000, 5_000_000, 10_000_000, 15_000_000])
        #expect(lines.map(\.1) == ["First", "Second", "Third", "Fourth"])

        // Playing from the start: the first line comes by itself, 0.5 s in.
        #expect(await signals.waitFor { $0.contains { lyricsLine($0) == 0 } }, "LyricsLine 0 while playing")
        let afterFirst = await signals.items.count
        let trackID = try #require(
            try await daemon.property(playerInterface, "Metadata")?.stringVariantDictValue?["mpris:trackid"])

        // A seek forward: the line follows at once, not at the next line's time.
        try await daemon.mpris(playerInterface, "SetPosition", [trackID, .int64(12_000_000)])
        #expect(
            await signals.waitFor { $0.dropFirst(afterFirst).contains { lyricsLine($0) == 2 } },
            "LyricsLine 2 after the seek")
        let atThird = await signals.items
        #expect(
            !atThird.dropFirst(afterFirst).contains {
                $0.member == "PropertiesChanged" && $0.arguments.first?.stringValue == playerInterface
            },
            "lines changed without a Player PropertiesChanged")
        #expect(try await daemon.property(spoolInterface, "LyricsLine")?.int32Value == 2)

        // At twice the speed the next line comes by itself, once the track has reached it (the
        // timer's wait at a rate is ``MPRISService/lyricsWait(from:to:rate:)``, tested alone).
        try await daemon.set(playerInterface, "Rate", .double(2.0))
        #expect(
            await signals.waitFor { $0.dropFirst(afterFirst).contains { lyricsLine($0) == 3 } },
            "LyricsLine 3 by itself")
        let reached = try #require(try await daemon.property(playerInterface, "Position")?.int64Value)
        #expect(reached >= 15_000_000, "LyricsLine 3 (at 15 s) signalled at \(reached) µs")

        // Paused, a seek back still moves the line.
        try await daemon.mpris(playerInterface, "Pause")
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Paused" }
        let beforeBack = await signals.items.count
        try await daemon.mpris(playerInterface, "SetPosition", [trackID, .int64(6_000_000)])
        #expect(
            await signals.waitFor { $0.dropFirst(beforeBack).contains { lyricsLine($0) == 1 } },
            "LyricsLine 1 after seeking back")
        #expect(try await daemon.property(spoolInterface, "LyricsLine")?.int32Value == 1)
    }

    @Test func lyricsInTheTagsAreParsedAndASidecarFileWinsOverThem() async throws {
        let media = try TemporaryDirectory()
        let plain = try Data(contentsOf: try longTone(seconds: 20, in: media))
        var tags = RawTags()
        tags.add(.title, "Tagged")
        tags.otherVorbisComments.append(("LYRICS", Array("[00:00.50]Tagged one\n[00:01.50]Tagged two\n".utf8)))
        let tagged = media.file("tagged.flac")
        try RawTagWriter.flac(plain, tags).write(to: tagged)
        let both = media.file("both.flac")
        try RawTagWriter.flac(plain, tags).write(to: both)
        try Data("Words from the file\nwithout any time".utf8).write(to: media.file("both.lrc"))
        // ID3v2.4 USLT in an MP3: UTF-8, a language, an empty description, the text.
        var id3 = RawTags()
        id3.otherID3Frames.append(("USLT", [3] + Array("eng".utf8) + [0] + Array("[00:00.50]From ID3\n".utf8)))
        let mp3 = media.file("tagged.mp3")
        try RawTagWriter.mp3(try Data(contentsOf: try Fixtures.shared().fixture(.mp3CBR).url), id3).write(to: mp3)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()

        try await daemon.mpris(playerInterface, "OpenUri", [.string(mp3.absoluteString)])
        #expect(
            try await daemon.waitForProperty(playerInterface, "Metadata") {
                $0?.stringVariantDictValue?["xesam:asText"]?.stringValue == "From ID3"
            }, "lyrics from an ID3 USLT frame")

        try await daemon.mpris(playerInterface, "OpenUri", [.string(tagged.absoluteString)])
        #expect(
            try await daemon.waitForProperty(playerInterface, "Metadata") {
                $0?.stringVariantDictValue?["xesam:asText"]?.stringValue == "Tagged one\nTagged two"
            }, "lyrics from the LYRICS comment")
        #expect(lyricsLines(try await daemon.property(spoolInterface, "Lyrics")).map(\.0) == [500_000, 1_500_000])

        try await daemon.mpris(playerInterface, "OpenUri", [.string(both.absoluteString)])
        #expect(
            try await daemon.waitForProperty(playerInterface, "Metadata") {
                $0?.stringVariantDictValue?["xesam:asText"]?.stringValue == "Words from the file\nwithout any time"
            }, "the .lrc file wins over the tags")
        #expect(lyricsLines(try await daemon.property(spoolInterface, "Lyrics")).isEmpty, "unsynced: no timed lines")
        #expect(try await daemon.property(spoolInterface, "LyricsLine")?.int32Value == -1)
    }

    @Test func spoolLyricsMarksTheCurrentLineAndFollowPrintsEachNewLine() async throws {
        let media = try TemporaryDirectory()
        let track = try longTone(seconds: 20, in: media)
        let lrc = "[00:00.50]First\n[00:05.00]Second\n[00:10.00]Third\n[00:15.00]Fourth\n"
        try Data(lrc.utf8).write(to: track.deletingPathExtension().appendingPathExtension("lrc"))
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let nothing = try daemon.spool("lyrics")
        #expect(nothing.status == 0 && nothing.stdout == "nothing queued\n", "\(nothing)")

        try await daemon.mpris(playerInterface, "OpenUri", [.string(track.absoluteString)])
        try await daemon.mpris(playerInterface, "Pause")
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Paused" }
        #expect(try await daemon.waitForProperty(spoolInterface, "Lyrics") { $0?.arrayValues?.count == 4 })
        let trackID = try #require(
            try await daemon.property(playerInterface, "Metadata")?.stringVariantDictValue?["mpris:trackid"])
        try await daemon.mpris(playerInterface, "SetPosition", [trackID, .int64(6_000_000)])
        #expect(try await daemon.waitForProperty(spoolInterface, "LyricsLine") { $0?.int32Value == 1 })
        let printed = try daemon.spool("lyrics")
        #expect(printed.status == 0)
        #expect(printed.stdout == "  0:00  First\n> 0:05  Second\n  0:10  Third\n  0:15  Fourth\n", "\(printed)")

        // Piped, --follow writes the current line, then each new one once, as a plain line.
        let logs = try TemporaryDirectory(prefix: "spool-lyrics-follow")
        let follow = try ChildProcess(
            try spoolExecutable(), ["lyrics", "--follow"], environment: daemon.bus.environment, logDirectory: logs.url,
            selfStopAfter: 60)
        defer { follow.stop(grace: 1) }
        #expect(
            await eventually(timeout: 10) { follow.standardOutput == "Second\n" },
            "\(follow.standardOutput)\(follow.standardError)")
        try await daemon.mpris(playerInterface, "SetPosition", [trackID, .int64(11_000_000)])
        #expect(
            await eventually(timeout: 10) { follow.standardOutput.hasSuffix("Third\n") }, "\(follow.standardOutput)")
        try await daemon.mpris(playerInterface, "SetPosition", [trackID, .int64(14_600_000)])
        try await daemon.mpris(playerInterface, "Play")
        #expect(
            await eventually(timeout: 10) { follow.standardOutput.hasSuffix("Fourth\n") }, "\(follow.standardOutput)")
        #expect(follow.standardOutput == "Second\nThird\nFourth\n")
    }

    /// An http track's sibling `.lrc` costs one request ever: the next track's comes with its
    /// preload (Next sends nothing), a 404 is remembered, and a file found is kept in the cache
    /// (a restarted daemon sends nothing for it).
    @Test func anHTTPTrackGetsItsSiblingLRCFetchedOnceAndA404Remembered() async throws {
        let media = try TemporaryDirectory()
        let tone = try longTone(seconds: 20, in: media)
        for name in ["song", "plain", "other"] {
            try FileManager.default.copyItem(at: tone, to: media.file("\(name).flac"))
        }
        try Data("[00:00.50]Over http\n[00:01.00]second".utf8).write(to: media.file("song.lrc"))
        try Data("Other words".utf8).write(to: media.file("other.lrc"))
        try Data("song.flac\nother.flac\n".utf8).write(to: media.file("list.m3u"))
        let server = try NginxServer(serving: media.url)
        let home = try TemporaryDirectory(prefix: "spool-home")
        let bus = try PrivateBus()
        func lrcRequests(_ name: String) -> Int { server.accessLog().filter { $0.path == "/\(name).lrc" }.count }
        func audioRequests(_ name: String) -> Int { server.accessLog().filter { $0.path == "/\(name).flac" }.count }

        // The first daemon's log, for a failure seen after its restart.
        var firstLog = ""
        do {
            let daemon = try RunningDaemon(bus: bus, home: home.url)
            defer { firstLog = daemon.process.standardError.split(separator: "\n").suffix(40).joined(separator: "\n") }
            try await daemon.waitUntilReady()
            try await daemon.mpris(playerInterface, "OpenUri", [.string(server.url(for: "list.m3u").absoluteString)])
            #expect(try await daemon.waitForText("Over http\nsecond"), "the sibling .lrc of an http track")
            #expect(lyricsLines(try await daemon.property(spoolInterface, "Lyrics")).map(\.0) == [500_000, 1_000_000])
            // nginx sends the first track at once, which fires the preload of the next one: its
            // head first, then (the first track's download over) the whole of it.
            var rows: [PreloadRow] = []
            #expect(
                try await eventuallyAsync(timeout: 10) {
                    rows = try await daemon.preloads()
                    let whole = rows.contains {
                        $0.url.hasSuffix("/other.flac") && $0.length > 0 && $0.cachedBytes == $0.length
                    }
                    return whole && lrcRequests("other") == 1
                }, "\(rows) \(server.accessLog())")
            let before = server.accessLog().count
            try await daemon.mpris(playerInterface, "Next")
            #expect(try await daemon.waitForText("Other words"))
            #expect(
                server.accessLog().count == before, "Next to a preloaded track: \(server.accessLog().dropFirst(before))"
            )

            try await daemon.mpris(playerInterface, "OpenUri", [.string(server.url(for: "plain.flac").absoluteString)])
            #expect(await eventually(timeout: 10) { lrcRequests("plain") == 1 }, "the missing sibling is asked for")
            #expect(server.accessLog().first { $0.path == "/plain.lrc" }?.status == 404)
            // The track's own response binds its version, which the 404 is remembered for: a
            // track left before its download began would leave the mark nothing to keep it by
            // (a test that moves on at once on a loaded machine did just that).
            #expect(
                await eventually(timeout: 10) {
                    daemon.process.standardError.contains("opened \(server.url(for: "plain.flac")): ")
                }, "plain.flac's response")
            // Recorded at once, for the version known or the one the track's response brings.
            #expect(
                await eventually(timeout: 10) {
                    daemon.process.standardError.contains("the cache remembers that \(server.url(for: "plain.lrc"))")
                }, "\(daemon.process.standardError)")
            #expect(try await daemon.waitForText(nil), "no lyrics for a track without a sibling")
            try await daemon.mpris(playerInterface, "OpenUri", [.string(server.url(for: "song.flac").absoluteString)])
            #expect(try await daemon.waitForText("Over http\nsecond"))
            try await daemon.mpris(playerInterface, "OpenUri", [.string(server.url(for: "plain.flac").absoluteString)])
            #expect(try await daemon.waitForText(nil))
            daemon.process.send(SIGTERM)
            #expect(await daemon.process.waitForExit(timeout: 10) == 0)
        }
        #expect(lrcRequests("plain") == 1, "a 404 is remembered")
        #expect(lrcRequests("song") == 1, "a sibling found is kept")

        let daemon = try RunningDaemon(bus: bus, home: home.url)
        try await daemon.waitUntilReady()
        try await daemon.mpris(playerInterface, "OpenUri", [.string(server.url(for: "song.flac").absoluteString)])
        #expect(try await daemon.waitForText("Over http\nsecond"), "after a restart, from the cache")
        #expect(lrcRequests("song") == 1, "a restarted daemon reads the kept file")
        try await daemon.mpris(playerInterface, "OpenUri", [.string(server.url(for: "plain.flac").absoluteString)])
        #expect(
            await eventually(timeout: 10) { daemon.process.standardError.contains("known missing for this version") },
            "\(daemon.process.standardError)\nthe first daemon's log ended:\n\(firstLog)")
        #expect(
            lrcRequests("plain") == 1,
            "a restarted daemon remembers the 404 of an unchanged track; requests: \(server.accessLog())")
    }
}

extension RunningDaemon {
    /// Waits until the playing flac track's `xesam:asText` is `text` (nil: absent).
    fileprivate func waitForText(_ text: String?) async throws -> Bool {
        try await waitForProperty(playerInterface, "Metadata") {
            $0?.stringVariantDictValue?["xesam:asText"]?.stringValue == text
                && $0?.stringVariantDictValue?["xesam:url"]?.stringValue?.hasSuffix(".flac") == true
        }
    }
}
