import FoundationEssentials
import Glibc
import Synchronization

/// How important a log line is; lines below the configured level are dropped
/// before their message is even built.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case trace, debug, info, notice, warning, error

    /// The level's name as written in logs and accepted by `SPOOL_LOG`.
    public var name: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        }
    }

    /// Parses a level name (`"debug"`, `"WARNING"`, `"warn"`); nil when unknown.
    public init?(name: String) {
        let lowered = name.lowercased()
        if lowered == "warn" {
            self = .warning
            return
        }
        guard let level = LogLevel.allCases.first(where: { $0.name == lowered }) else { return nil }
        self = level
    }

    /// Orders levels from least to most severe.
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The syslog priority journald files a line of this level under (`journalctl -p`):
    /// 7 debug (trace too: syslog has nothing finer), 6 info, 5 notice, 4 warning, 3 error.
    public var syslogPriority: Int {
        switch self {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        }
    }
}

/// How a log line is spelled for where stderr goes.
public enum LogLineFormat: Sendable, Equatable {
    /// `WARNING fetcher: message`, for a terminal or a file.
    case plain
    /// `<4>fetcher: message`: journald reads the priority from the sd-daemon(3) prefix and
    /// adds its own timestamp, so the level word would only repeat it.
    case journal

    /// `journal` when systemd connected stderr to the journal (it sets `JOURNAL_STREAM`).
    public init(environment: [String: String]) {
        self = environment["JOURNAL_STREAM"].map { !$0.isEmpty } == true ? .journal : .plain
    }

    /// One whole line, newline included; line breaks in `message` become spaces so an
    /// event is never split across lines (or journal entries).
    public func line(_ level: LogLevel, label: String, message: String) -> String {
        // Byte-wise so that a "\r\n" (one Character in Swift) loses its "\n" too.
        let text = String(decoding: message.utf8.map { $0 == 0x0A ? 0x20 : $0 }, as: UTF8.self)
        switch self {
        case .plain: return "\(level.name.uppercased()) \(label): \(text)\n"
        case .journal: return "<\(level.syslogPriority)>\(label): \(text)\n"
        }
    }
}

/// A small logger in the shape of swift-log: a value type with a label, whose
/// messages are autoclosures so a disabled level costs nothing. Lines go to
/// stderr, one per event, without timestamps: as `LEVEL label: message`, or
/// under systemd as `<priority>label: message` (``LogLineFormat``), since journald
/// adds its own timestamps and a terminal user reads them as they come.
public struct Logger: Sendable {
    /// The subsystem this logger speaks for, e.g. `"fetcher"`.
    public let label: String

    /// Creates a logger for one subsystem.
    public init(label: String) {
        self.label = label
    }

    /// The level below which lines are dropped, for the whole process.
    /// Starts from `SPOOL_LOG` (a level name), else `info`.
    public static var minimumLevel: LogLevel {
        get { LogLevel(rawValue: threshold.load(ordering: .relaxed)) ?? .info }
        set { threshold.store(newValue.rawValue, ordering: .relaxed) }
    }

    private static let threshold = Atomic<Int>(
        LogLevel(name: ProcessInfo.processInfo.environment["SPOOL_LOG"] ?? "")?.rawValue
            ?? LogLevel.info.rawValue)

    /// How lines are spelled, fixed at start from the environment.
    public static let format = LogLineFormat(environment: ProcessInfo.processInfo.environment)

    /// Whether each line starts with the seconds since the process started (`SPOOL_LOG_TIME=1`):
    /// for following a timeline in a test's or a benchmark's log. Never under the journal, which
    /// stamps lines itself and reads a priority only at a line's start.
    public static let timestamps =
        ProcessInfo.processInfo.environment["SPOOL_LOG_TIME"] == "1" && format == .plain

    private static let started = ContinuousClock.now

    /// Serialises whole lines so that lines from different threads never interleave.
    private static let output = Mutex<Void>(())

    /// Whether a line at `level` would be written.
    public func isEnabled(_ level: LogLevel) -> Bool { level >= Logger.minimumLevel }

    /// Writes one line at `level` when that level is enabled.
    public func log(_ level: LogLevel, _ message: @autoclosure () -> String) {
        guard isEnabled(level) else { return }
        var line = Logger.format.line(level, label: label, message: message())
        if Logger.timestamps {
            // Microseconds: a start-path timeline is read beside GStreamer's own (nanosecond) stamps.
            let micros = Int((ContinuousClock.now - Logger.started) / .microseconds(1))
            let fraction = String(micros % 1_000_000)
            line = "\(micros / 1_000_000).\(String(repeating: "0", count: 6 - fraction.count))\(fraction) " + line
        }
        Logger.output.withLock { _ in writeAll(line, to: STDERR_FILENO) }
    }

    /// Writes a trace line: per-buffer and per-callback detail.
    public func trace(_ message: @autoclosure () -> String) { log(.trace, message()) }
    /// Writes a debug line: decisions a developer wants to follow.
    public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
    /// Writes an info line: one per user-visible event.
    public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
    /// Writes a notice line: a normal but significant condition.
    public func notice(_ message: @autoclosure () -> String) { log(.notice, message()) }
    /// Writes a warning line: something went wrong and was recovered from.
    public func warning(_ message: @autoclosure () -> String) { log(.warning, message()) }
    /// Writes an error line: something failed and the user will notice.
    public func error(_ message: @autoclosure () -> String) { log(.error, message()) }
}

/// A URL as it may appear in a log: scheme, host, port and path only. Query
/// strings (signed-URL tokens), fragments and credentials are dropped.
public func loggable(_ url: URL) -> String {
    guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
        return "<unparsable URL>"
    }
    parts.user = nil
    parts.password = nil
    parts.query = nil
    parts.fragment = nil
    return parts.string ?? "<unprintable URL>"
}
