import DBusKit
import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

@testable import MPRIS

@Suite("What is looked up off the D-Bus thread: lengths and remote playlists")
struct LookupTests {
    /// 100 frames of MPEG-1 Layer III at 128 kbit/s (417 bytes each), no Xing header.
    static let constantBitrateMP3: [UInt8] = Array(
        (0..<100).map { _ in [0xFF, 0xFB, 0x90, 0x00] + [UInt8](repeating: 0, count: 413) }.joined())

    @Test func aLocalMP3WithoutALengthGetsOneFromItsBitrate() async throws {
        let temporary = try TemporaryLibrary()
        let file = temporary.folder.appendingPathComponent("cbr.mp3")
        try Data(Self.constantBitrateMP3).write(to: file)
        let rig = await ServiceRig(engine: FakeEngine(reacting: true, trackLength: nil))
        let mark = rig.bus.mark
        _ = try await rig.bus.call(ServiceRig.player, "OpenUri", [.string(file.path)])
        try await rig.waitForLength(from: mark)
        let metadata = try rig.bus.get(ServiceRig.player, "Metadata").stringVariantDictValue
        #expect(metadata?["mpris:length"] == .int64(41_700 * 8 * 1_000_000 / 128_000))
        #expect(
            await rig.player.state.nowPlaying?.duration == .microseconds(41_700 * 8 * 1_000_000 / 128_000),
            "the player's track carries it: every client reads the same")
    }

    @Test func aRemotePlaylistThatCannotBeFetchedShowsAsLastErrorAfterTheCall() async throws {
        let rig = await ServiceRig(status: NoCache())
        let mark = rig.bus.mark
        _ = try await rig.bus.call(ServiceRig.player, "OpenUri", [.string("http://127.0.0.1:1/lists/evening.m3u")])
        let error = await rig.bus.changes(of: MPRISService.spoolInterface, from: mark, holding: "LastError")
        let message = try #require(error?["LastError"]?.stringValue)
        #expect(message.hasPrefix("evening.m3u: "), "\(message)")
        #expect(try rig.bus.get(MPRISService.spoolInterface, "LastError") == .string(message))
        #expect(rig.engine.loads.isEmpty)
        #expect(await rig.player.state.queue.isEmpty)
    }
}
