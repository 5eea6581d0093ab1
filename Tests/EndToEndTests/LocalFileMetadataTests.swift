import DBusKit
import Foundation
import TestSupport
import Testing

/// What MPRIS clients show for local files that carry little themselves.
@Suite("Metadata of plain local files", .serialized)
struct LocalFileMetadataTests {
    /// Writes `seconds` of a tone as a constant-bitrate MP3 with no Xing/LAME header and no tags.
    static func plainMP3(_ url: URL, seconds: Int) throws {
        let buffers = seconds * 44_100 / 1024
        let result = try runCommand(
            "gst-launch-1.0",
            [
                "-q", "audiotestsrc", "wave=sine", "num-buffers=\(buffers)", "samplesperbuffer=1024", "!",
                "audio/x-raw,rate=44100,channels=2", "!", "lamemp3enc", "target=bitrate", "bitrate=128", "cbr=true",
                "!",
                "filesink", "location=\(url.path)",
            ])
        guard result.status == 0 else { throw RigError("gst-launch: \(result.stderr)") }
    }

    @Test func aCBRMP3WithoutAXingHeaderHasALengthAndTheFolderArtShows() async throws {
        let folder = try TemporaryDirectory(prefix: "spool-plain-mp3")
        let track = folder.url.appendingPathComponent("plain.mp3")
        try Self.plainMP3(track, seconds: 6)
        let art = folder.url.appendingPathComponent("Cover.JPG")
        try Data([0xFF, 0xD8, 0xFF, 0xE0]).write(to: art)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        #expect(try daemon.spool("play", track.path).status == 0)

        let metadata = try await awaitValue("Metadata with a length and art") {
            try await daemon.property("org.mpris.MediaPlayer2.Player", "Metadata")?.stringVariantDictValue ?? [:]
        } until: {
            $0["mpris:length"] != nil && $0["mpris:artUrl"] != nil
        }
        let length = Double(metadata["mpris:length"]?.int64Value ?? 0) / 1e6
        #expect(abs(length - 6) < 0.1, "mpris:length \(length) s; \(metadata)")
        #expect(metadata["mpris:artUrl"]?.stringValue == art.absoluteString, "\(metadata)")
        // A file with a picture of its own ends up showing it, not the folder's (the fixtures' folder has a cover.png).
        let covered = try #require(try Fixtures.shared().withCover.first { $0.format == .flac })
        let signals = try await daemon.client.subscribe(
            matching:
                "type='signal',path='\(playerPath)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"
        )
        #expect(try daemon.spool("play", covered.url.path).status == 0)
        let collect = Task {
            var shown: [String] = []
            for await signal in signals {
                let changed = signal.arguments.count > 1 ? signal.arguments[1].stringVariantDictValue ?? [:] : [:]
                guard let fields = changed["Metadata"]?.stringVariantDictValue else { continue }
                if let url = fields["mpris:artUrl"]?.stringValue, url != shown.last { shown.append(url) }
                if shown.last?.contains("/spool/art/") == true { break }
            }
            return shown
        }
        let deadline = Task {
            try? await Task.sleep(for: .seconds(5))
            collect.cancel()
        }
        let shown = await collect.value
        deadline.cancel()
        #expect(shown.last?.contains("/spool/art/") == true, "\(shown)")
    }

    @Test func aCBRMP3WithoutAXingHeaderLoadedPausedShowsItsLength() async throws {
        let folder = try TemporaryDirectory(prefix: "spool-plain-mp3")
        let first = folder.url.appendingPathComponent("first.mp3")
        let second = folder.url.appendingPathComponent("second.mp3")
        try Self.plainMP3(first, seconds: 4)
        try Self.plainMP3(second, seconds: 7)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        #expect(try daemon.spool("play", first.path, second.path).status == 0)
        #expect(try daemon.spool("pause").status == 0)
        #expect(try daemon.spool("next").status == 0)  // loads the second track paused: no frame parsed while playing
        let metadata = try await awaitValue("the second track's Metadata with its length") {
            try await daemon.property("org.mpris.MediaPlayer2.Player", "Metadata")?.stringVariantDictValue ?? [:]
        } until: {
            $0["xesam:url"]?.stringValue == second.absoluteString && $0["mpris:length"] != nil
        }
        #expect(metadata["xesam:url"]?.stringValue == second.absoluteString)
        let length = Double(metadata["mpris:length"]?.int64Value ?? 0) / 1e6
        #expect(abs(length - 7) < 0.1, "mpris:length \(length) s; \(metadata)")
        #expect(try await daemon.property("org.mpris.MediaPlayer2.Player", "PlaybackStatus")?.stringValue == "Paused")
    }
}
