// Next with the next track preloaded: how long from the command to the first audio sample,
// and whether any request reaches the origin. The daemon's path without D-Bus: Player →
// GStreamerEngine → HTTPByteSource over a RangeCache whose entry for the next track is
// complete (the state preloading leaves it in), the origin a local FaultOrigin whose
// request log must not grow. `swift run -c release PreloadBench [runs]`.
import ByteSourceAPI
import EngineAPI
import Fetcher
import Foundation
import GStreamerEngine
import MediaSource
import PlayerCore
import RangeCache
import Synchronization
import TestSupport

/// Taps the engine's events for the bench and forwards everything else.
final class TappedEngine: PlaybackEngine {
    final class Tap: Sendable {
        let current = Mutex<(@Sendable (EngineEvent) -> Void)?>(nil)
    }
    let engine: GStreamerEngine
    private let tap = Tap()
    init(_ engine: GStreamerEngine) { self.engine = engine }
    func setTap(_ tap: (@Sendable (EngineEvent) -> Void)?) { self.tap.current.withLock { $0 = tap } }
    func setEventHandler(_ handler: @escaping @Sendable (EngineEvent) -> Void) {
        let tap = self.tap
        engine.setEventHandler { event in
            tap.current.withLock { $0 }?(event)
            handler(event)
        }
    }
    func load(_ track: EngineTrack, at position: Duration, playing: Bool) {
        engine.load(track, at: position, playing: playing)
    }
    func setNext(_ track: EngineTrack?) { engine.setNext(track) }
    func setRate(_ rate: Double) { engine.setRate(rate) }
    var supportedRates: ClosedRange<Double> { engine.supportedRates }
    func play() { engine.play() }
    func pause() { engine.pause() }
    func stop() { engine.stop() }
    func seek(to position: Duration) { engine.seek(to: position) }
    func setVolume(_ volume: Double) { engine.setVolume(volume) }
    func position() -> Duration? { engine.position() }
    func shutdown() { engine.shutdown() }
}

func tone(_ path: String, frequency: Int) {
    let made = try! runCommand(
        "gst-launch-1.0",
        [
            "-q", "audiotestsrc", "num-buffers=\(30 * 44_100 / 1024)", "freq=\(frequency)", "!", "audioconvert", "!",
            "flacenc", "!", "filesink", "location=\(path)",
        ])
    precondition(made.status == 0, made.stderr)
}

let runs = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 20 : 20
let media = try! TemporaryDirectory(prefix: "spool-preloadbench")
tone(media.file("a.flac").path, frequency: 300)
tone(media.file("b.flac").path, frequency: 500)
let origin = try! FaultOrigin()
origin.serve(OriginResource(try! Data(contentsOf: media.file("a.flac"))), at: "/a.flac")
origin.serve(OriginResource(try! Data(contentsOf: media.file("b.flac"))), at: "/b.flac")
let cacheDirectory = try! TemporaryDirectory(prefix: "spool-preloadbench-cache")
let cache = try! RangeCache(directory: cacheDirectory.url)
let fetcher = Fetcher(userAgent: "Spool/bench")
let revalidator = Revalidator(interval: .seconds(3600))
GStreamer.initialize()
let engine = TappedEngine(
    try! GStreamerEngine(audioSink: "fakesink sync=true") { url throws(MediaSourceError) in
        guard let entry = try? cache.entry(for: url) else { throw .unavailable("no cache entry") }
        // As the daemon does: a download that continues an entry validates it.
        let length = entry.metadata.validator.length
        if length.map({ entry.contiguousLength(from: 0) < $0 }) ?? true { revalidator.markChecked(entry) }
        return HTTPByteSource(url: url, entry: entry, fetcher: fetcher, revalidator: revalidator)
    })
let player = Player(engine: engine, retryDelay: .seconds(60))
let a = origin.url(for: "/a.flac")
let b = origin.url(for: "/b.flac")

func complete(_ url: URL) -> Bool {
    guard let info = cache.info(for: cache.key(for: url)), let length = info.metadata.validator.length,
        let entry = try? cache.entry(for: url)
    else { return false }
    defer { entry.close() }
    return entry.contiguousLength(from: 0) >= length
}

/// Waits for an engine event matching `predicate`; returns when it came, or nil after 10 s.
func waitForEvent(_ predicate: @escaping @Sendable (EngineEvent) -> Bool, after action: () async -> Void) async
    -> DispatchTime?
{
    let hit = Mutex<DispatchTime?>(nil)
    let signal = DispatchSemaphore(value: 0)
    engine.setTap { event in
        if predicate(event),
            hit.withLock({ old in
                defer { if old == nil { old = .now() } }
                return old == nil
            })
        {
            signal.signal()
        }
    }
    await action()
    let waited = await Task.detached { signal.wait(timeout: .now() + 10) }.value
    engine.setTap(nil)
    return waited == .success ? hit.withLock { $0 } : nil
}

var samples: [Double] = []
var requestsDuringNext = 0
for run in 0..<(runs + 2) {
    guard
        await waitForEvent({ $0 == .stateChanged(.playing) }, after: { await player.open([(a, nil), (b, nil)]) }) != nil
    else { fatalError("A never played") }
    // Without a preloader the engine gets B at once and downloads it (the preloaded state).
    let deadline = Date().addingTimeInterval(20)
    while !(complete(a) && complete(b)), Date() < deadline { try? await Task.sleep(for: .milliseconds(10)) }
    precondition(complete(b), "B never completed")
    try? await Task.sleep(for: .milliseconds(200))  // let the engine's next-track source settle
    let before = origin.requests().count
    let start = DispatchTime.now()
    guard let started = await waitForEvent({ $0 == .stateChanged(.playing) }, after: { await player.next() }) else {
        fatalError("B never played")
    }
    try? await Task.sleep(for: .milliseconds(300))  // a late request would show in the log
    requestsDuringNext += origin.requests().count - before
    if run >= 2 { samples.append(Double(started.uptimeNanoseconds - start.uptimeNanoseconds) / 1e6) }
    await player.stop()
}
samples.sort()
let median = samples[samples.count / 2]
let p95 = samples[min(samples.count - 1, Int(Double(samples.count) * 0.95))]
print("| Next → first audio sample, next track preloaded (median; p95; max) | requests during Next |")
print("|---|---|")
print(String(format: "| %.1f ms; %.1f ms; %.1f ms | %d |", median, p95, samples.last!, requestsDuringNext))
await player.shutdown()
fetcher.shutdown()
cache.close()
