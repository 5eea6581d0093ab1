import Basics
import DBusKit
import FoundationEssentials
import PlayerCore
import Synchronization

/// Pauses and saves when the system is about to sleep (logind's PrepareForSleep
/// on the system bus), and stays paused after wake. While awake it holds a
/// logind "delay" inhibitor, so that the system waits for the pause and the
/// save before it sleeps; it lets go of it once the session is saved and takes
/// a new one after wake. Without a system bus it does nothing; without logind
/// (or without file descriptor passing) it still pauses on the signal, with no
/// inhibitor.
final class SleepWatcher: Sendable {
    private let connection: DBusConnection
    private let listener: Task<Void, Never>

    /// Starts watching, or returns nil when no system bus answers.
    init?(player: Player) async {
        let log = Logger(label: "sleep")
        let address =
            ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"]
            ?? "unix:path=/run/dbus/system_bus_socket"
        guard let connection = try? DBusConnection(address: address),
            let signals = try? await connection.subscribe(
                matching:
                    "type='signal',sender='\(SleepInhibitor.logind)',interface='\(SleepInhibitor.manager)',member='PrepareForSleep'"
            )
        else {
            log.debug("no system bus: not watching for system sleep")
            return nil
        }
        self.connection = connection
        let inhibitor = SleepInhibitor(connection: connection, log: log)
        listener = Task {
            // Subscribed first, so a PrepareForSleep sent while logind answers waits in the stream.
            await inhibitor.take()
            for await message in signals {
                guard let sleeping = message.arguments.first?.boolValue else { continue }
                if sleeping {
                    log.notice("the system is going to sleep: pausing and saving")
                    await player.pause()
                    await player.saveNow()
                    log.debug("saved: the system may sleep")
                    inhibitor.release()  // saved: the system may sleep now
                } else {
                    log.info("the system woke up: staying paused")
                    await inhibitor.take()
                }
            }
        }
    }

    deinit {
        listener.cancel()
        connection.close()
    }
}

/// A logind delay inhibitor for sleep: a file descriptor that delays system
/// sleep (up to logind's InhibitDelayMaxSec) for as long as it is open.
final class SleepInhibitor: Sendable {
    /// logind's bus name, also the sender of PrepareForSleep.
    static let logind = "org.freedesktop.login1"
    /// logind's manager interface.
    static let manager = "org.freedesktop.login1.Manager"
    private static let path = "/org/freedesktop/login1"

    private let connection: DBusConnection
    private let log: Logger
    /// The inhibitor while held.
    private let held = Mutex<DBusFileDescriptor?>(nil)
    /// Set once a failure was logged: a system without logind says so once, not at every wake.
    private let failureLogged = Atomic<Bool>(false)

    init(connection: DBusConnection, log: Logger) {
        self.connection = connection
        self.log = log
    }

    /// Asks logind for a delay inhibitor unless one is held; on failure logs once (at debug) and goes on.
    func take() async {
        guard held.withLock({ $0 == nil }) else { return }
        guard connection.canPassFileDescriptors else {
            return logOnce("the system bus connection cannot pass file descriptors: sleep will not wait for a save")
        }
        do {
            let reply = try await connection.call(
                destination: Self.logind, path: Self.path, interface: Self.manager, method: "Inhibit",
                arguments: [
                    .string("sleep"), .string("Spool"), .string("Pausing playback and saving the session"),
                    .string("delay"),
                ])
            guard let descriptor = reply.first?.fileDescriptorValue, reply.count == 1 else {
                return logOnce("logind's Inhibit answered '\(DBusValue.signature(of: reply))', not 'h'")
            }
            held.withLock { $0 = descriptor }
            log.debug("holding a sleep delay inhibitor")
        } catch {
            logOnce("no sleep inhibitor from logind (\(error)): sleep will not wait for a save")
        }
    }

    /// Closes the inhibitor, if held, so the system can go to sleep.
    func release() {
        guard
            let descriptor = held.withLock({ held in
                defer { held = nil }
                return held
            })
        else { return }
        descriptor.close()
        log.debug("released the sleep delay inhibitor")
    }

    private func logOnce(_ message: String) {
        guard !failureLogged.exchange(true, ordering: .relaxed) else { return }
        log.debug("\(message)")
    }
}
