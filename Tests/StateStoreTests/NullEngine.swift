import EngineAPI
import Foundation

/// An engine that does nothing, for tests of what surrounds the player.
final class NullEngine: PlaybackEngine {
    func setEventHandler(_ handler: @escaping @Sendable (EngineEvent) -> Void) {}
    func load(_ track: EngineTrack, at position: Duration, playing: Bool) {}
    func setNext(_ track: EngineTrack?) {}
    func setRate(_ rate: Double) {}
    var supportedRates: ClosedRange<Double> { 0.5...2.0 }
    func play() {}
    func pause() {}
    func stop() {}
    func seek(to position: Duration) {}
    func setVolume(_ volume: Double) {}
    func position() -> Duration? { nil }
    func shutdown() {}
}
