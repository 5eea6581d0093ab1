import DBusKit
import Foundation
import Testing
import TestSupport

@Suite("System sleep", .serialized)
struct SystemSleepTests {
    @Test func prepareForSleepPausesAndSavesAndWakingStaysPaused() async throws {
        let media = try TemporaryDirectory()
        let long = try longTone(seconds: 20, in: media)
        // A private bus stands in for the system bus, with the test playing logind.
        let systemBus = try PrivateBus()
        let logind = try DBusConnection(address: systemBus.address)
        defer { logind.close() }
        #expect(try logind.requestName("org.freedesktop.login1"))
        let home = try TemporaryDirectory(prefix: "spool-home")
        let daemon = try RunningDaemon(home: home.url, extraEnvironment: ["DBUS_SYSTEM_BUS_ADDRESS": systemBus.address])
        try await daemon.waitUntilReady()
        #expect(try daemon.playerctl("open", long.absoluteString).status == 0)
        _ = try daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 1.0 }

        logind.emitSignal(
            path: "/org/freedesktop/login1", interface: "org.freedesktop.login1.Manager", name: "PrepareForSleep",
            arguments: [.boolean(true)])
        _ = try daemon.waitForPlayerctl(["status"]) { $0 == "Paused" }
        logind.emitSignal(
            path: "/org/freedesktop/login1", interface: "org.freedesktop.login1.Manager", name: "PrepareForSleep",
            arguments: [.boolean(false)])
        _ = try await daemon.mpris("org.freedesktop.DBus.Peer", "Ping")
        #expect(try daemon.playerctl("status").stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "Paused")

        // The position was saved: a restart (even after kill -9) resumes there.
        let pausedAt = Double(try daemon.playerctl("position").stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        daemon.process.send(SIGKILL)
        _ = daemon.process.waitForExit(timeout: 10)
        let again = try RunningDaemon(bus: daemon.bus, home: home.url)
        try await again.waitUntilReady()
        let restored = Double(try again.playerctl("position").stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -2
        #expect(abs(restored - pausedAt) < 0.1, "paused at \(pausedAt), restored \(restored)")
    }
}
