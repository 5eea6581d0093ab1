import DBusKit
import Foundation
import Synchronization
import TestSupport
import Testing

/// NetworkManager on a private bus standing in for the system bus: it owns
/// `org.freedesktop.NetworkManager` and has the one property Spool reads, `Metered` (NMMetered:
/// 0 unknown, 1 yes, 2 no, 3 guess-yes, 4 guess-no), announced with PropertiesChanged.
final class FakeNetworkManager: Sendable {
    /// NetworkManager's bus name and interface.
    static let name = "org.freedesktop.NetworkManager"
    /// Its manager object.
    static let path = "/org/freedesktop/NetworkManager"

    let bus: PrivateBus
    let connection: DBusConnection
    private let metered: Mutex<UInt32>

    /// Starts on `bus` (a new private bus by default), owning NetworkManager's name.
    init(metered initial: UInt32, on bus: PrivateBus? = nil) throws {
        self.bus = try bus ?? PrivateBus()
        connection = try DBusConnection(address: self.bus.address)
        metered = Mutex(initial)
        connection.export(
            path: Self.path,
            interfaces: [
                DBusInterface(
                    Self.name,
                    properties: [DBusProperty("Metered", signature: "u") { [weak self] in .uint32(self?.value ?? 0) }])
            ])
        guard try connection.requestName(Self.name) else { throw RigError("could not own \(Self.name)") }
    }

    deinit {
        connection.close()
        bus.stop()
    }

    /// Leaves the bus, as NetworkManager does when it stops (its name loses its owner).
    func quit() { connection.close() }

    /// `Metered` now.
    var value: UInt32 { metered.withLock { $0 } }

    /// Sets `Metered` and announces it, as NetworkManager does when the primary connection changes.
    func setMetered(_ value: UInt32) {
        metered.withLock { $0 = value }
        connection.emitPropertiesChanged(path: Self.path, interface: Self.name, changed: [("Metered", .uint32(value))])
    }
}

/// The `Range` header's `[first, last + 1)`.
private func requestedRange(_ request: ServedRequest) -> Range<Int64>? {
    guard let range = request.range, range.hasPrefix("bytes=") else { return nil }
    let parts = range.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
    guard parts.count == 2, let first = Int64(parts[0]) else { return nil }
    return first..<(Int64(parts[1]).map { $0 + 1 } ?? .max)
}

extension FaultOrigin {
    /// Body bytes sent so far for `path`, in responses that ended.
    func bytesSent(_ path: String) -> Int { requests().filter { $0.path == path }.reduce(0) { $0 + $1.bodyBytesSent } }
}

extension RunningDaemon {
    /// `org.spool.Spool1.Metered`, once it equals `expected` (false after 10 s otherwise).
    func waitForMetered(_ expected: Bool) async throws -> Bool {
        try await eventuallyAsync(timeout: 10) { try await spoolProperty("Metered")?.boolValue == expected }
    }

    /// The play head in seconds, as playerctl reads it.
    func waitForPosition(beyond seconds: Double) async throws {
        _ = try await waitForPlayerctl(["position"], timeout: 30) { (Double($0) ?? 0) > seconds }
    }
}

@Suite("Metered networks, end to end", .serialized)
struct MeteredNetworkTests {
    /// 176,400 bytes per second of WAV.
    static let rate = 44_100 * 4

