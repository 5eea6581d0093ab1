import Basics
import SpoolConfig

/// What `spool cache stats` prints: each counter of `CacheStats()` under a label people
/// read, or (with `--json`) one JSON object under the daemon's own names for scripts.
enum CacheReport {
    /// The label of each counter the daemon sends; a counter not listed keeps its name.
    static let labels: [String: String] = [
        "entries": "files",
        "bytes": "size on disk",
        "budget": "budget",
        "hits": "reads from the cache",
        "misses": "downloads for missing bytes",
        "bytesServedFromCache": "played from the cache",
        "bytesFromNetwork": "fetched from the network",
        "evictions": "files evicted",
        "writeFailures": "failed writes",
        "namespaces": "accounts",
    ]

    /// Counters whose value is a byte count, shown as `12.3 MiB`.
    static let byteCounters: Set<String> = ["bytes", "budget", "bytesServedFromCache", "bytesFromNetwork"]

    /// One aligned `label: value` line per counter, in the daemon's order.
    static func lines(_ counters: [(name: String, value: Int64)]) -> [String] {
        let shown = counters.map { counter in
            (
                label: labels[counter.name] ?? counter.name,
                value: byteCounters.contains(counter.name) ? formatBytes(counter.value) : "\(counter.value)"
            )
        }
        let width = shown.map(\.label.count).max() ?? 0
        return shown.map { $0.label + ":" + String(repeating: " ", count: width - $0.label.count + 1) + $0.value }
    }

    /// The counters as one JSON object (names as the daemon sends them, exact numbers).
    static func json(_ counters: [(name: String, value: Int64)]) -> String {
        "{" + counters.map { "\"\(jsonEscaped($0.name))\": \($0.value)" }.joined(separator: ", ") + "}"
    }

    private static func jsonEscaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20: out += cFormat("\\u%04x", Int(scalar.value))
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

/// The problem with `--account NAME` for `cache ls` or `cache clear`, or nil when the
/// account is known: it has files in the cache (`cached`) or is the one this command
/// line would give the daemon (`own`), which exists even with nothing cached yet.
func unknownAccount(_ account: String, cached: Set<String>, own: String?) -> String? {
    guard !account.isEmpty, !cached.contains(account), account != own else { return nil }
    let known = Set(cached).union(own.map { [$0] } ?? []).sorted()
    let problem = "no such account '\(account)' in the cache"
    return mistake(
        problem, word: account, among: known,
        otherwise: known.isEmpty ? "the cache is empty" : "accounts: " + known.joined(separator: ", "))
}
