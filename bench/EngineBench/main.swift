// Measures the engine on local (fully cached) files, which read at once: time from a play
// command to the first audio sample for several formats; a seek to 80 % of a 3-minute MP3 to
// its landing; and a load of the prepared next track (the player's Next) to its first audio.
//
//   swift run -c release EngineBench [runs]
import ByteSourceAPI
import EngineAPI
import Foundation
import GStreamerEngine
import MediaSource
import Synchronization

/// Makes a tone file with gst-launch-1.0.
func makeTone(_ path: String, encoder: [String], buffers: Int = 400) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
    process.arguments =
        ["-q", "audiotestsrc", "num-buffers=\(buffers)", "freq=440", "!", "audioconvert", "!"] + encoder
        + ["!", "filesink", "location=\(path)"]
    try! process.run()
    process.waitUntilExit()
}

/// Waits for the first event matching `predicate`.
final class Waiter: Sendable {
    private let hit = DispatchSemaphore(value: 0)
    private let predicate: @Sendable (EngineEvent) -> Bool
    init(_ predicate: @escaping @Sendable (EngineEvent) -> Bool) { self.predicate = predicate }
    func offer(_ event: EngineEvent) { if predicate(event) { hit.signal() } }
    func wait() -> Bool { hit.wait(timeout: .now() + 10) == .success }
}

let runs = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 30 : 30
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-enginebench-\(getpid())")
try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }

let formats: [(String, [String])] = [
    ("flac", ["flacenc"]),
    ("mp3", ["lamemp3enc", "!", "xingmux"]),
    ("ogg", ["vorbisenc", "!", "oggmux"]),
]
GStreamer.initialize()
print("| format | first audio after play, median | p95 | max |")
print("|---|---|---|---|")
for (name, encoder) in formats {
    let file = directory.appendingPathComponent("tone.\(name)")
    makeTone(file.path, encoder: encoder)
    // The sink keeps real time, as a sound card would; the engine reaches PLAYING
    // when the first sample is in the sink.
    let engine = try! GStreamerEngine(audioSink: "fakesink sync=true") { url throws(MediaSourceError) in
        FileByteSource(path: url.path)
    }
    let current = Mutex<Waiter?>(nil)
    engine.setEventHandler { event in current.withLock { $0 }?.offer(event) }
    var samples: [Double] = []
    for run in 0..<(runs + 3) {
        let waiter = Waiter { $0 == .stateChanged(.playing) }
        current.withLock { $0 = waiter }
        let start = DispatchTime.now()
        engine.load(EngineTrack(id: TrackID(UInt64(run + 1)), url: file), at: .zero, playing: true)
        guard waiter.wait() else { fatalError("\(name): no playback") }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e6
        if run >= 3 { samples.append(elapsed) }  // the first runs warm up plugin loading
        engine.stop()
    }
    engine.shutdown()
    samples.sort()
    let median = samples[samples.count / 2]
    let p95 = samples[min(samples.count - 1, Int(Double(samples.count) * 0.95))]
    print(String(format: "| %@ | %.1f ms | %.1f ms | %.1f ms |", name, median, p95, samples.last!))
}

/// The median, p95 and max of `samples` (ms), as a table's cell.
func summary(_ samples: [Double]) -> String {
    let sorted = samples.sorted()
    let p95 = sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.95))]
    return String(format: "%.1f ms; %.1f ms; %.1f ms", sorted[sorted.count / 2], p95, sorted.last!)
}

func milliseconds(since start: DispatchTime) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e6
}

// A 3-minute MP3 (audiotestsrc's buffers hold 1024 samples at 44.1 kHz).
let long = directory.appendingPathComponent("tone-180.mp3")
makeTone(long.path, encoder: ["lamemp3enc", "!", "xingmux"], buffers: 180 * 44_100 / 1024)
let engine = try! GStreamerEngine(audioSink: "fakesink sync=true") { url throws(MediaSourceError) in
    FileByteSource(path: url.path)
}
let current = Mutex<Waiter?>(nil)
engine.setEventHandler { event in current.withLock { $0 }?.offer(event) }

/// Runs `command` and waits for the event `predicate` accepts; nil when none came.
func timed(_ predicate: @escaping @Sendable (EngineEvent) -> Bool, _ command: () -> Void) -> Double? {
    let waiter = Waiter(predicate)
    current.withLock { $0 = waiter }
    let start = DispatchTime.now()
    command()
    return waiter.wait() ? milliseconds(since: start) : nil
}

// SetPosition to 80 % and back to 20 %, alternately: the seek → the engine's `seeked`, and →
// the position read at the target and advancing (a listener hears the new place).
guard
    timed(
        { $0 == .stateChanged(.playing) },
        { engine.load(EngineTrack(id: TrackID(1), url: long), at: .zero, playing: true) }) != nil
else { fatalError("the 3-minute MP3 never played") }
var seeked: [Double] = []
var landed: [Double] = []
for run in 0..<(runs + 3) {
    let target: Duration = run % 2 == 0 ? .seconds(144) : .seconds(36)
    let start = DispatchTime.now()
    guard let done = timed({ if case .seeked = $0 { true } else { false } }, { engine.seek(to: target) }) else {
        fatalError("the seek to \(target) never completed")
    }
    var first: Duration?
    while milliseconds(since: start) < 5000 {
        if let position = engine.position(), position >= target - .milliseconds(50), position < target + .seconds(1) {
            if let first, position > first { break }
            first = first ?? position
        }
        usleep(200)
    }
    if run >= 3 {
        seeked.append(done)
        landed.append(milliseconds(since: start))
    }
}
engine.stop()

// The player's Next with the next track prepared: setNext, then a load of it → its first audio.
let next = directory.appendingPathComponent("tone.flac")
var started: [Double] = []
for run in 0..<(runs + 3) {
    let first = TrackID(UInt64(1000 + 2 * run))
    let second = TrackID(UInt64(1001 + 2 * run))
    guard
        timed(
            { $0 == .stateChanged(.playing) },
            { engine.load(EngineTrack(id: first, url: long), at: .zero, playing: true) }) != nil
    else { fatalError("no playback") }
    engine.setNext(EngineTrack(id: second, url: next))
    // No event says the next track is prepared (its source open); a local file's takes
    // well under this.
    usleep(300_000)
    guard
        let elapsed = timed(
            { $0 == .trackStarted(second) },
            { engine.load(EngineTrack(id: second, url: next), at: .zero, playing: true) })
    else { fatalError("the prepared track never started") }
    if run >= 3 { started.append(elapsed) }
    engine.stop()
}
engine.shutdown()

print("")
print("| what | median; p95; max | target |")
print("|---|---|---|")
print("| SetPosition 80 % / 20 % of a 3-min MP3 → seeked | \(summary(seeked)) | — |")
print("| SetPosition 80 % / 20 % of a 3-min MP3 → position advancing there | \(summary(landed)) | ≤ 10 ms |")
print("| Next to the prepared track (setNext, then load) → its first audio | \(summary(started)) | ≤ 5 ms |")
