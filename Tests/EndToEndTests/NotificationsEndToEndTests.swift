import DBusKit
import Foundation
import Synchronization
import TestSupport
import Testing

/// A desktop's notification server on the daemon's private session bus: it owns
/// `org.freedesktop.Notifications`, records every `Notify` call and answers ids 1, 2, 3…
final class FakeNotificationServer: Sendable {
    /// One `Notify` call.
    struct Call: Sendable {
        let replacesID: UInt32
        let summary: String
        let body: String
        let hints: [String: DBusValue]
        let at: ContinuousClock.Instant
    }

    static let name = "org.freedesktop.Notifications"
    let connection: DBusConnection
    private let recorded = Mutex<[Call]>([])

    init(on bus: PrivateBus) throws {
        connection = try DBusConnection(address: bus.address)
        connection.export(
            path: "/org/freedesktop/Notifications",
            interfaces: [
                DBusInterface(
                    Self.name,
                    methods: [
                        DBusMethod("Notify", in: "susssasa{sv}i", out: "u") { [weak self] arguments in
                            let call = Call(
                                replacesID: arguments[1].uint32Value ?? 0, summary: arguments[3].stringValue ?? "",
                                body: arguments[4].stringValue ?? "", hints: arguments[6].stringVariantDictValue ?? [:],
                                at: .now)
                            let id = self?.recorded.withLock { calls -> UInt32 in
                                calls.append(call)
                                return UInt32(calls.count)
                            }
                            return [.uint32(id ?? 0)]
                        },
                        DBusMethod("GetCapabilities", out: "as") { _ in [.stringArray(["body", "body-images"])] },
                    ])
            ])
        guard try connection.requestName(Self.name) else { throw RigError("could not own \(Self.name)") }
    }

    deinit { connection.close() }

    /// Every call so far.
    var calls: [Call] { recorded.withLock { $0 } }
}

@Suite("Desktop notifications, end to end", .serialized)
struct NotificationsEndToEndTests {
    @Test func eachTrackThatStartsShowsOneNotificationReplacingThePreviousAtMostOneASecond() async throws {
        let fixtures = try Fixtures.shared()
        let covered = try #require(fixtures.withCover.first)
        let others = fixtures.all.filter { !$0.hasCover && $0.format != covered.format }.prefix(3)
        let tracks = [covered] + others
        let bus = try PrivateBus()
        let server = try FakeNotificationServer(on: bus)
        let daemon = try RunningDaemon(bus: bus, extraEnvironment: ["SPOOL_NOTIFY": "true"])
        try await daemon.waitUntilReady()
        try await daemon.mpris("org.spool.Spool1", "Play", [.stringArray(tracks.map(\.url.absoluteString))])

        #expect(await eventually(timeout: 10) { server.calls.count >= 1 })
        let first = try #require(server.calls.first)
        #expect(first.summary == covered.title)
        #expect(first.body == "\(covered.artist) — \(covered.album)")
        #expect(first.replacesID == 0)
        let art = first.hints["image-path"]?.stringValue ?? ""
        #expect(
            art.hasPrefix("file://") && FileManager.default.fileExists(atPath: URL(string: art)?.path ?? ""),
            "\(first.hints)")

        // Paused and played again: the same track is on screen, nothing new.
        _ = try await daemon.playerctl("pause")
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Paused" }
        _ = try await daemon.playerctl("play")
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }

        // Three track changes within a second: one notification a second, the last one naming the last track.
        for _ in 0..<3 { try await daemon.mpris("org.mpris.MediaPlayer2.Player", "Next") }
        _ = try await daemon.waitForPlayerctl(["metadata", "title"]) { $0 == tracks[3].title }
        #expect(
            await eventually(timeout: 5) { server.calls.last?.summary == tracks[3].title },
            "\(server.calls.map(\.summary))")
        let calls = server.calls
        #expect(calls.count <= 3, "at most one a second: \(calls.map(\.summary))")
        #expect(zip(calls, calls.dropFirst()).allSatisfy { $1.at - $0.at >= .milliseconds(950) }, "\(calls.map(\.at))")
        #expect(
            calls.dropFirst().enumerated().allSatisfy { $1.replacesID == UInt32($0 + 1) },
            "each replaces the one before")
        #expect(calls.count >= 2)
        #expect(
            calls.allSatisfy { !$0.summary.contains(".") },
            "a notification names the tag's title, never the file: \(calls.map(\.summary))")
    }
}
