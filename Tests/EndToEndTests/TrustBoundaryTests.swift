import DBusKit
import Foundation
import Glibc
import TestSupport
import Testing

/// What came from the network leads only to the network: a list fetched over http names only
/// http(s) addresses, and its other entries play; only regular files are played, and a FIFO is
/// never waited on; what comes from outside is read up to a bound. Driven through the real
/// daemon and `spool play`, as a user meets it.
@Suite("Trust boundaries, end to end", .serialized)
struct TrustBoundaryTests {
    static let networkReason = "a list from the network may name only http(s) addresses"

    /// The daemon's queue, as the URLs of its entries.
    static func queue(of daemon: RunningDaemon) async throws -> [String] {
        let reply = try await daemon.mpris("org.spool.Spool1", "Queue")
        return (reply.first?.arrayValues ?? []).compactMap { $0.stringVariantDictValue?["xesam:url"]?.stringValue }
    }

    /// A local track whose name appears nowhere else, so that any mention of it in the daemon's
    /// log is about it.
    static func uniqueLocalTrack(in folder: TemporaryDirectory) throws -> URL {
        let track = try Fixtures.shared().fixture(.mp3CBR)
        let file = folder.file("spool-secret-\(UUID().uuidString).mp3")
        try FileManager.default.copyItem(at: track.url, to: file)
        return file
    }

    @Test func aRemoteListOfAnyKindQueuesOnlyItsNetworkEntries() async throws {
        let origin = try FaultOrigin()
        let track = try Fixtures.shared().fixture(.mp3CBR)
        origin.serve(OriginResource(try Data(contentsOf: track.url), contentType: "audio/mpeg"), at: "/good.mp3")
        let good = origin.url(for: "/good.mp3").absoluteString
        let folder = try TemporaryDirectory(prefix: "spool-trust")
        let secret = try Self.uniqueLocalTrack(in: folder)
        let lists: [(name: String, text: String)] = [
            ("list.m3u", "#EXTM3U\n\(secret.path)\n\(good)\n"),
            ("list.pls", "[playlist]\nFile1=\(secret.absoluteString)\nFile2=\(good)\nNumberOfEntries=2\n"),
            (
                "list.xspf",
                """
                <playlist version="1" xmlns="http://xspf.org/ns/0/"><trackList>
                <track><location>\(secret.absoluteString)</location></track>
                <track><location>\(good)</location></track></trackList></playlist>
                """
            ),
            (
                "list.asx",
                "<asx version=\"3.0\"><entry><ref href=\"\(secret.path)\"/></entry><entry><ref href=\"\(good)\"/></entry></asx>"
            ),
        ]
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        for (name, text) in lists {
            origin.serve(OriginResource(Data(text.utf8)), at: "/" + name)
            let warning = "\(name): 1 entry dropped: \(secret.absoluteString) (\(Self.networkReason))"
            let result = try daemon.spool("play", origin.url(for: "/" + name).absoluteString)
            #expect(result.status == 0 && result.stderr == "spool: \(warning)\n", "\(name): \(result)")
            #expect(try await Self.queue(of: daemon) == [good], "\(name)")
            #expect(try await daemon.property("org.spool.Spool1", "LastError")?.stringValue == warning, "\(name)")
        }

        // A redirect from the origin to a local list fails; nothing local is read.
        let local = folder.file("local.m3u")
        try Data("#EXTM3U\n\(secret.path)\n".utf8).write(to: local)
        origin.redirect("/redirected.m3u", to: local.absoluteString)
        let redirected = try daemon.spool("play", origin.url(for: "/redirected.m3u").absoluteString)
        #expect(redirected.status == 2, "\(redirected)")
        #expect(redirected.stderr.hasPrefix("spool: cannot play redirected.m3u: "), "\(redirected)")
        #expect(redirected.stderr.split(separator: "\n").count == 1, "\(redirected)")
        #expect(try await Self.queue(of: daemon) == [good])

        // The local track is named only where it was dropped: never opened, never played.
        let mentions = daemon.process.standardError.split(separator: "\n").filter {
            $0.contains(secret.lastPathComponent)
        }
        #expect(mentions.count >= lists.count, "\(daemon.process.standardError)")
        #expect(mentions.allSatisfy { $0.contains("dropped") }, "\(mentions)")
    }

    @Test func aRemoteListIsReadUpToItsBounds() async throws {
        let origin = try FaultOrigin()
        let track = try Fixtures.shared().fixture(.mp3CBR)
        origin.serve(OriginResource(try Data(contentsOf: track.url), contentType: "audio/mpeg"), at: "/good.mp3")
        let huge = "#EXTM3U\n" + String(repeating: "# padding to pass the limit of four mebibytes\n", count: 100_000)
        #expect(huge.utf8.count > 4 << 20)
        origin.serve(OriginResource(Data(huge.utf8)), at: "/huge.m3u")
        let entries = ["good.mp3"] + (1...10_004).map { "missing/\($0).mp3" }
        origin.serve(OriginResource(Data(("#EXTM3U\n" + entries.joined(separator: "\n")).utf8)), at: "/long.m3u")
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()

        let tooLarge = try daemon.spool("play", origin.url(for: "/huge.m3u").absoluteString)
        #expect(tooLarge.status == 2 && tooLarge.stderr.hasPrefix("spool: cannot play huge.m3u: "), "\(tooLarge)")
        #expect(tooLarge.stderr.contains("larger than \(4 << 20) bytes"), "\(tooLarge)")
        #expect(tooLarge.stderr.split(separator: "\n").count == 1, "\(tooLarge)")

        let long = try daemon.spool("play", origin.url(for: "/long.m3u").absoluteString)
        let warning = "long.m3u: only the first 10000 of 10005 entries queued (a list holds at most 10000)"
        #expect(long.status == 0 && long.stderr == "spool: \(warning)\n", "\(long)")
        let queue = try await Self.queue(of: daemon)
        #expect(queue.count == 10_000 && queue.first == origin.url(for: "/good.mp3").absoluteString)
        #expect(queue.last?.hasSuffix("/missing/9999.mp3") == true, "\(queue.last ?? "")")
    }

