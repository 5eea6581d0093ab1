// Spool against mpv with mpv-mpris where installed, in one run on one rig:
//   bench/network.sh   the network cases (issue #12)
//   bench/startup      the start path: cold start, replays, each format at 250 ms
//   NetworkBench radio internet radio: start, titles when heard, nothing written, a drop
//   NetworkBench hls   HLS on demand and live: start, replay from the cache, live stalls and writes
// Each case starts a fresh player (its own home: an empty cache, unless the case says) on a
// private bus, drives it over MPRIS against the fault origin, whose whole link is capped (all
// responses share one token bucket, as all connections to a host share a real link), and
// plays into a private PulseAudio server whose output is recorded.
// - first audio: the first non-silent sample recorded from the server's monitor (±20 ms);
// - advancing: MPRIS Position polled every 10 ms, the first read above the one before it;
// - landed: advancing within ±1 s of a SetPosition target;
// - request at target: the first request after the SetPosition that asks for the target's byte;
// - sent twice / beyond size: the origin's body bytes served more than once, and in all beyond
//   the file's size.
// SPOOL=path measures another spool binary; NETBENCH_PLAYERS=spool skips mpv (mpv,spool runs mpv first);
// NETBENCH_CASES=text runs only the cases whose name contains it; NETBENCH_LOG=debug gives
// the daemon a debug log (its tail is printed for failed cases); STARTUP_RUNS=N runs each
// start-up case N times (3 by default) and reports the median.
import Foundation
import TestSupport

@main
struct NetworkBench {
    static func main() async throws {
        let started = ContinuousClock.now
        let suite = CommandLine.arguments.dropFirst().first ?? "network"
        guard ["network", "startup", "radio", "hls"].contains(suite) else {
            FileHandle.standardError.write(Data("usage: NetworkBench [network|startup|radio|hls]\n".utf8))
            exit(2)
        }
        let runner = try BenchRunner(rig: try NetworkRig(recordAudio: true, lifetime: 900))
        print("NetworkBench \(suite): \(runner.banner)")
        print("generating media…")
        try runner.warmSoundServer()
        if suite == "startup" {
            try await StartupCases.run(runner)
        } else if suite == "radio" {
            try await RadioCases.run(runner)
        } else if suite == "hls" {
            try await HLSCases.run(runner)
        } else {
            try await NetworkCases.run(runner)
        }
        runner.printReport(since: started)
    }
}
