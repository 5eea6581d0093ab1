import DBusKit
import Foundation
import Synchronization
import TestSupport
import Testing

/// What the fake logind saw, in order.
enum LogindEvent: Equatable, Sendable {
    /// Inhibit call number `n` (from 1), with its four arguments; refused ones too.
    case inhibited(Int, [String])
    /// The daemon closed inhibitor `n` (its pipe ended).
    case released(Int)
}

/// logind on a private bus standing in for the system bus: it owns
/// `org.freedesktop.login1`, emits PrepareForSleep, and answers
/// `Manager.Inhibit` with the write end of a pipe whose read end it watches,
/// so that it sees when the daemon lets go of the inhibitor (the pipe ends).
final class FakeLogind: Sendable {
    static let path = "/org/freedesktop/login1"
    static let manager = "org.freedesktop.login1.Manager"

    let bus: PrivateBus
    let connection: DBusConnection
    private let state: InhibitorDesk
    /// What it saw, in order.
    var log: LogindLog { state.log }
    /// Sets what runs on the watching thread the moment inhibitor `n` is released, before that is logged.
    func onRelease(_ action: @escaping @Sendable (Int) -> Void) { state.onRelease.withLock { $0 = action } }

    /// - Parameter refusing: answer Inhibit with AccessDenied (as logind does when policy forbids it).
    init(refusing: Bool = false) throws {
        bus = try PrivateBus()
        connection = try DBusConnection(address: bus.address)
        let state = InhibitorDesk(refusing: refusing)
        self.state = state
        connection.export(
            path: Self.path,
            interfaces: [
                DBusInterface(
                    Self.manager,
                    methods: [DBusMethod("Inhibit", in: "ssss", out: "h") { try await state.inhibit($0) }])
            ])
        guard try connection.requestName("org.freedesktop.login1") else { throw RigError("could not own login1") }
    }

    deinit {
        connection.close()
        bus.stop()
    }

    /// Emits PrepareForSleep(`sleeping`).
    func prepareForSleep(_ sleeping: Bool) {
        connection.emitSignal(
            path: Self.path, interface: Self.manager, name: "PrepareForSleep", arguments: [.boolean(sleeping)])
    }
}

/// The fake logind's Inhibit: hands out pipe write ends and watches the read ends.
final class InhibitorDesk: Sendable {
    let log = LogindLog()
    let onRelease = Mutex<(@Sendable (Int) -> Void)?>(nil)
    private let refusing: Bool
    private let calls = Atomic<Int>(0)

    init(refusing: Bool) { self.refusing = refusing }

    func inhibit(_ arguments: [DBusValue]) async throws -> [DBusValue] {
        let number = calls.add(1, ordering: .relaxed).newValue
        await log.append(.inhibited(number, arguments.compactMap(\.stringValue)))
        if refusing { throw DBusError.accessDenied("Permission denied") }
        let pipe = try TestPipe()
        Thread { [self] in
            guard pipe.waitForEnd(timeout: 120) else { return }
            onRelease.withLock { $0 }?(number)
            Task { await log.append(.released(number)) }
        }.start()
        // Our own copy closes once the reply is sent: then only the daemon's keeps the pipe open.
        return [.unixFD(DBusFileDescriptor(taking: pipe.takeWriteEnd()))]
    }
}

/// The fake logind's events, awaitable.
typealias LogindLog = AwaitableLog<LogindEvent>

