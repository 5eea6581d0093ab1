import Foundation
import TestSupport

/// The summary at the end of a soak, and its verdict.
struct Report {
    let duration: Double
    let warmUp: Double
    let seed: UInt64
    let ledger: Ledger
    let samples: [Sample]
    let crashes: [DaemonKeeper.Crash]
    let pollers: Pollers
    let faults: FaultSchedule
    let origin: FaultOrigin
    let daemonLog: String
    let inventories: (warmUp: Inventory, end: Inventory)
    /// The allocator's account at the end of the warm-up and at the end (trimmed then).
    let heaps: (warmUp: Result<HeapFigures, RigError>?, end: Result<HeapFigures, RigError>?)
    let quit: (outcome: CallOutcome, status: Int32?, seconds: Double)
    let capturedStacks: [String]

    /// Prints everything; true when every target is met.
    func print() -> Bool {
        var missed: [String] = []
        say("\n=== soak summary (seed \(seed)) ===")
        say(
            "ran \(formatted((duration / 60 * 10).rounded() / 10)) min, \(samples.count) samples; warm-up \(Int(warmUp)) s"
        )

        // Crashes and unanswered calls.
        say("\ncrashes (daemon exits nobody asked for): \(crashes.count)")
        for crash in crashes {
            say(
                "  at \(Int(crash.at)) s, pid \(crash.pid), status \(crash.status.map(String.init) ?? "?"); log tail:\n\(crash.logTail)"
            )
        }
        if !crashes.isEmpty { missed.append("\(crashes.count) crashes") }
        let unanswered = ledger.unanswered
        let callCount = ledger.tallies.values.reduce(0) { $0 + $1.answered + $1.refused + $1.unanswered }
        say(
            "unanswered calls (no answer within \(SoakClient.timeout), or the daemon gone): \(unanswered.count) of \(callCount)"
        )
        for call in unanswered.prefix(40) {
            say("  at \(String(format: "%.1f", call.at)) s: \(call.what) — \(call.why)")
        }
        if ledger.unansweredDuringCapture > 0 {
            say("  (and \(ledger.unansweredDuringCapture) while gdb held the daemon stopped, not counted)")
        }
        for file in capturedStacks { say("  daemon stacks taken at the first one: \(file)") }
        if !unanswered.isEmpty { missed.append("\(unanswered.count) unanswered calls") }

        printActions()
        printPolls()
        printPlayback(&missed)
        printOrigin()
        printGrowth(&missed)
        printLog()

        switch (quit.outcome, quit.status) {
        case (.answered, 0?):
            say(String(format: "\nQuit: answered, the daemon exited 0 after %.2f s", quit.seconds))
        default:
            say("\nQuit: \(quit.outcome), exit status \(quit.status.map(String.init) ?? "none within 10 s")")
            missed.append("Quit did not end the daemon cleanly")
        }
        say(missed.isEmpty ? "\nresult: every target met" : "\nresult: MISSED: " + missed.joined(separator: "; "))
        return missed.isEmpty
    }

    private func printActions() {
        let tallies = ledger.tallies
        let actions = tallies.filter { $0.key.hasPrefix("action:") }.sorted { $0.key < $1.key }
        say(
            "\nactions (answered / refused by the daemon / unanswered): "
                + "\(actions.reduce(0) { $0 + $1.value.answered + $1.value.refused + $1.value.unanswered }) in all")
        for (kind, tally) in actions {
            let name = kind.dropFirst("action: ".count)
            say(
                "  \(pad(String(name), 48)) \(pad(String(tally.answered), 6)) \(pad(String(tally.refused), 5)) \(tally.unanswered)"
            )
            for (why, count) in tally.refusals.sorted(by: { $0.value > $1.value }).prefix(3) {
                say("      refused \(count)×: \(why)")
            }
        }
    }

    private func printPolls() {
        let polls = ledger.tallies.filter { !$0.key.hasPrefix("action:") }.sorted { $0.key < $1.key }
        say(
            "\nreads by the 4 MPRIS clients, the sampler and the driver (count, p50 / p99 / max latency; "
                + "calls while gdb held the daemon are left out of the latencies):")
        for (kind, tally) in polls {
            let sorted = tally.latencies.sorted()
            let refused = tally.refused > 0 ? ", \(tally.refused) refused" : ""
            let unanswered = tally.unanswered > 0 ? ", \(tally.unanswered) UNANSWERED" : ""
            say(
                "  \(pad(kind, 34)) \(pad(String(tally.answered + tally.refused + tally.unanswered), 7)) "
                    + String(
                        format: "%.2f / %.2f / %.1f ms", percentile(sorted, 0.5) * 1000,
                        percentile(sorted, 0.99) * 1000,
                        (sorted.last ?? 0) * 1000) + refused + unanswered)
        }
        say(
            "  PropertiesChanged and other signals received by the following client: \(pollers.signalsReceived.load(ordering: .relaxed))"
        )
    }

    private func printPlayback(_ missed: inout [String]) {
        let playing = samples.filter { $0.status == "Playing" }.count
        let advancing = samples.filter(\.advancing).count
        let share = Double(advancing) / Double(max(1, samples.count))
        say(
            String(
                format:
                    "\nplayback: Playing in %.0f %% of samples, Playing with the position advancing in %.0f %% (%d of %d; a backward seek between two samples counts as not advancing)",
                Double(playing) * 100 / Double(max(1, samples.count)), share * 100, advancing, samples.count))
        let tracks = Set(samples.map(\.track)).count
        say("  \(tracks) distinct track ids were current at a sample")
        let errors = pollers.lastErrors.withLock { $0 }
        if !errors.isEmpty {
            say("  track failures seen in LastError (\(errors.values.reduce(0, +)) in all):")
            for (why, count) in errors.sorted(by: { $0.value > $1.value }).prefix(8) { say("    \(count)× \(why)") }
        }
        if share < 0.5 {
            missed.append("playing only \(Int(share * 100)) % of the time (the soak must exercise playback)")
        }
    }

