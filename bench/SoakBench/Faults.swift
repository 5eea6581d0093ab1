import Foundation
import Synchronization
import TestSupport

/// Random faults on the origin's paths, changed every few seconds from a seeded generator:
/// cuts, 503s, stalls (short ones, and now and then one long enough for the fetcher's speed
/// check), first-byte latency, or none. A request uses the faults in force when it arrives.
final class FaultSchedule: Sendable {
    /// How many times each kind of fault was put in force on a path.
    let applied = Mutex<[String: Int]>([:])
    private let origin: FaultOrigin
    /// Each path served and its size.
    private let paths: [(path: String, size: Int)]

    init(origin: FaultOrigin, paths: [(path: String, size: Int)]) {
        self.origin = origin
        self.paths = paths
    }

    /// Changes faults until `deadline`: every 2–6 s, each path has a 30 % chance of new ones.
    func run(seed: UInt64, until deadline: ContinuousClock.Instant) async {
        var random = SeededGenerator(seed: seed)
        while ContinuousClock.now < deadline {
            for (path, size) in paths where random.next(below: 10) < 3 {
                let (kind, faults) = Self.pick(size: size, &random)
                origin.setFaults(faults, for: path)
                applied.withLock { $0[kind, default: 0] += 1 }
            }
            try? await Task.sleep(for: .milliseconds(2000 + random.next(below: 4000)))
        }
        for (path, _) in paths { origin.setFaults(OriginFaults(), for: path) }
    }

    /// One random set of faults for a file of `size` bytes, and its kind's name.
    static func pick(size: Int, _ random: inout SeededGenerator) -> (String, OriginFaults) {
        let somewhere = { (random: inout SeededGenerator) in 8_192 + random.next(below: max(1, size / 2)) }
        switch random.next(below: 100) {
        case 0..<35:
            return ("none", OriginFaults())
        case 35..<55:
            return ("cut", OriginFaults(closeAfterBodyBytes: somewhere(&random)))
        case 55..<72:
            let count = 1 + random.next(below: 2)
            return (
                "503",
                OriginFaults(
                    errorResponses: .init(count: count, status: 503, retryAfter: random.next(below: 2) == 0 ? nil : 1))
            )
        case 72..<87:
            let duration = 0.5 + Double(random.next(below: 3500)) / 1000
            return ("stall", OriginFaults(stall: .init(afterBodyBytes: somewhere(&random), duration: duration)))
        case 87..<92:
            let duration = 10 + Double(random.next(below: 25))
            return ("long stall", OriginFaults(stall: .init(afterBodyBytes: somewhere(&random), duration: duration)))
        default:
            return ("latency", OriginFaults(firstByteLatency: 0.05 + Double(random.next(below: 450)) / 1000))
        }
    }
}