extension RunningDaemon {
    /// playerctl's answer for `arguments`, trimmed.
    func query(_ arguments: String...) throws -> String {
        try runCommand("playerctl", ["-p", "spool"] + arguments, environment: bus.environment, timeout: 20)
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

@Suite("System sleep", .serialized)
struct SystemSleepTests {
    @Test func sleepWaitsForTheSaveUnderADelayInhibitorWhichIsTakenAgainAfterWake() async throws {
        let media = try TemporaryDirectory()
        let long = try longTone(seconds: 30, in: media)
        let logind = try FakeLogind()
        let home = try TemporaryDirectory(prefix: "spool-home")
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": logind.bus.address]
        let daemon = try RunningDaemon(home: home.url, extraEnvironment: environment)
        try await daemon.waitUntilReady()

        // Taken at start-up, as a sleep delay lock, and held.
        #expect(await logind.log.waitFor { $0.contains { if case .inhibited(1, _) = $0 { true } else { false } } })
        let first = await logind.log.items.first
        guard case .inhibited(1, let arguments) = first, arguments.count == 4 else {
            Issue.record("first event \(String(describing: first))")
            return
        }
        #expect(arguments[0] == "sleep" && arguments[1] == "Spool" && arguments[3] == "delay", "\(arguments)")

        #expect(try await daemon.playerctl("open", long.absoluteString).status == 0)
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 1.5 }
        #expect(await logind.log.items == [first], "the inhibitor is still held when the system prepares to sleep")

        // Kill the daemon the instant it lets go: what it had not saved by then is lost.
        let pid = try #require(daemon.process.programPID)
        logind.onRelease { number in if number == 1 { kill(pid, SIGKILL) } }
        let beforeSleep = Double(try daemon.query("position")) ?? -1
        logind.prepareForSleep(true)
        #expect(await logind.log.waitFor { $0.contains(.released(1)) })
        #expect(await daemon.process.waitForExit(timeout: 10) != nil)

        // It had paused and saved before releasing: the restored position is where it paused
        // (the periodic save, every few seconds while playing, would be behind `beforeSleep`).
        let again = try RunningDaemon(bus: daemon.bus, home: home.url, extraEnvironment: environment)
        try await again.waitUntilReady()
        let restored = Double(try again.query("position")) ?? -2
        #expect(
            restored >= beforeSleep && restored < beforeSleep + 1, "before sleep \(beforeSleep), restored \(restored)")
        #expect(try again.query("status") == "Paused")

        // The restarted daemon takes one at start, lets go at sleep, stays paused, and takes a new one after wake.
        #expect(await logind.log.waitFor { $0.count == 3 })
        logind.prepareForSleep(true)
        #expect(await logind.log.waitFor { $0.contains(.released(2)) })
        logind.prepareForSleep(false)
        #expect(await logind.log.waitFor { $0.count == 5 })
        let events = await logind.log.items
        #expect(events.count == 5)
        if events.count == 5 {
            #expect(events[1] == .released(1))
            #expect(events[2].isInhibit(2) && events[3] == .released(2) && events[4].isInhibit(3), "\(events)")
        }
        #expect(try again.query("status") == "Paused")
        // Inhibitor 3 stays held while the daemon runs.
        #expect(await !logind.log.waitFor(timeout: .milliseconds(300)) { $0.contains(.released(3)) })
    }

    @Test func withoutAnInhibitorSleepStillPausesAndSavesAndWakingStaysPaused() async throws {
        let media = try TemporaryDirectory()
        let long = try longTone(seconds: 20, in: media)
        let logind = try FakeLogind(refusing: true)
        let home = try TemporaryDirectory(prefix: "spool-home")
        let daemon = try RunningDaemon(
            home: home.url, extraEnvironment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.bus.address])
        try await daemon.waitUntilReady()
        #expect(try await daemon.playerctl("open", long.absoluteString).status == 0)
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 1.0 }

        logind.prepareForSleep(true)
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Paused" }
        logind.prepareForSleep(false)
        // It asks again after wake, is refused again, and says so only once.
        #expect(await logind.log.waitFor { $0.count == 2 })
        _ = try await daemon.mpris("org.freedesktop.DBus.Peer", "Ping")
        #expect(try daemon.query("status") == "Paused")
        let refusals = daemon.process.standardError.components(separatedBy: "no sleep inhibitor from logind").count - 1
        #expect(refusals == 1, "logged \(refusals) times")

        // The position was saved (the daemon says so once the save is on disk, which Paused
        // showing does not wait for): a restart, even after kill -9, resumes there.
        #expect(await eventually { daemon.process.standardError.contains("saved: the system may sleep") })
        let pausedAt = Double(try daemon.query("position")) ?? -1
        daemon.process.send(SIGKILL)
        _ = await daemon.process.waitForExit(timeout: 10)
        let again = try RunningDaemon(bus: daemon.bus, home: home.url)
        try await again.waitUntilReady()
        let restored = Double(try again.query("position")) ?? -2
        #expect(abs(restored - pausedAt) < 0.1, "paused at \(pausedAt), restored \(restored)")
    }
}

extension LogindEvent {
    /// Whether this is Inhibit call `number`.
    func isInhibit(_ number: Int) -> Bool {
        if case .inhibited(number, _) = self { true } else { false }
    }
}
