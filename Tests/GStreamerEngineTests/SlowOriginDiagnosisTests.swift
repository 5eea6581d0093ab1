import ByteSourceAPI
import EngineAPI
import Fetcher
import Foundation
import GStreamerEngine
import MediaSource
import RangeCache
import Synchronization
import TestSupport
import Testing

/// Diagnosis rig (not a regression test): runs only with DIAG_FILE set. DIAG_RATE (B/s),
/// DIAG_CHUNKED, DIAG_NORANGE, DIAG_SEEK (s) after DIAG_SEEK_AFTER (s), DIAG_START (s),
/// DIAG_NEXT (a file queued next), DIAG_OBSERVE (s), DIAG_NOEXT (serve at /t). With
/// SPOOL_LOG=debug and GST_DEBUG (default:6 shows the type finders' peeks).
/// Logs every read of the source (offset, length, outcome), every cancel (seek-data / flush),
/// the engine's events and its position, with times since the load.
final class LoggingSource: ByteSource {
    let inner: ByteSource
    let t0: ContinuousClock.Instant
    init(_ inner: ByteSource, t0: ContinuousClock.Instant) {
        self.inner = inner
        self.t0 = t0
    }
    func say(_ text: String) { diagSay(t0, text) }
    func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        say("open")
        inner.open { [self] result in
            say("opened \(result)")
            completion(result)
        }
    }
    func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        let outcome = inner.read(at: offset, maxLength: maxLength) { [self] in
            say("wake for read \(offset)+\(maxLength)")
            wake()
        }
        let text: String
        switch outcome {
        case .data(let d): text = "data \(d.count)"
        case .pending: text = "PENDING"
        case .endOfStream: text = "EOS"
        case .failed(let e): text = "failed \(e)"
        }
        say("read \(offset)+\(maxLength) -> \(text)")
        return outcome
    }
    func cancelPendingReads() {
        say("cancelPendingReads")
        inner.cancelPendingReads()
    }
    func close() {
        say("close")
        inner.close()
    }
    func setBackground(_ background: Bool) { inner.setBackground(background) }
    func holds(_ range: Range<Int64>) -> Bool { inner.holds(range) }
    func setByteRate(_ bytesPerSecond: Double) {
        say("setByteRate \(Int(bytesPerSecond))")
        inner.setByteRate(bytesPerSecond)
    }
}

func diagSay(_ t0: ContinuousClock.Instant, _ text: String) {
    let elapsed = ContinuousClock.now - t0
    let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    FileHandle.standardError.write(Data(String(format: "DIAG %9.1f ms  %@\n", ms, text).utf8))
}

@Suite("Slow origin diagnosis", .serialized)
struct SlowOriginDiagnosisTests {
    @Test func diagnose() throws {
        let env = ProcessInfo.processInfo.environment
        guard let file = env["DIAG_FILE"] else { return }
        let rate = Int(env["DIAG_RATE"] ?? "48000")!
        let observe = Double(env["DIAG_OBSERVE"] ?? "20")!
        let seekTo = env["DIAG_SEEK"].flatMap(Double.init)
        let seekAfter = Double(env["DIAG_SEEK_AFTER"] ?? "1")!
        let startAt = Double(env["DIAG_START"] ?? "0")!
        var faults = OriginFaults(bytesPerSecond: rate)
        faults.chunked = env["DIAG_CHUNKED"] != nil
        faults.ignoresRange = env["DIAG_NORANGE"] != nil
        let body = try Data(contentsOf: URL(fileURLWithPath: file))
        let origin = try FaultOrigin()
        let ext = URL(fileURLWithPath: file).pathExtension
        let types = [
            "mp3": "audio/mpeg", "flac": "audio/flac", "opus": "audio/ogg", "ogg": "audio/ogg", "m4a": "audio/mp4",
        ]
        let path = env["DIAG_NOEXT"] != nil ? "/t" : "/t.\(ext)"
        origin.serve(
            OriginResource(body, contentType: types[ext] ?? "application/octet-stream"), at: path, faults: faults)
        let next = env["DIAG_NEXT"]
        if let next {
            origin.serve(
                OriginResource(try Data(contentsOf: URL(fileURLWithPath: next))), at: "/n", faults: OriginFaults())
        }
        let cacheDirectory = try TemporaryDirectory(prefix: "spool-cache")
        let cache = try RangeCache(directory: cacheDirectory.url)
        defer { cache.close() }
        let fetcher = Fetcher(userAgent: "Spool/test")
        let t0 = ContinuousClock.now
        let engine = try GStreamerEngine(audioSink: "fakesink sync=true") { url throws(MediaSourceError) in
            guard let entry = try? cache.entry(for: url) else { throw .unavailable("no cache entry") }
            return LoggingSource(HTTPByteSource(url: url, entry: entry, fetcher: fetcher), t0: t0)
        }
        defer { engine.shutdown() }
        engine.setEventHandler { event in diagSay(t0, "event \(event)") }
        diagSay(t0, "LOAD \(file) size \(body.count) at \(rate) B/s faults \(faults)")
        engine.load(
            EngineTrack(id: TrackID(1), url: origin.url(for: path)), at: .milliseconds(Int64(startAt * 1000)),
            playing: true)
        if next != nil { engine.setNext(EngineTrack(id: TrackID(2), url: origin.url(for: "/n"))) }
        var last: Duration? = nil
        var seeked = false
        let deadline = t0 + .milliseconds(Int64(observe * 1000))
        while ContinuousClock.now < deadline {
            if let seekTo, !seeked, ContinuousClock.now - t0 >= .milliseconds(Int64(seekAfter * 1000)) {
                seeked = true
                diagSay(t0, "SEEK to \(seekTo)")
                engine.seek(to: .milliseconds(Int64(seekTo * 1000)))
            }
            let position = engine.position()
            if position != last {
                diagSay(t0, "position \(position.map { "\($0)" } ?? "nil")")
                last = position
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        for request in origin.requests() {
            diagSay(
                t0,
                "origin served \(request.path) range=\(request.range ?? "-") status=\(request.status) sent=\(request.bodyBytesSent)"
            )
        }
    }
}
