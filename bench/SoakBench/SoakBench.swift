// A soak of the real daemon: `bench/soak.sh MINUTES` (builds spool and this bench in release
// mode, as `make build` does, then runs it).
// A queue of every format over http, from the fault origin injecting random cuts, 503s and
// stalls, and as local files; a listener acting every 0.3–2.5 s (seeks, next/previous, rates,
// queue edits, cache clears, pauses, the `spool` command); four MPRIS clients polling; the
// daemon playing into a private PulseAudio null sink. Every second: the daemon's RSS, open
// descriptors, threads and CPU. At the end: crashes, unanswered calls, what each action did,
// and growth per hour after the warm-up; the exit status is 1 when a target is missed.
// SOAK_SEED replays a run's schedule of actions and faults (timing still differs);
// SOAK_CSV=path writes the samples; SOAK_LOG=debug gives the daemon a debug log;
// SPOOL=path soaks another binary.
import DBusKit
import Foundation
import TestSupport

/// Writes a line to stdout at once (print is block-buffered into a pipe).
func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }

@main
struct SoakBench {
    static func main() async {
        let arguments = CommandLine.arguments.dropFirst()
        guard let minutes = arguments.first.flatMap(Double.init), minutes > 0, arguments.count == 1 else {
            say("usage: SoakBench MINUTES   (bench/soak.sh MINUTES)")
            exit(2)
        }
        do {
            exit(try await soak(minutes: minutes) ? 0 : 1)
        } catch {
            say("soak failed: \(error)")
            Cleanup.run()
            exit(2)
        }
    }

    static func soak(minutes: Double) async throws -> Bool {
        Cleanup.installSignalHandlers()
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["SOAK_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...999_999)
        let duration = minutes * 60
        let lifetime = Int(duration) + 600
        let spool = try environment["SPOOL"] ?? spoolExecutable()
        say(
            "SoakBench: \(formatted(minutes)) min, seed \(seed) (SOAK_SEED=\(seed) replays the schedule), daemon \(spool)"
        )

        let media = try SoakMedia.make()
        let rig = try NetworkRig(recordAudio: false, lifetime: lifetime)
        let pulse = try PulseServer(selfStopAfter: lifetime)
        Cleanup.register { pulse.stop() }
        Cleanup.register { rig.bus.stop() }
        Cleanup.register { rig.origin.stop() }
        let linkRate = environment["SOAK_LINK_RATE"].flatMap(Int.init) ?? 500_000
        rig.origin.setLinkRate(linkRate)
        var httpPool: [String] = []
        var paths: [(path: String, size: Int)] = []
        for file in media.files {
            httpPool.append(try rig.serve(file, as: "soak/\(file.lastPathComponent)").absoluteString)
            paths.append(("/soak/\(file.lastPathComponent)", try Data(contentsOf: file).count))
        }
        let pool = httpPool + media.files.map(\.absoluteString)
        say("media: \(media.summary); each over http and as a local file (\(pool.count) URIs)")
        say("origin: 127.0.0.1:\(rig.origin.port), link capped at \(linkRate / 1000) kB/s; faults change every 2–6 s")

        let ledger = Ledger()
        let daemon = try await DaemonKeeper(
            rig: rig, executable: spool, pulseServer: pulse.server, logLevel: environment["SOAK_LOG"],
            lifetime: lifetime)
        Cleanup.register { daemon.process.stop(grace: 2) }
        say(
            "daemon: pid \(daemon.pid), playing into a private PulseAudio null sink; GStreamer registry \(DaemonKeeper.registry); "
                + "4 MPRIS clients; warm-up \(formatted(warmUp(duration))) s")

        let control = try SoakClient(address: rig.bus.address, ledger: ledger)
        var random = SeededGenerator(seed: seed)
        await control.set("driver: setup", SoakClient.player, "LoopStatus", .string("Playlist"))
        let first = (0..<16).map { _ in pool[random.next(below: pool.count)] }
        await control.call("driver: setup", SoakClient.spool, "Play", [.stringArray(first)])

        let deadline = ContinuousClock.now + .seconds(duration)
        let samples = SampleLog(csvPath: environment["SOAK_CSV"])
        let sampler = Sampler(
            daemon: daemon, ledger: ledger, samples: samples,
            client: try SoakClient(address: rig.bus.address, ledger: ledger))
        let pollers = try Pollers(address: rig.bus.address, ledger: ledger)
        let faults = FaultSchedule(origin: rig.origin, paths: paths)
        let driver = ActionDriver(
            client: control, ledger: ledger, pool: pool, httpPool: httpPool, spool: spool,
            environment: rig.bus.environment.filter { !$0.key.hasPrefix("SPOOL_") })
        let warmUpInventory = Inventory()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await sampler.run(until: deadline, warmUp: warmUp(duration), inventory: warmUpInventory) }
            group.addTask { await pollers.run(seed: seed &+ 1, until: deadline) }
            group.addTask { await faults.run(seed: seed &+ 10, until: deadline) }
            group.addTask { await driver.run(seed: seed &+ 20, until: deadline) }
        }
        let endInventory = Inventory()
        endInventory.take(daemon.pid)
        let endHeap = daemon.heap(trim: true)

        // The daemon must still quit cleanly after all that.
        let quitStarted = ContinuousClock.now
        let quit = await control.call("action: quit", "org.mpris.MediaPlayer2", "Quit")
        let quitStatus = await daemon.process.waitForExit(timeout: 10)
        let quitSeconds = seconds(from: quitStarted)
        if quitStatus == nil {
            say("the daemon did not exit within 10 s of Quit; its stacks:")
            let file = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
                "spool-soak-quit-stacks-\(seed).txt")
            daemon.captureStacks(to: file)
            say("  \(file.path)")
        }
        control.close()
        sampler.close()
        let report = Report(
            duration: duration, warmUp: warmUp(duration), seed: seed, ledger: ledger, samples: samples.all,
            crashes: daemon.crashes, pollers: pollers, faults: faults, origin: rig.origin, daemonLog: daemon.log,
            inventories: (warmUpInventory, endInventory), heaps: (sampler.warmUpHeap.withLock { $0 }, endHeap),
            quit: (outcome: quit, status: quitStatus, seconds: quitSeconds),
            capturedStacks: sampler.capturedStacks.withLock { $0 })
        let passed = report.print()
        Cleanup.run()
        return passed
    }

    /// Seconds left out of the growth figures: 20 % of the run, at least 2 minutes (half of a
    /// run shorter than 4 minutes). Caches, the allocator's arenas and GStreamer's plugins fill
    /// up first.
    static func warmUp(_ duration: Double) -> Double { max(0.2 * duration, min(120, 0.5 * duration)) }
}

/// `value` without a needless ".0".
func formatted(_ value: Double) -> String {
    value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
}
