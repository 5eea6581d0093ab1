import DBusKit
import Foundation
import TestSupport
import Testing

/// The queue names tracks by their tags before they play: local files and complete cached
/// copies have their tags read ahead by the daemon.
@Suite("Queue tags end to end", .serialized)
struct QueueTagsEndToEndTests {
    @Test func queuedTracksShowTheirTagTitlesBeforeTheyPlay() async throws {
        let fixtures = try Fixtures.shared()
        let first = fixtures.fixture(.flac)
        let second = fixtures.fixture(.mp3VBR)
        let server = try NginxServer(serving: fixtures.directory)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()

        let stream = try await daemon.client.subscribe(
            matching: "type='signal',interface='org.mpris.MediaPlayer2.TrackList'")
        let log = SignalLog()
        let listener = Task { for await message in stream { await log.append(message) } }
        defer { listener.cancel() }

        // Nothing plays: both are read from their files.
        #expect(try daemon.spool("add", first.url.path, second.url.path).status == 0)
        let queued = try await daemon.waitForSpool("queue") {
            $0.contains("2. \(second.title) – \(second.artist) (0:03)")
        }
        #expect(queued.hasPrefix("> 1. \(first.title) – \(first.artist) (0:03)  [local]"), "\(queued)")
        // MPRIS TrackList clients hear of it: in a TrackMetadataChanged; or, when the tags were
        // read before the queue's change was announced (a machine loaded by a build made it so
        // once), in its TrackListReplaced, after which a client asks GetTracksMetadata.
        let names = { @Sendable (message: DBusSignalMessage) in
            message.arguments.contains { $0.stringVariantDictValue?["xesam:title"]?.stringValue == second.title }
        }
        let announced = await log.waitFor { messages in
            messages.contains(where: names) || messages.contains { $0.member == "TrackListReplaced" }
        }
        let heard = await log.items
        var named = heard.contains(where: names)
        if !named, let replaced = heard.last(where: { $0.member == "TrackListReplaced" }) {
            let ids = replaced.arguments.first?.arrayValues ?? []
            let reply = try await daemon.mpris(
                "org.mpris.MediaPlayer2.TrackList", "GetTracksMetadata", [.array(elementSignature: "o", ids)])
            named =
                reply.first?.arrayValues?.contains {
                    $0.stringVariantDictValue?["xesam:title"]?.stringValue == second.title
                } == true
        }
        #expect(announced && named, "no TrackList signal named \(second.title): \(heard.map(\.member))")
        #expect(try await daemon.waitForPlayerctl(["metadata", "title"]) { $0 == first.title } == first.title)

        // While one plays (paused before its end, so the engine has not opened what follows).
        let third = fixtures.fixture(.oggVorbis)
        let fourth = fixtures.fixture(.m4aFaststart)
        #expect(try daemon.spool("play", third.url.path, fourth.url.path).status == 0)
        #expect(try daemon.spool("pause").status == 0)
        let playing = try await daemon.waitForSpool("queue") { $0.contains("2. \(fourth.title) – \(fourth.artist)") }
        #expect(playing.hasPrefix("> 1. \(third.title)"), "\(playing)")
        let status = try await daemon.waitForSpool("status") { $0.contains("next: ") }
        #expect(status.contains("next: \(fourth.title) – \(fourth.artist)  [local]"), "\(status)")

        // An http track the cache holds completely is read from the cache; one it does not hold, not at all.
        let cachedTrack = fixtures.fixture(.oggOpus)
        let cached = server.url(for: cachedTrack.fileName).absoluteString
        #expect(try daemon.spool("cache", "prefetch", cached).status == 0)
        let uncached = server.url(for: fixtures.fixture(.wav).fileName).absoluteString
        #expect(try daemon.spool("add", cached, uncached).status == 0)
        let withHTTP = try await daemon.waitForSpool("queue") { $0.contains("3. \(cachedTrack.title)") }
        let lines = withHTTP.split(separator: "\n").map(String.init)
        #expect(lines.count == 4 && lines[2].hasSuffix("[cached]"), "\(withHTTP)")
        #expect(
            lines[3].contains(fixtures.fixture(.wav).fileName), "an uncached track keeps its file name: \(withHTTP)")
    }

    /// Hostile tags (invalid UTF-8, control characters, megabyte strings, thousands of values)
    /// and damaged files read ahead: the daemon lives on, and what the queue lists over D-Bus is
    /// as sane as the playing track's metadata.
    @Test func hostileFilesReadAheadLeaveTheQueueSane() async throws {
        var random = SeededGenerator(seed: HostileTagsTests.seed("queue tags"))
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory(prefix: "spool-queue-tags")
        var files = try HostileTagCorpus.cases(randomCount: 2, &random).prefix(14).map {
            try HostileTagCorpus.write($0, fixtures: fixtures, into: dir.url)
        }
        // Random bytes, a file cut short, an empty one.
        let mp3 = [UInt8](try Data(contentsOf: fixtures.fixture(.mp3CBR).url))
        let damaged = [mp3.map { _ in UInt8(random.next(below: 256)) }, Array(mp3.prefix(mp3.count / 3)), []]
        for (index, bytes) in damaged.enumerated() {
            let file = dir.file("damaged-\(index).mp3")
            try Data(bytes).write(to: file)
            files.append(file)
        }
        let good = fixtures.fixture(.flac)
        files.append(good.url)  // last of the read-ahead window: read after every other
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        #expect(try runSpool(["add"] + files.map(\.path), environment: daemon.bus.environment).status == 0)
        _ = try await daemon.waitForSpool("queue", timeout: 60) { $0.contains("\(files.count). \(good.title)") }
        #expect(daemon.process.isRunning, "\(daemon.process.standardError.suffix(4000))")
        let reply = try await daemon.client.call(
            destination: busName, path: "/org/mpris/MediaPlayer2", interface: "org.spool.Spool1", method: "Queue")
        let entries = reply.first?.arrayValues?.compactMap(\.stringVariantDictValue) ?? []
        #expect(entries.count == files.count)
        let titles = entries.compactMap { $0["xesam:title"]?.stringValue }
        #expect(titles.contains("Esc[2JBell NewDel NelCsi Tab"), "the hostile tags were read, and cleaned: \(titles)")
        for entry in entries {
            let problems = SaneMetadata.problems(entry.filter { !$0.key.hasPrefix("spool:") })
            #expect(problems.isEmpty, "\(entry["xesam:url"]?.stringValue ?? "?"): \(problems)")
        }
    }
}
