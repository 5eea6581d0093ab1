import DBusKit
import Foundation
import TestSupport

/// One measured value, or why there is none.
enum Outcome {
    case value(Double)
    case failed(String)
    /// Not applicable, and why (e.g. "cached": the seek's target was downloaded before it).
    case note(String)
}

/// A row of the table: a value per player and what is targeted.
struct Row {
    let name: String
    let unit: String
    var values: [String: Outcome] = [:]
    let target: String
}

/// The value of `body`, or its failure.
func attempt(_ body: () async throws -> Double) async -> Outcome {
    do { return .value(try await body()) } catch { return .failed("\(error)") }
}

/// A case's name, unit and target, one per row it fills.
typealias RowSpec = (name: String, unit: String, target: String)

/// Runs cases on each player against one rig and collects the table: a fresh player for each
/// case and run, its own path on the origin, the median of the runs for each row.
final class BenchRunner {
    let rig: NetworkRig
    let spool: String
    let plugin: String?
    /// The players measured, spool first.
    let players: [String]
    /// The order they run in within a case.
    let runOrder: [String]
    private(set) var rows: [Row] = []
    private(set) var notes: [String] = []
    private var serial = 0
    private let environment = ProcessInfo.processInfo.environment

    init(rig: NetworkRig) throws {
        self.rig = rig
        spool = try environment["SPOOL"] ?? spoolExecutable()
        plugin = NetworkRig.mpvMPRISPlugin()
        var players = ["spool"]
        let wanted = environment["NETBENCH_PLAYERS"].map { $0.split(separator: ",").map(String.init) }
        if plugin != nil, (try? executablePath("mpv")) != nil, wanted?.contains("mpv") ?? true { players.append("mpv") }
        self.players = players
        // "mpv,spool" runs mpv first in each case (the table keeps spool's column first).
        runOrder = wanted?.first == "mpv" ? players.reversed() : players
    }

    /// The line that names what is measured.
    var banner: String {
        players.contains("mpv")
            ? "\(spool) vs mpv \(Self.mpvVersion()) + \(plugin!)" : "\(spool) (mpv with mpv-mpris not found)"
    }

    /// A fresh path name for a case's files on the origin.
    func nextPath() -> String {
        serial += 1
        return "c\(serial)"
    }

    /// Starts a player of `kind` (spool with its folders in `home` when given) and waits until
    /// it is on the bus.
    func start(_ kind: String, home: TemporaryDirectory? = nil) async throws -> PlayerProbe {
        let player =
            kind == "spool"
            ? try rig.startSpool(executable: spool, home: home, logLevel: environment["NETBENCH_LOG"])
            : try rig.startMPV(plugin: plugin!)
        let connection = try DBusConnection(address: rig.bus.address)
        let probe = PlayerProbe(
            remote: DBusMPRISRemote(connection: connection, busName: player.busName), player: player, rig: rig)
        try await probe.waitUntilReady()
        return probe
    }

    /// Warms a fresh sound server: its first stream starts about 0.6 s late, which the run's
    /// first player would pay.
    func warmSoundServer() throws {
        guard let pulse = rig.pulse else { return }
        var environment = self.environment
        environment["PULSE_SERVER"] = pulse.server
        _ = try runCommand(
            "gst-launch-1.0", ["-q", "audiotestsrc", "wave=silence", "num-buffers=20", "!", "pulsesink"],
            environment: environment, timeout: 20)
    }

    /// Runs `body` `runs` times for every player, each time with a fresh player and path;
    /// a row keeps the median of its runs (or the first failure).
    func run(_ specs: [RowSpec], runs: Int = 1, _ body: (PlayerProbe, String) async throws -> [Outcome]) async {
        await runEach(specs, runs: runs) { kind, path in
            await self.once(kind, specs: specs) { try await body($0, path) }
        }
    }

