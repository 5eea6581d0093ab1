import ByteSourceAPI
import EngineAPI
import Foundation
import GStreamerEngine
import MediaSource
import Synchronization
import TestSupport
import Testing

/// A file source that records what the engine tells it.
final class HintRecordingSource: ByteSource {
    private let file: FileByteSource
    let byteRates = Mutex<[Double]>([])

    init(path: String) { file = FileByteSource(path: path) }

    func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        file.open(completion)
    }
    func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        file.read(at: offset, maxLength: maxLength, wake: wake)
    }
    func cancelPendingReads() { file.cancelPendingReads() }
    func close() { file.close() }
    func setBackground(_ background: Bool) {}
    func setByteRate(_ bytesPerSecond: Double) { byteRates.withLock { $0.append(bytesPerSecond) } }
}

@Suite("What the engine tells its sources and the player")
struct SourceHintsTests {
    /// The source's wait-or-seek rule counts "3 s of audio": it needs the stream's byte rate,
    /// which only the engine learns (length over duration).
    @Test func theSourceLearnsTheByteRateOnceTheDurationIsKnown() throws {
        let fixture = try Fixtures.shared().fixture(.flac)
        let made = Mutex<HintRecordingSource?>(nil)
        let engine = try GStreamerEngine(audioSink: "fakesink sync=false") { url throws(MediaSourceError) in
            let source = HintRecordingSource(path: url.path)
            made.withLock { $0 = source }
            return source
        }
        defer { engine.shutdown() }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        engine.load(EngineTrack(id: TrackID(1), url: fixture.url), at: .zero, playing: false)
        guard
            case .described(_, _, let duration?)? = recorder.waitFor({
                if case .described(_, _, _?) = $0 { true } else { false }
            })
        else {
            Issue.record("no duration: \(recorder.all)")
            return
        }
        let size = Double(try Data(contentsOf: fixture.url).count)
        let rate = try #require(made.withLock { $0 }?.byteRates.withLock { $0.last }, "no byte rate was set")
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        #expect(abs(rate - size / seconds) < 1, "rate \(rate), expected \(size / seconds)")
    }

    /// Found by the kill -9 test: between a load and its start, the old track's position was
    /// reported (and saved) as the new track's.
    @Test func aQueuedLoadReportsItsStartNotTheOldTracksPosition() async throws {
        let fixtures = try Fixtures.shared()
        let (engine, _) = try fileEngine(audioSink: "fakesink sync=true")
        defer { engine.shutdown() }
        engine.load(EngineTrack(id: TrackID(1), url: fixtures.fixture(.flac).url), at: .zero, playing: true)
        #expect(await waitForPosition(engine, atLeast: .milliseconds(1500)))
        engine.load(EngineTrack(id: TrackID(2), url: fixtures.fixture(.wav).url), at: .zero, playing: true)
        let right = engine.position()
        #expect(
            right == nil || right! < .milliseconds(500), "reported \(String(describing: right)) right after the load")
    }
}
