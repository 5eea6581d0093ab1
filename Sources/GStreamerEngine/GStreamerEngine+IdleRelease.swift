import Basics
internal import CGStreamer
import Dispatch
import EngineAPI

/// Letting go of the pipeline after a long pause or stop (see ``IdleRelease``), and bringing a
/// paused track back where it was.
extension GStreamerEngine {
    /// How long the engine waits, paused or stopped, before it lets go of its pipeline.
    public static let defaultIdleRelease: Duration = .seconds(300)

    /// A paused track the engine let go of: what play() loads again, and where.
    struct Released: Sendable {
        var track: EngineTrack
        /// Where it continues; a seek meanwhile moves it.
        var position: Duration
        /// The track prepared to follow it, prepared again when it comes back.
        var next: EngineTrack?
        /// play() is loading it again.
        var resuming = false
    }

    /// On the control queue: the transport changed; starts the wait for the release.
    func transportChanged(to transport: IdleRelease.Transport) {
        guard
            let token = shared.withLock({ state in
                state.idleRelease.transportChanged(to: transport, live: Self.loadedIsLive(state))
            })
        else { return }
        awaitIdleRelease(token)
    }

    /// Whether the loaded track is a live stream.
    static func loadedIsLive(_ state: Shared) -> Bool {
        state.lifecycle.current.flatMap { state.feeders[$0.uri]?.info.live } != nil
    }

    private func awaitIdleRelease(_ token: UInt64) {
        guard let delay = shared.withLock({ $0.idleRelease.delay(live: Self.loadedIsLive($0)) }) else { return }
        control.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds(delay)))) { [weak self] in
            self?.idleWaitEnded(token)
        }
    }

    private func idleWaitEnded(_ token: UInt64) {
        let decision = shared.withLock { state -> IdleRelease.Decision in
            guard state.accepting else { return .stale }
            let settled =
                (state.lifecycle.current?.phase.isSettled ?? true) && state.lifecycle.unannounced == nil
                && state.released?.resuming != true && !state.outputKept
            return state.idleRelease.waitEnded(token, settled: settled)
        }
        switch decision {
        case .stale: break
        case .waitAgain(let token): awaitIdleRelease(token)
        case .release: releasePipeline()
        }
    }

    /// Tears the pipeline down (NULL: decoders, streaming threads, the sink's connection and the
    /// track's source go), keeping the paused track and its position for play(). playbin itself
    /// stays, empty, as it is when the daemon starts. The freed heap goes back to the system:
    /// glibc keeps what the streaming threads' arenas freed until it is trimmed.
    func releasePipeline() {
        let position = position()
        let kept = shared.withLock { state -> Released? in
            if let current = state.lifecycle.current {
                // Set before the teardown, so that the position is reported throughout. A live
                // stream comes back live, from a new start.
                state.released = Released(
                    track: current.track, position: Self.loadedIsLive(state) ? .zero : position ?? .zero,
                    next: state.lifecycle.next?.track)
            }
            return state.released
        }
        teardown()
        gst_element_set_state(output, GST_STATE_NULL)  // the sound server's connection too
        malloc_trim(0)
        if let kept {
            log.info("released the pipeline; \(kept.track.id) continues at \(kept.position.forPeople)")
        } else {
            log.info("released the pipeline")
        }
        emit(.pipelineReleased)
    }

    /// On the control queue, for play(): loads the released track again where it was, with the
    /// track that was prepared to follow it. False when nothing was released.
    func resumeReleased() -> Bool {
        let released = shared.withLock { state -> Released? in
            guard let released = state.released, !released.resuming else { return nil }
            state.released?.resuming = true
            return released
        }
        guard let released else { return false }
        log.info("\(released.track.id): loading again at \(released.position.forPeople) after the release")
        loadNow(released.track, at: released.position, playing: true, resumed: true)
        if let next = released.next { setNext(next) }
        return true
    }
}
