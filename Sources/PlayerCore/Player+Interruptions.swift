import EngineAPI

/// The sound server's requests to make way for another stream, executed as
/// ``InterruptionPolicy`` decides.
extension Player {
    /// The engine relayed a request of the sound server: pause for a call, or play on after it.
    func soundServerAsked(_ request: SoundServerRequest) {
        let action = interruptions.soundServer(request, status: state.status)
        switch action {
        case .none:
            log.debug("the sound server asks to \(request); nothing to do (\(state.status.rawValue))")
        case .pause:
            log.info("pausing: the sound server gives another stream precedence")
            pausePlayback()
        case .resume:
            log.info("playing on: the sound server lets the interrupted track go on")
            showInterruption()
            startPlayback()
        }
        showInterruption()
    }

    /// The listener acted on the transport: an interruption no longer resumes by itself.
    func listenerActed() {
        interruptions.listenerActed()
        showInterruption()
    }

    /// Makes the snapshot say whether playback is interrupted, and has the engine keep its
    /// output stream meanwhile: the server tells the end of the call to that stream only.
    private func showInterruption() {
        let interrupted = interruptions.interrupted
        guard state.interrupted != interrupted else { return }
        engine.keepOutput(interrupted)
        update { $0.interrupted = interrupted }
    }
}
