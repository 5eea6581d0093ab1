import EngineAPI
import Foundation
import Synchronization

/// A ``PlaybackEngine`` without GStreamer, for tests of what sits above the engine (the player
/// core, the state store, MPRIS). It records every command, and what the player can ask of it
/// (`position()`, `heardPosition()`) follows the commands and events the way the real engine's
/// does: a load reports its start position, a seek its target, a stop or a failure forgets the
/// track, a gapless start moves to the next track.
///
/// Events: a scripted engine (the default) sends only what the test passes to ``send(_:)`` or
/// the helpers (``fail(_:kind:)``, ``endTrack()``); a reacting engine (`reacting: true`) also
/// answers each command with the events the real engine sends for it, in its order. Events are
/// delivered on the calling thread, in order; the player queues them for its actor.
public final class FakeEngine: PlaybackEngine {
    /// A command the engine received.
    public enum Command: Equatable, Sendable {
        /// `load(_:at:playing:)`: the track, its URL, the start and whether it plays.
        case load(TrackID, URL, Duration, playing: Bool)
        /// The transport commands.
        case play, pause, stop, shutdown
        /// `seek(to:)`.
        case seek(Duration)
        /// `setVolume(_:)`, as asked.
        case volume(Double)
        /// `setNext(_:)`.
        case next(TrackID?)
        /// `setRate(_:)`, as asked.
        case rate(Double)
        /// `keepOutput(_:)`.
        case keepOutput(Bool)
    }

    private struct State {
        var handler: (@Sendable (EngineEvent) -> Void)?
        var commands: [Command] = []
        var position: Duration?
        /// The track the engine holds (nil: idle), and the one prepared to follow it.
        var loaded: TrackID?
        var next: TrackID?
        /// Loads of these URLs fail to open (reacting engine).
        var unplayable: [URL: EngineError] = [:]
    }

    private let state = Mutex(State())
    private let reacting: Bool
    /// The length a reacting engine reports for every track (nil: none, as for a stream).
    public let trackLength: Duration?
    /// Whether a reacting engine reports its tracks seekable.
    public let seekable: Bool

    /// Creates an engine; with `reacting`, commands are answered with events (every track
    /// `trackLength` long and `seekable` as given).
    public init(reacting: Bool = false, trackLength: Duration? = .seconds(300), seekable: Bool = true) {
        self.reacting = reacting
        self.trackLength = trackLength
        self.seekable = seekable
    }

    /// Every command so far, in order.
    public var commands: [Command] { state.withLock { $0.commands } }

    /// The loads so far: (track, position, playing).
    public var loads: [(TrackID, Duration, Bool)] {
        commands.compactMap { if case .load(let id, _, let at, let playing) = $0 { (id, at, playing) } else { nil } }
    }

    /// The track the engine holds, if any.
    public var loadedTrack: TrackID? { state.withLock { $0.loaded } }

    /// Makes every later load of `url` fail to open with `error`, as a missing file or a refused
    /// connection does (reacting engine).
    public func failOpening(_ url: URL, with error: EngineError) {
        state.withLock { $0.unplayable[url] = error }
    }

    /// Sends an event to the player, first changing what the engine reports as the real one
    /// does: a failure forgets the track and its position; a start of the prepared track makes
    /// it the loaded one.
    public func send(_ event: EngineEvent) {
        let handler = state.withLock { state in
            switch event {
            case .failed, .stateChanged(.idle):
                state.loaded = nil
                state.next = nil
                state.position = nil
            case .trackStarted(let id) where id == state.next:
                state.loaded = id
                state.next = nil
                state.position = .zero
            default:
                break
            }
            return state.handler
        }
        handler?(event)
    }

    /// Fails the loaded track as a pipeline error does: the error carries where it was, then
    /// the engine is idle.
    public func fail(_ message: String, kind: FailureKind = .transient) {
        let (id, position) = state.withLock { ($0.loaded, $0.position) }
        send(.failed(id, EngineError(message, kind: kind, position: position)))
    }

    /// The loaded track plays to its end: the prepared next track starts without a gap (no
    /// end of track for the one it follows), or the track ends.
    public func endTrack() {
        let (loaded, next) = state.withLock { ($0.loaded, $0.next) }
        guard let loaded else { return }
        if let next {
            send(.nextQueued(next))
            send(.trackStarted(next))
            if let trackLength { send(.described(next, TrackTags(), duration: trackLength)) }
        } else {
            if let trackLength { setPosition(trackLength) }
            send(.endOfTrack(loaded))
        }
    }

    /// Sets what `position()` answers.
    public func setPosition(_ position: Duration?) { state.withLock { $0.position = position } }

    // MARK: PlaybackEngine

    public func setEventHandler(_ handler: @escaping @Sendable (EngineEvent) -> Void) {
        state.withLock { $0.handler = handler }
    }

    public func load(_ track: EngineTrack, at position: Duration, playing: Bool) {
        let failure = state.withLock { state -> EngineError? in
            state.commands.append(.load(track.id, track.url, position, playing: playing))
            state.loaded = track.id
            state.next = nil
            state.position = position
            return state.unplayable[track.url]
        }
        guard reacting else { return }
        if let failure {
            send(.failed(track.id, EngineError(failure.message, kind: failure.kind, position: position)))
            return
        }
        send(.seekable(track.id, seekable))
        send(.trackStarted(track.id))
        if let trackLength { send(.described(track.id, TrackTags(), duration: trackLength)) }
        send(.stateChanged(playing ? .playing : .paused))
    }

    public func setNext(_ track: EngineTrack?) {
        state.withLock { state in
            state.commands.append(.next(track?.id))
            if state.loaded != nil { state.next = track?.id }
        }
    }

    public func setRate(_ rate: Double) { record(.rate(rate)) }
    public var supportedRates: ClosedRange<Double> { 0.5...2.0 }

    public func play() {
        let loaded = record(.play)
        if reacting, loaded != nil { send(.stateChanged(.playing)) }
    }

    public func pause() {
        let loaded = record(.pause)
        if reacting, loaded != nil { send(.stateChanged(.paused)) }
    }

    public func keepOutput(_ keep: Bool) { record(.keepOutput(keep)) }

    public func stop() {
        record(.stop)
        state.withLock { state in
            state.loaded = nil
            state.next = nil
            state.position = nil
        }
        if reacting { send(.stateChanged(.idle)) }
    }

    public func seek(to position: Duration) {
        let loaded = state.withLock { state -> TrackID? in
            state.commands.append(.seek(position))
            if state.loaded != nil { state.position = position }
            return state.loaded
        }
        if reacting, let loaded { send(.seeked(loaded, position: position)) }
    }

    public func setVolume(_ volume: Double) { record(.volume(volume)) }

    public func position() -> Duration? { state.withLock { $0.position } }

    public func heardPosition() -> HeardPosition? {
        state.withLock { state in state.position.map { HeardPosition(track: state.loaded, position: $0) } }
    }

    public func shutdown() {
        record(.shutdown)
        state.withLock { state in
            state.loaded = nil
            state.next = nil
            state.position = nil
        }
    }

    /// Records `command`; returns the track loaded at the time.
    @discardableResult
    private func record(_ command: Command) -> TrackID? {
        state.withLock { state in
            state.commands.append(command)
            return state.loaded
        }
    }
}