    /// Runs `body` `runs` times for every player kind with a fresh path; `body` starts and
    /// stops the players it needs (``start(_:home:)``).
    func runEach(_ specs: [RowSpec], runs: Int = 1, _ body: (String, String) async throws -> [Outcome]) async {
        if let only = environment["NETBENCH_CASES"], !specs[0].name.contains(only) { return }
        let first = rows.count
        rows += specs.map { Row(name: $0.name, unit: $0.unit, target: $0.target) }
        for kind in runOrder {
            var runsOutcomes: [[Outcome]] = []
            for _ in 0..<runs {
                do {
                    runsOutcomes.append(try await body(kind, nextPath()))
                } catch {
                    runsOutcomes.append([.failed("\(error)")])
                }
            }
            for offset in specs.indices {
                rows[first + offset].values[kind] = Self.median(runsOutcomes.map { $0[min(offset, $0.count - 1)] })
            }
        }
    }

    /// One run of a case on a fresh player; its log tail is kept when a value failed.
    private func once(_ kind: String, specs: [RowSpec], _ body: (PlayerProbe) async throws -> [Outcome]) async
        -> [Outcome]
    {
        var outcomes: [Outcome]
        var probe: PlayerProbe?
        do {
            probe = try await start(kind)
            outcomes = try await body(probe!)
        } catch {
            outcomes = [.failed("\(error)")]
        }
        if let probe { keepLog(of: probe, case: specs[0].name, outcomes: outcomes) }
        probe?.player.stop()
        return outcomes
    }

    /// Keeps `probe`'s log tail for the report when an outcome failed (or when asked to).
    func keepLog(of probe: PlayerProbe, case name: String, outcomes: [Outcome]) {
        // NETBENCH_SHOW_LOG=N shows N lines (60 when it is not a number), for a timeline.
        let show = environment["NETBENCH_SHOW_LOG"].map { Int($0) ?? 60 }
        guard show != nil || outcomes.contains(where: { if case .failed = $0 { true } else { false } }) else { return }
        notes.append("\(name) [\(probe.player.kind)] log tail:\n" + probe.player.logTail(show ?? 12))
    }

    /// The median of the runs' values; the first failure or note when any run had no value.
    static func median(_ outcomes: [Outcome]) -> Outcome {
        var values: [Double] = []
        for outcome in outcomes {
            guard case .value(let value) = outcome else { return outcome }
            values.append(value)
        }
        values.sort()
        guard !values.isEmpty else { return .failed("no run") }
        return .value(
            values.count % 2 == 1
                ? values[values.count / 2] : (values[values.count / 2 - 1] + values[values.count / 2]) / 2)
    }

    static func mpvVersion() -> String {
        let out = (try? runCommand("mpv", ["--version"], timeout: 10).stdout) ?? ""
        return out.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
    }

    /// Prints the table (with spool/mpv when both ran), the failures and the kept log tails.
    func printReport(since started: ContinuousClock.Instant) {
        func format(_ outcome: Outcome?, unit: String) -> String {
            switch outcome {
            case .value(let value)?: unit == "s" ? String(format: "%.3f", value) : String(format: "%.0f", value)
            case .failed(let why)?: why.contains("within") || why.contains("never") ? "timeout" : "fail"
            case .note(let text)?: text
            case nil: "-"
            }
        }
        let width = rows.map(\.name.count).max() ?? 40
        var header = pad("case", width) + "  " + pad("unit", 5) + players.map { pad($0, 10) }.joined()
        if players.count == 2 { header += pad("spool/mpv", 11) }
        print("\n" + header + "target")
        for row in rows {
            var line =
                pad(row.name, width) + "  " + pad(row.unit, 5)
                + players.map { pad(format(row.values[$0], unit: row.unit), 10) }.joined()
            if players.count == 2 {
                if case .value(let a)? = row.values["spool"], case .value(let b)? = row.values["mpv"], b > 0 {
                    line += pad(String(format: "%.2f", a / b), 11)
                } else {
                    line += pad("-", 11)
                }
            }
            print(line + row.target)
        }
        let failures = rows.flatMap { row in
            row.values.compactMap { kind, outcome -> String? in
                if case .failed(let why) = outcome { return "  \(row.name) [\(kind)]: \(why.prefix(300))" }
                return nil
            }
        }
        if !failures.isEmpty {
            print("\nwhy (timeout/fail):")
            failures.forEach { print($0) }
        }
        if !notes.isEmpty {
            print("\nfailures, with the player's log tail:")
            for note in notes { print(note) }
        }
        print(String(format: "\nbench run: %.0f s", seconds(from: started)))
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}