    /// A queue of three 45 s WAV tracks from the fault origin at 600 kB/s (3.4× their rate),
    /// a 12 s metered window, NetworkManager saying metered, then not, then guess-yes; the
    /// origin's log says what was fetched at each stage.
    @Test func switchingMeteredOnAndOffWhilePlayingChangesWhatIsFetchedAtOnce() async throws {
        let media = try TemporaryDirectory()
        let tracks = try [300, 500, 700].map { try wavTone(seconds: 45, frequency: $0, in: media) }
        let small = try wavTone(seconds: 1, frequency: 900, in: media)
        let origin = try FaultOrigin()
        let paths = ["/a.wav", "/b.wav", "/c.wav"]
        for (path, body) in zip(paths, tracks) {
            origin.serve(
                OriginResource(body, contentType: "audio/x-wav"), at: path,
                faults: OriginFaults(bytesPerSecond: 600_000))
        }
        origin.serve(OriginResource(small, contentType: "audio/x-wav"), at: "/d.wav")
        let length = tracks[0].count
        let networkManager = try FakeNetworkManager(metered: 1)
        let daemon = try RunningDaemon(extraEnvironment: [
            "DBUS_SYSTEM_BUS_ADDRESS": networkManager.bus.address, "SPOOL_READ_AHEAD_METERED_WINDOW": "12s",
        ])
        try await daemon.waitUntilReady()
        #expect(try await daemon.waitForMetered(true), "NetworkManager says metered at start")
        let urls = paths.map { origin.url(for: $0).absoluteString }
        try await daemon.mpris("org.spool.Spool1", "Play", [.array(elementSignature: "s", urls.map(DBusValue.string))])

        // Metered, more than 30 s left: the playing track only a window ahead, nothing of the others.
        try await daemon.waitForPosition(beyond: 2)
        let status = try daemon.spool("status").stdout
        #expect(status.contains("network: metered"), "\(status)")
        let rows = try await daemon.preloads()
        #expect(rows.map(\.stage) == ["waiting", "waiting"] && rows.allSatisfy { $0.cachedBytes <= 0 }, "\(rows)")
        let early = origin.requests()
        // The playing track's lyrics (its sibling .lrc, a 404 here) are part of playing it.
        #expect(
            !early.contains { $0.path != paths[0] && $0.path != "/a.lrc" },
            "requested more than 30 s before the end: \(early)")
        // The window is full within a second at 600 kB/s; the whole file would take 13 s.
        let idle = try await eventuallyAsync(timeout: 5) { origin.requestsBegun == origin.requests().count }
        #expect(
            idle,
            "the playing track's download stops at the window: \(origin.requestsBegun) requests begun, \(origin.requests())"
        )
        let playedAt = Double(try daemon.query("position")) ?? 0
        let firstWindow = origin.bytesSent(paths[0])
        #expect(
            firstWindow < Int((playedAt + 12 + 6) * Double(Self.rate)),
            "a 12 s window: \(firstWindow) bytes at \(playedAt) s")
        #expect(firstWindow < length / 2)
        print(
            "metered at \(playedAt) s: \(firstWindow) of \(length) bytes of the playing track fetched, none of the others"
        )

        // Within the last 30 s: the next track's head (prefix and tail) and nothing more.
        #expect(try await daemon.playerctl("position", "16").status == 0)
        let headFetched = try await eventuallyAsync(timeout: 10) {
            origin.requests().filter { $0.path == paths[1] }.count >= 2
        }
        #expect(headFetched, "\(origin.requests())")
        let nextHead = origin.requests().filter { $0.path == paths[1] }.compactMap(requestedRange)
        #expect(nextHead == [0..<524_288, Int64(length - 65_536)..<Int64(length)], "\(nextHead)")
        #expect(!origin.requests().contains { $0.path == paths[2] }, "the track after the next is not the hand-over's")
        #expect(origin.bytesSent(paths[0]) < length, "still a window")

        // Not metered: the playing track downloads whole and the third track's head comes too.
        networkManager.setMetered(2)
        #expect(try await daemon.waitForMetered(false))
        let whole = try await eventuallyAsync(timeout: 20) {
            origin.bytesSent(paths[0]) >= length && origin.requests().contains { $0.path == paths[2] }
        }
        #expect(whole, "\(origin.requests())")
        #expect(
            origin.bytesSent(paths[0]) <= length + 512 * 1024, "no byte fetched twice but what was in flight at a cut")
        #expect(!(try daemon.spool("status").stdout.contains("network: metered")))

        // The next track, now downloading whole for the hand-over, stops at once when metered again.
        var window: [PreloadRow] = []
        let handedOver = try await eventuallyAsync(timeout: 20) {
            window = try await daemon.preloads()
            return window.first.map { $0.stage == "whole" && $0.cachedBytes > 1_000_000 } == true
        }
        #expect(handedOver, "\(window)")
        networkManager.setMetered(3)  // guess-yes counts as metered
        #expect(try await daemon.waitForMetered(true))
        // A download still running at 600 kB/s would not end in time.
        let settled = try origin.settledRequests(timeout: 5)
        let nextBytes = settled.filter { $0.path == paths[1] }.reduce(0) { $0 + $1.bodyBytesSent }
        #expect(nextBytes < length / 2, "the next track's download stopped: \(nextBytes) of \(length)")
        print(
            "unmetered: \(origin.bytesSent(paths[0])) bytes of the playing track; metered again: the next one's download stopped at \(nextBytes)"
        )
        let position = Double(try daemon.query("position")) ?? 0
        try await daemon.waitForPosition(beyond: position + 1)
        // The engine's own reads of it (its parser prerolls) still get their bytes: a probe or two.
        #expect(origin.bytesSent(paths[1]) - nextBytes <= 64 * 1024, "no read-ahead of it while metered")

        // A prefetch downloads whole files: on a metered network only with --metered-ok.
        let refused = try daemon.spool("cache", "prefetch", origin.url(for: "/d.wav").absoluteString)
        #expect(refused.status == 1 && refused.stderr.contains("--metered-ok"), "\(refused)")
        #expect(!origin.requests().contains { $0.path == "/d.wav" })
        let allowed = try daemon.spool("cache", "prefetch", "--metered-ok", origin.url(for: "/d.wav").absoluteString)
        #expect(allowed.status == 0, "\(allowed)")
        #expect(origin.bytesSent("/d.wav") == small.count)
    }

    /// auto: NetworkManager stopping means not metered; one starting is asked at once.
    @Test func networkManagerStoppingAndStartingIsFollowed() async throws {
        let first = try FakeNetworkManager(metered: 3)
        let daemon = try RunningDaemon(extraEnvironment: ["DBUS_SYSTEM_BUS_ADDRESS": first.bus.address])
        try await daemon.waitUntilReady()
        #expect(try await daemon.waitForMetered(true), "guess-yes counts as metered")
        first.quit()
        #expect(try await daemon.waitForMetered(false), "no NetworkManager: not metered")
        let second = try FakeNetworkManager(metered: 1, on: first.bus)
        #expect(try await daemon.waitForMetered(true), "read again when it starts")
        second.setMetered(4)
        #expect(try await daemon.waitForMetered(false), "guess-no")
    }

    /// `network.metered = yes` needs no NetworkManager; `no` overrides one that says metered.
    @Test func yesAndNoOverrideNetworkManager() async throws {
        let forced = try RunningDaemon(extraEnvironment: ["SPOOL_NETWORK_METERED": "yes"])
        try await forced.waitUntilReady()
        #expect(try await forced.waitForMetered(true))
        #expect(try forced.spool("status").stdout.contains("network: metered"))

        let networkManager = try FakeNetworkManager(metered: 1)
        let never = try RunningDaemon(extraEnvironment: [
            "DBUS_SYSTEM_BUS_ADDRESS": networkManager.bus.address, "SPOOL_NETWORK_METERED": "no",
        ])
        try await never.waitUntilReady()
        let decided = await eventually { never.process.standardError.contains("network.metered = no") }
        #expect(decided, "the setting was applied")
        #expect(try await never.spoolProperty("Metered")?.boolValue == false, "NetworkManager's yes is overridden")
    }
}