    private func printOrigin() {
        let transfers = origin.transfers()
        var byStatus: [Int: Int] = [:]
        for transfer in transfers { byStatus[transfer.status, default: 0] += 1 }
        let short = transfers.filter { $0.servesResource && $0.ended != nil && $0.bodyBytesSent < $0.bodyLength }.count
        let bytes = transfers.reduce(0) { $0 + $1.bodyBytesSent }
        say(
            "\norigin: \(transfers.count) responses ("
                + byStatus.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
                + "), \(short) ended before their body (cuts, stalls given up, seeks), \(bytes / 1_000_000) MB sent")
        let applied = faults.applied.withLock { $0 }
        say(
            "  faults put in force on a path: "
                + applied.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
    }

    private func printGrowth(_ missed: inout [String]) {
        guard let lastPID = samples.last?.pid else {
            missed.append("no samples")
            return
        }
        let steady = samples.filter { $0.pid == lastPID && $0.at >= warmUp }
        guard let first = steady.first, let last = steady.last, last.at - first.at >= 60 else {
            say("\ngrowth: fewer than 60 s of samples after the warm-up; run longer")
            missed.append("too short for growth figures")
            return
        }
        let window = last.at - first.at
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        }
        let head = steady.filter { $0.at < first.at + 60 }
        let tail = steady.filter { $0.at > last.at - 60 }
        say(
            "\ngrowth after the warm-up (\(Int(first.at))–\(Int(last.at)) s; values are medians of the first and last minute):"
        )
        if window < 480 {
            say("  (a window under 8 minutes mostly measures noise and the allocator settling: run 10 minutes or more)")
        }
        say(
            "  \(pad("", 9)) \(pad("after warm-up", 14)) \(pad("end", 10)) \(pad("min–max", 16)) \(pad("least-squares growth per hour (±2 SE)", 40)) target"
        )
        let rows: [(String, (Sample) -> Double, String, Double, Bool)] = [
            ("RSS", { Double($0.figures.rssKiB) / 1024 }, "MiB", 1, false),
            // Shown to tell a heap that grows from code and plugins paged in; no target of its own.
            ("anon RSS", { Double($0.figures.anonKiB) / 1024 }, "MiB", .infinity, false),
            ("fds", { Double($0.figures.fds) }, "", 2, true),
            ("threads", { Double($0.figures.threads) }, "", 2, true),
        ]
        for (name, value, unit, limit, overWindow) in rows {
            let values = steady.map(value)
            guard let trend = Trend(steady.map { ($0.at, value($0)) }) else { continue }
            let rise = trend.perHour * window / 3600
            let met = overWindow ? rise < limit : trend.perHour < limit
            let target =
                overWindow
                ? "fitted rise over the window < \(Int(limit)) (it is \(String(format: "%+.1f", rise)))"
                : limit.isFinite ? "< \(formatted(limit)) MiB/hour" : "(part of RSS)"
            let digits = unit.isEmpty ? "%.0f" : "%.1f"
            say(
                "  \(pad(name, 9)) \(pad(String(format: digits, median(head.map(value))) + " " + unit, 14)) "
                    + "\(pad(String(format: digits, median(tail.map(value))) + " " + unit, 10)) "
                    + "\(pad(String(format: digits + "–" + digits, values.min()!, values.max()!), 16)) "
                    + "\(pad(String(format: "%+.2f ± %.2f ", trend.perHour, trend.twoSE) + unit + "/h", 40)) \(target)"
                    + (limit.isFinite ? (met ? " ok" : " MISSED") : ""))
            if !met { missed.append("\(name) grows \(String(format: "%+.2f", trend.perHour)) \(unit)/hour") }
        }
        let ticks = Double(last.figures.cpuTicks - first.figures.cpuTicks) / ProcessFigures.ticksPerSecond
        let load =
            (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(
                separator: " ") ?? "?"
        say(
            String(
                format: "  CPU: %.1f %% of one core on average after the warm-up (%.0f s of CPU in %.0f s)",
                ticks / window * 100, ticks, window))
        say(
            "  (noisy: other builds share the machine's \(ProcessInfo.processInfo.activeProcessorCount) cores; load average now \(load))"
        )
        say("  descriptors at warm-up: \(ProcessInventory.line(inventories.warmUp.fds))")
        say("  descriptors at the end: \(ProcessInventory.line(inventories.end.fds))")
        say("  threads at warm-up: \(ProcessInventory.line(inventories.warmUp.threads))")
        say("  threads at the end: \(ProcessInventory.line(inventories.end.threads))")
        func line(_ heap: Result<HeapFigures, RigError>?) -> String {
            switch heap {
            case .success(let figures)?: figures.line
            case .failure(let error)?: "not read (\(error))"
            case nil: "not read"
            }
        }
        say("  heap at warm-up (glibc malloc_stats): \(line(heaps.warmUp))")
        say("  heap at the end: \(line(heaps.end))")
    }

    private func printLog() {
        var kinds: [String: Int] = [:]
        for line in daemonLog.split(separator: "\n") where line.hasPrefix("WARNING") || line.hasPrefix("ERROR") {
            kinds[Ledger.shortened(String(line)), default: 0] += 1
        }
        guard !kinds.isEmpty else { return }
        say("\ndaemon log: \(kinds.values.reduce(0, +)) warnings and errors; the most frequent:")
        for (line, count) in kinds.sorted(by: { $0.value > $1.value }).prefix(8) { say("  \(count)× \(line)") }
    }
}

/// `text` padded with spaces to `width`.
func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
}
