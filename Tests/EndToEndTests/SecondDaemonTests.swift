import Foundation
import TestSupport
import Testing

@testable import spool

@Suite("A second daemon on the same bus", .serialized)
struct SecondDaemonTests {
    @Test func aSecondDaemonChecksTheNameFirstAndLeavesTheSavedSessionAlone() async throws {
        let track = try Fixtures.shared().fixture(.flac)
        let first = try RunningDaemon()
        try await first.waitUntilReady()
        #expect(try first.spool("play", track.url.path).status == 0)
        _ = try await first.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.3 }
        #expect(try first.spool("pause").status == 0)
        _ = try await first.waitForPlayerctl(["status"]) { $0 == "Paused" }
        let state = first.logs.url.appendingPathComponent("state/spool")
        let before = try snapshot(of: state)
        #expect(!before.isEmpty)

        // The same home and bus, at the default log level: what a user starting it twice sees.
        let second = try RunningDaemon(
            bus: first.bus, home: first.logs.url, standardOptions: false,
            extraEnvironment: ["SPOOL_AUDIO_SINK": "fakesink sync=true"])
        #expect(await second.process.waitForExit(timeout: 10) == 2)
        let lines = second.process.standardError.split(separator: "\n")
        #expect(lines.count == 1, "\(second.process.standardError)")
        #expect(lines.first?.hasPrefix("spool: another Spool daemon already owns \(busName)") == true, "\(lines)")
        #expect(try snapshot(of: state) == before, "the second daemon changed the saved state")
        #expect(first.process.isRunning)
        #expect(try first.spool("status").stdout.hasPrefix("Paused"))
    }

    /// Every file under `folder` with its bytes and modification time.
    private func snapshot(of folder: URL) throws -> [String: String] {
        var files: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            let url = folder.appendingPathComponent(name)
            let modified = try FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date
            files[name] = "\((try? Data(contentsOf: url))?.hashValue ?? 0) \(modified?.timeIntervalSince1970 ?? 0)"
        }
        return files
    }
}

@Suite("Choosing the bus name before anything is restored")
struct BusNameChoiceTests {
    @Test(
        arguments: [
            (false, false, "org.mpris.MediaPlayer2.spool"),
            (false, true, "org.mpris.MediaPlayer2.spool"),
            (true, true, "org.mpris.MediaPlayer2.spool.instance42"),
            (true, false, nil),
        ] as [(Bool, Bool, String?)])
    func theNameFollowsWhetherItIsTakenAndInstance(owned: Bool, instance: Bool, name: String?) {
        let choice = BusNameChoice.choose(owned: owned, instance: instance, pid: 42)
        #expect(choice == (name.map(BusNameChoice.take) ?? .refuse(BusNameChoice.refusal)))
    }
}
