import DBusKit
import Foundation
import TestSupport
import Testing

@Suite("Decoders a daemon maps, end to end", .serialized)
struct DecoderMemoryEndToEndTests {
    /// No format's decoder, parser, demuxer or type finder, nor the decoder loaded ahead, maps
    /// FFmpeg's libavcodec (about 30 MiB resident): every fixture format played in one daemon.
    @Test func noFormatMapsLibavcodec() async throws {
        let fixtures = try Fixtures.shared()
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let remote = DBusMPRISRemote(connection: daemon.client, busName: busName)
        let pid = try #require(daemon.process.programPID)
        // The fixtures last a few seconds: looped, none ends (and stops) before the poll sees it play.
        _ = try await daemon.playerctl("loop", "Track")
        for format in FixtureFormat.allCases {
            try await remote.openURI(fixtures.fixture(format).url.absoluteString)
            _ = try await daemon.waitForPlayerctl(["metadata", "xesam:url"]) {
                $0 == fixtures.fixture(format).url.absoluteString
            }
            _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.3 }
            // Read to the end: /proc files report a size of 0.
            let handle = try #require(FileHandle(forReadingAtPath: "/proc/\(pid)/maps"))
            let maps = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
            handle.closeFile()
            let (own, mapped) = (maps.contains("libgstplayback"), maps.contains("libavcodec"))
            #expect(own, "the daemon's own maps: \(maps.prefix(300))")
            #expect(!mapped, "\(format) mapped libavcodec")
        }
    }
}
