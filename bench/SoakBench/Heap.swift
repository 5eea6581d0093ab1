import Foundation
import TestSupport

/// glibc's account of the daemon's heap, read through gdb (`malloc_stats`): tells a heap whose
/// live allocations grow (a leak, or a cache without a bound) from an allocator that holds
/// freed memory in its per-thread arenas (fragmentation, returned by `malloc_trim`).
struct HeapFigures: Sendable {
    /// Bytes the allocator holds from the system, over every arena and mmapped chunk.
    var held: Int
    /// Bytes of them in live allocations.
    var inUse: Int
    /// Arenas (the main one and one per group of threads).
    var arenas: Int
    /// Anonymous RSS in KiB before and after `malloc_trim(0)`, when the probe trimmed.
    var trimmed: (before: Int, after: Int)?

    /// Probes `pid`, whose stderr goes to `log`: gdb calls `malloc_stats()` (which writes to the
    /// daemon's stderr), and `malloc_trim(0)` too when `trim`. Blocks while gdb holds the
    /// process stopped (a few seconds).
    static func probe(pid: Int32, log: URL, trim: Bool) -> Result<HeapFigures, RigError> {
        let offset = (try? FileManager.default.attributesOfItem(atPath: log.path)[.size] as? Int) ?? 0
        let before = ProcessFigures.read(pid)?.anonKiB
        var commands = ["-ex", "call ((void (*)(void))malloc_stats)()"]
        if trim { commands += ["-ex", "call ((int (*)(unsigned long))malloc_trim)(0)"] }
        let result: CommandResult
        do {
            result = try runCommand("gdb", ["-p", String(pid), "-batch", "-nx"] + commands, timeout: 120)
        } catch {
            return .failure(RigError("gdb: \(error)"))
        }
        guard let handle = try? FileHandle(forReadingFrom: log) else { return .failure(RigError("no daemon log")) }
        defer { try? handle.close() }
        try? handle.seek(toOffset: UInt64(offset))
        let text = String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
        guard let total = text.range(of: "Total (incl. mmap):", options: .backwards) else {
            let why = (result.stderr + result.stdout).split(separator: "\n").suffix(3).joined(separator: " / ")
            return .failure(RigError("gdb exited \(result.status) and malloc_stats wrote nothing: \(why)"))
        }
        func number(after label: String, in part: Substring) -> Int? {
            guard let range = part.range(of: label) else { return nil }
            return part[range.upperBound...].split(separator: "\n").first
                .flatMap { Int($0.replacingOccurrences(of: "=", with: "").trimmingCharacters(in: .whitespaces)) }
        }
        let totals = text[total.upperBound...]
        guard let held = number(after: "system bytes", in: totals),
            let inUse = number(after: "in use bytes", in: totals)
        else { return .failure(RigError("malloc_stats' totals did not parse")) }
        let arenas = text.components(separatedBy: "Arena ").count - 1
        let after = trim ? ProcessFigures.read(pid)?.anonKiB : nil
        return .success(
            HeapFigures(
                held: held, inUse: inUse, arenas: arenas,
                trimmed: before.flatMap { before in after.map { (before, $0) } }))
    }

    /// One line for the summary.
    var line: String {
        var text = String(
            format: "%.1f MiB held from the system in %d arenas, %.1f MiB of it in live allocations",
            Double(held) / 1_048_576, arenas, Double(inUse) / 1_048_576)
        if let trimmed {
            text += String(
                format: "; malloc_trim(0) took anon RSS from %.1f to %.1f MiB",
                Double(trimmed.before) / 1024, Double(trimmed.after) / 1024)
        }
        return text
    }
}