    @Test func anHLSPlaylistNamesOnlyTheNetworkAndItsKeyIsSixteenBytes() async throws {
        let origin = try FaultOrigin()
        let type = "application/vnd.apple.mpegurl"
        func media(_ lines: String) -> Data {
            Data("#EXTM3U\n#EXT-X-TARGETDURATION:4\n\(lines)#EXTINF:4,\nseg.ts\n#EXT-X-ENDLIST\n".utf8)
        }
        origin.serve(
            OriginResource(media("#EXTINF:4,\nfile:///etc/hostname\n"), contentType: type), at: "/segment.m3u8")
        origin.serve(
            OriginResource(media("#EXT-X-KEY:METHOD=AES-128,URI=\"file:///etc/hostname\"\n"), contentType: type),
            at: "/key.m3u8")
        origin.serve(
            OriginResource(media("#EXT-X-KEY:METHOD=AES-128,URI=\"k.key\"\n"), contentType: type), at: "/long-key.m3u8")
        origin.serve(OriginResource(Data(repeating: 7, count: 17)), at: "/k.key")
        origin.serve(
            OriginResource(media("#EXT-X-KEY:METHOD=AES-128,URI=\"big.key\"\n"), contentType: type), at: "/big-key.m3u8"
        )
        origin.serve(OriginResource(Data(repeating: 7, count: 64 << 10)), at: "/big.key")
        origin.serve(OriginResource(Data(repeating: 0, count: 188 * 8), contentType: "video/mp2t"), at: "/seg.ts")
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let cases = [
            ("segment.m3u8", "line 4: file:///etc/hostname is refused (\(Self.networkReason))"),
            ("key.m3u8", "line 3: file:///etc/hostname is refused (\(Self.networkReason))"),
            ("long-key.m3u8", "the HLS key k.key is 17 bytes, not 16"),
            ("big-key.m3u8", "larger than 1024 bytes"),
        ]
        for (name, reason) in cases {
            let result = try daemon.spool("play", origin.url(for: "/" + name).absoluteString)
            #expect(result.status == 2, "\(name): \(result)")
            #expect(
                result.stderr.hasPrefix("spool: cannot play ") && result.stderr.contains(reason), "\(name): \(result)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(name): \(result)")
        }
    }

    @Test func aFIFOASocketOrADeviceIsRefusedAtOnceAndALocalListGoesOnPastThem() async throws {
        let folder = try TemporaryDirectory(prefix: "spool-trust")
        let fifo = folder.file("pipe.mp3")
        #expect(mkfifo(fifo.path, 0o600) == 0)  // no writer, ever: an open that waits never returns
        let socketFile = folder.file("socket.mp3")
        let listener = try listeningUnixSocket(at: socketFile.path)
        defer { close(listener) }
        let device = folder.file("zero.mp3")
        #expect(symlink("/dev/zero", device.path) == 0)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()

        for file in [fifo, socketFile, device] {
            let result = try daemon.spool("play", file.path)
            #expect(result.status == 2 && result.stderr == "spool: \(file.path): not a regular file\n", "\(result)")
            // Over D-Bus, past the command's own check, the daemon refuses it the same way.
            await #expect(throws: DBusError.self) {
                try await daemon.mpris("org.spool.Spool1", "Play", [.stringArray([file.path])])
            }
        }

        let track = try Fixtures.shared().fixture(.mp3CBR)
        let list = folder.file("local.m3u")
        try Data("#EXTM3U\n\(fifo.path)\n\(socketFile.path)\n\(device.path)\n\(track.url.path)\n".utf8).write(to: list)
        let stream = try await daemon.client.subscribe(
            matching:
                "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='/org/mpris/MediaPlayer2'"
        )
        let log = SignalLog()
        let listener2 = Task { for await message in stream { await log.append(message) } }
        defer { listener2.cancel() }
        #expect(try daemon.spool("play", "--no-wait", list.path).status == 0)
        let reached = await log.waitFor {
            $0.contains {
                changedProperties($0)["Metadata"]?.stringVariantDictValue?["xesam:url"]?.stringValue
                    == track.url.absoluteString
            }
        }
        #expect(reached, "\(daemon.process.standardError)")
        let refusals = daemon.process.standardError.split(separator: "\n").filter { $0.contains("not a regular file") }
        for file in [fifo, socketFile, device] {
            #expect(refusals.contains { $0.contains(file.lastPathComponent) }, "\(file.lastPathComponent): \(refusals)")
        }
    }
}
