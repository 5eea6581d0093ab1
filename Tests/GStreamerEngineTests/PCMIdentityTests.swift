import EngineAPI
import Foundation
import GStreamerEngine
import MediaSource
import Synchronization
import Testing
import TestSupport

/// Collects engine events and lets a test await one.
final class EventRecorder: Sendable {
    private let events = Mutex<[EngineEvent]>([])
    private let arrived = DispatchSemaphore(value: 0)

    func record(_ event: EngineEvent) {
        events.withLock { $0.append(event) }
        arrived.signal()
    }

    /// Waits until an event matching `predicate` has been recorded.
    func waitFor(timeout: Double = 20, _ predicate: (EngineEvent) -> Bool) -> EngineEvent? {
        let deadline = DispatchTime.now() + timeout
        while true {
            if let hit = events.withLock({ $0.first(where: predicate) }) { return hit }
            if arrived.wait(timeout: deadline) == .timedOut {
                return events.withLock { $0.first(where: predicate) }
            }
        }
    }

    var all: [EngineEvent] { events.withLock { $0 } }
}

/// Decodes `url` through the engine (appsrc fed by Spool's reader) into raw S16LE PCM.
func decodeThroughEngine(_ url: URL, source: @escaping GStreamerEngine.SourceFactory, into output: URL) throws -> [EngineEvent] {
    let sink = "audioconvert ! audio/x-raw,format=S16LE ! filesink sync=false location=\(output.path)"
    let engine = try GStreamerEngine(audioSink: sink, makeSource: source)
    defer { engine.shutdown() }
    let recorder = EventRecorder()
    engine.setEventHandler { recorder.record($0) }
    engine.load(EngineTrack(id: TrackID(1), url: url), at: .zero, playing: true)
    let end = recorder.waitFor {
        switch $0 {
        case .endOfTrack, .failed: true
        default: false
        }
    }
    #expect(end == .endOfTrack(TrackID(1)), "events: \(recorder.all)")
    return recorder.all
}

/// Decodes `file` with a plain filesrc ! decodebin pipeline into raw S16LE PCM.
func decodeWithFilesrc(_ file: URL, into output: URL) throws {
    let result = try runCommand(
        "gst-launch-1.0",
        ["-q", "filesrc", "location=\(file.path)", "!", "decodebin", "!", "audioconvert", "!",
         "audio/x-raw,format=S16LE", "!", "filesink", "location=\(output.path)"])
    #expect(result.status == 0, "gst-launch failed: \(result.stderr)")
}

@Suite("Decoding through Spool's appsrc", .serialized)
struct PCMIdentityTests {
    @Test(arguments: ["flac", "mp3"])
    func appsrcPathDecodesTheSamePCMAsFilesrc(format: String) throws {
        let dir = try TemporaryDirectory()
        let file = dir.file("tone.\(format)")
        let encoder = format == "flac" ? ["flacenc"] : ["lamemp3enc", "!", "xingmux"]
        let made = try runCommand(
            "gst-launch-1.0",
            ["-q", "audiotestsrc", "num-buffers=100", "freq=440", "!", "audioconvert", "!"] + encoder
                + ["!", "filesink", "location=\(file.path)"])
        #expect(made.status == 0)

        let viaSpool = dir.file("spool.raw")
        let viaFilesrc = dir.file("filesrc.raw")
        _ = try decodeThroughEngine(file, source: { url throws(MediaSourceError) in FileByteSource(path: url.path) }, into: viaSpool)
        try decodeWithFilesrc(file, into: viaFilesrc)
        let spoolPCM = try Data(contentsOf: viaSpool)
        let referencePCM = try Data(contentsOf: viaFilesrc)
        #expect(spoolPCM.count > 100_000)
        #expect(spoolPCM == referencePCM, "spool \(spoolPCM.count) bytes, filesrc \(referencePCM.count) bytes")
    }
}
