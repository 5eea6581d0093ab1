// Measures the engine: time from a play command to the first audio sample on a
// local (fully cached) file, for several formats.
//
//   swift run -c release EngineBench [runs]
import ByteSourceAPI
import EngineAPI
import Foundation
import GStreamerEngine
import MediaSource
import Synchronization

/// Makes a tone file with gst-launch-1.0.
func makeTone(_ path: String, encoder: [String]) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
    process.arguments =
        ["-q", "audiotestsrc", "num-buffers=400", "freq=440", "!", "audioconvert", "!"] + encoder
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
