import DBusKit
import FoundationEssentials
import PlayerCore
import SpoolLog

/// Pauses and saves when the system is about to sleep (logind's PrepareForSleep
/// on the system bus), and stays paused after wake. Without a system bus it does
/// nothing.
final class SleepWatcher: Sendable {
    private let connection: DBusConnection
    private let listener: Task<Void, Never>

    /// Starts watching, or returns nil when no system bus answers.
    init?(player: Player) async {
        let log = Logger(label: "sleep")
        let address = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"]
            ?? "unix:path=/run/dbus/system_bus_socket"
        guard let connection = try? DBusConnection(address: address),
            let signals = try? await connection.subscribe(
                matching: "type='signal',sender='org.freedesktop.login1',interface='org.freedesktop.login1.Manager',member='PrepareForSleep'")
        else {
            log.debug("no system bus: not watching for system sleep")
            return nil
        }
        self.connection = connection
        listener = Task {
            for await message in signals {
                guard message.arguments.first?.boolValue == true else { continue }  // false: waking up; stay paused
                log.notice("the system is going to sleep: pausing and saving")
                await player.pause()
                await player.saveNow()
            }
        }
    }

    deinit {
        listener.cancel()
        connection.close()
    }
}
