import Foundation
import Synchronization

/// What /proc says about a process at one instant.
struct ProcessFigures: Sendable {
    /// VmRSS in KiB.
    var rssKiB: Int
    /// The anonymous part of it (the heap, stacks): what a leak grows. The rest is mostly
    /// file-backed pages of libraries and plugins, touched as new code paths run.
    var anonKiB: Int
    /// Entries in /proc/PID/fd.
    var fds: Int
    /// Threads (/proc/PID/status).
    var threads: Int
    /// utime + stime in clock ticks.
    var cpuTicks: Int

    /// Reads the figures of `pid`; nil when the process is gone.
    static func read(_ pid: Int32) -> ProcessFigures? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
        else { return nil }
        func field(_ name: String) -> Int? {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .flatMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first }
                .flatMap { Int($0) }
        }
        // The command name in field 2 may hold spaces and parentheses: count from the last ')'.
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let rest = stat[stat.index(after: close)...].split(separator: " ")
        guard rest.count > 12, let user = Int(rest[11]), let system = Int(rest[12]),
            let rss = field("VmRSS"), let anon = field("RssAnon"), let threads = field("Threads")
        else { return nil }
        return ProcessFigures(rssKiB: rss, anonKiB: anon, fds: fds.count, threads: threads, cpuTicks: user + system)
    }

    /// Clock ticks per second of utime/stime.
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// One second of the soak.
struct Sample: Sendable {
    /// Seconds since the start.
    var at: Double
    /// The daemon's process id (it changes when the daemon had to be started again).
    var pid: Int32
    var figures: ProcessFigures
    /// PlaybackStatus, "" when the read failed.
    var status: String
    /// Position in microseconds.
    var position: Int64
    /// The current track id.
    var track: String
    /// Whether it was Playing and the position had moved forward since the sample before
    /// (on the same track, or above 0 on a new one).
    var advancing: Bool

    static let csvHeader = "seconds,pid,rss_kib,rss_anon_kib,fds,threads,cpu_ticks,status,position_us,advancing,track"
    var csv: String {
        "\(String(format: "%.2f", at)),\(pid),\(figures.rssKiB),\(figures.anonKiB),\(figures.fds),\(figures.threads),\(figures.cpuTicks),"
            + "\(status),\(position),\(advancing ? 1 : 0),\(track)"
    }
}

/// The samples so far, appended once a second and shared with the progress lines and the summary.
final class SampleLog: Sendable {
    private let samples = Mutex<[Sample]>([])
    private let csv: FileHandle?

    /// Writes every sample to `csvPath` as well, when given.
    init(csvPath: String?) {
        if let csvPath {
            _ = FileManager.default.createFile(atPath: csvPath, contents: Data((Sample.csvHeader + "\n").utf8))
            csv = FileHandle(forWritingAtPath: csvPath)
            _ = try? csv?.seekToEnd()
        } else {
            csv = nil
        }
    }

    func append(_ sample: Sample) {
        samples.withLock { $0.append(sample) }
        try? csv?.write(contentsOf: Data((sample.csv + "\n").utf8))
    }

    var all: [Sample] { samples.withLock { $0 } }
    var last: Sample? { samples.withLock { $0.last } }
}

/// A least-squares line through (seconds, value) points.
struct Trend {
    /// Units per hour.
    let perHour: Double
    /// Two standard errors of `perHour` (residuals taken as independent, which they are not
    /// quite: read it as a lower bound of the uncertainty).
    let twoSE: Double

    init?(_ points: [(Double, Double)]) {
        let n = Double(points.count)
        guard points.count >= 3 else { return nil }
        let meanX = points.reduce(0) { $0 + $1.0 } / n
        let meanY = points.reduce(0) { $0 + $1.1 } / n
        let sxx = points.reduce(0) { $0 + ($1.0 - meanX) * ($1.0 - meanX) }
        guard sxx > 0 else { return nil }
        let slope = points.reduce(0) { $0 + ($1.0 - meanX) * ($1.1 - meanY) } / sxx
        let residuals = points.reduce(0) { sum, point in
            let error = point.1 - (meanY + slope * (point.0 - meanX))
            return sum + error * error
        }
        perHour = slope * 3600
        twoSE = 2 * (residuals / (n - 2) / sxx).squareRoot() * 3600
    }
}

/// What the daemon's file descriptors and threads are, by kind: evidence for a count that grows.
enum ProcessInventory {
    /// fd targets by kind (`socket`, `pipe`, `anon_inode:[eventfd]`, a file's folder).
    static func descriptors(_ pid: Int32) -> [String: Int] {
        let folder = "/proc/\(pid)/fd"
        var kinds: [String: Int] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\(name)") else {
                continue
            }
            let kind: String
            if target.hasPrefix("socket:") {
                kind = "socket"
            } else if target.hasPrefix("pipe:") {
                kind = "pipe"
            } else if target.hasPrefix("anon_inode:") {
                kind = target
            } else if target.hasPrefix("/dev/") {
                kind = target
            } else {
                kind = (target as NSString).deletingLastPathComponent + "/…"
            }
            kinds[kind, default: 0] += 1
        }
        return kinds
    }

    /// Thread names (comm) with counts.
    static func threads(_ pid: Int32) -> [String: Int] {
        let folder = "/proc/\(pid)/task"
        var names: [String: Int] = [:]
        for task in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            let name =
                (try? String(contentsOfFile: "\(folder)/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            names[name, default: 0] += 1
        }
        return names
    }

    /// `counts` as one line, largest first.
    static func line(_ counts: [String: Int]) -> String {
        counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }
}
