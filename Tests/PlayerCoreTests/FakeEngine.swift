import EngineAPI
import Foundation
import Synchronization

/// An engine that records commands and lets tests play its events back.
final class FakeEngine: PlaybackEngine {
    enum Command: Equatable {
        case load(TrackID, URL, Duration, playing: Bool)
        case play, pause, stop, shutdown
        case seek(Duration)
        case volume(Double)
        case next(TrackID?)
        case rate(Double)
        case keepOutput(Bool)
    }

    private let state = Mutex<(handler: (@Sendable (EngineEvent) -> Void)?, commands: [Command], position: Duration?)>(
        (nil, [], nil))

    var commands: [Command] { state.withLock { $0.commands } }

    /// The loads so far: (track, position, playing).
    var loads: [(TrackID, Duration, Bool)] {
        commands.compactMap { if case .load(let id, _, let at, let playing) = $0 { (id, at, playing) } else { nil } }
    }

    /// Sends an event to the player as the real engine would: after a failure it has
    /// forgotten the track and reports no position.
    func send(_ event: EngineEvent) {
        let handler = state.withLock { state in
            if case .failed = event { state.position = nil }
            return state.handler
        }
        handler?(event)
    }

    /// Sets what `position()` answers.
    func setPosition(_ position: Duration?) { state.withLock { $0.position = position } }

    func setEventHandler(_ handler: @escaping @Sendable (EngineEvent) -> Void) {
        state.withLock { $0.handler = handler }
    }
    func load(_ track: EngineTrack, at position: Duration, playing: Bool) {
        record(.load(track.id, track.url, position, playing: playing))
    }
    func setNext(_ track: EngineTrack?) { record(.next(track?.id)) }
    func setRate(_ rate: Double) { record(.rate(rate)) }
    var supportedRates: ClosedRange<Double> { 0.5...2.0 }
    func play() { record(.play) }
    func pause() { record(.pause) }
    func keepOutput(_ keep: Bool) { record(.keepOutput(keep)) }
    func stop() { record(.stop) }
    func seek(to position: Duration) { record(.seek(position)) }
    func setVolume(_ volume: Double) { record(.volume(volume)) }
    func position() -> Duration? { state.withLock { $0.position } }
    func shutdown() { record(.shutdown) }

    private func record(_ command: Command) { state.withLock { $0.commands.append(command) } }
}
