import ByteSourceAPI
import CGStreamer
import EngineAPI
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import GStreamerEngine

/// A source whose open never completes: a load of it stays opening.
private final class NeverOpeningSource: ByteSource {
    func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {}
    func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome { .pending }
    func cancelPendingReads() {}
    func close() {}
}

@Suite("Shutting the engine down")
struct ShutdownTests {
    /// A load whose source is still opening has taken the pipeline to READY with no track in it.
    /// Shut down then, the pipeline still ends at NULL (GStreamer disposes of an element in any
    /// other state with a critical warning, its device left open), and work that comes due on
    /// the control queue afterwards (a watchdog, a deferred report) never runs on it.
    @Test func aLoadStillOpeningAtShutdownLeavesThePipelineAtNullAndNothingRunsAfter() async throws {
        let fixtures = try Fixtures.shared()
        let engine = try GStreamerEngine(audioSink: "fakesink sync=false") { url throws(MediaSourceError) in
            url.lastPathComponent == "never-opens" ? NeverOpeningSource() as ByteSource : MemoryByteSource(file: url)
        }
        let recorder = EventRecorder()
        engine.setEventHandler { recorder.record($0) }
        engine.load(EngineTrack(id: TrackID(1), url: fixtures.fixture(.flac).url), at: .zero, playing: true)
        #expect(await waitForPosition(engine, atLeast: .milliseconds(100)), "\(recorder.all)")
        engine.load(
            EngineTrack(id: TrackID(2), url: URL(fileURLWithPath: "/nonexistent/never-opens")), at: .zero,
            playing: true)
        engine.control.sync {}  // the load ran: the first track is torn down, the second opens
        let playbin = try #require(gst_object_ref(UnsafeMutableRawPointer(engine.playbin)))
        defer { gst_object_unref(playbin) }
        var before = GST_STATE_VOID_PENDING
        gst_element_get_state(engine.playbin, &before, nil, 0)
        #expect(before == GST_STATE_READY, "the case this test is about")

        engine.shutdown()
        var after = GST_STATE_VOID_PENDING
        gst_element_get_state(playbin.assumingMemoryBound(to: GstElement.self), &after, nil, 0)
        #expect(after == GST_STATE_NULL)
        let ran = Mutex(false)
        engine.onControl { ran.withLock { $0 = true } }
        engine.onControl(at: .now()) { ran.withLock { $0 = true } }
        let later = DispatchSemaphore(value: 0)
        engine.control.asyncAfter(deadline: .now() + .milliseconds(50)) { later.signal() }
        later.wait()
        #expect(!ran.withLock { $0 }, "work ran on a shut-down pipeline")
    }

    /// A daemon told to stop as it starts shuts its engine down during the pipeline's warm-up,
    /// which waits for the bus thread to pass its messages: the bus thread reads on until the
    /// control queue's last work is done, so the warm-up ends at once instead of after its limit.
    @Test func aShutdownDuringTheWarmUpLetsTheBusPassItsMessages() async throws {
        let engine = try GStreamerEngine(audioSink: "fakesink sync=false") { url throws(MediaSourceError) in
            MemoryByteSource(file: url)
        }
        let began = await onOwnThread { engine.warmUpBegan.wait(timeout: .now() + 20) }
        #expect(began == .success, "the warm-up never began")
        await onOwnThread { engine.shutdown() }
        #expect(!engine.shared.withLock { $0.warmUpMissedItsMarker })
    }
}
