import EngineAPI

/// What Spool does when the sound server asks it to make way for another stream (a call).
public enum InterruptionMode: String, Sendable, Equatable, CaseIterable {
    /// Pause, and play on when the server lets the music go on, unless the listener acted meanwhile.
    case pause
    /// Leave playback alone (the server may still mute the stream while the other one plays).
    case ignore
}

/// Decides what the sound server's pause and play requests do to playback, as a phone does
/// with a call: the call pauses the music, its end resumes it, and a listener who paused by hand
/// is never overruled. Pure: the player asks it and executes what it answers; a table tests it.
///
/// The rules:
/// - A pause request while playing pauses; the player is then *interrupted*.
/// - A pause request while paused or stopped changes nothing: the listener's own pause stands,
///   and the server's play request at the end of the call will find no interruption.
/// - A play request while interrupted and still paused resumes; any play request ends the
///   interruption.
/// - Anything the listener does to the transport (play, pause, stop, another track) ends the
///   interruption without resuming: the call's end then changes nothing. A seek, the volume
///   or the rate do not: they say nothing about whether to play.
/// - In ``InterruptionMode/ignore`` no request does anything.
public struct InterruptionPolicy: Sendable, Equatable {
    /// What the player does about a request.
    public enum Action: Sendable, Equatable {
        /// Nothing.
        case none
        /// Pause playback (keeping the position, as a listener's pause does).
        case pause
        /// Play on from where the interruption paused.
        case resume
    }

    /// Whether requests are followed at all.
    public let mode: InterruptionMode
    /// Playback is paused by the sound server and resumes when the server allows it.
    public private(set) var interrupted = false

    /// A policy following `mode`, with no interruption.
    public init(mode: InterruptionMode = .pause) {
        self.mode = mode
    }

    /// The sound server asked for `request` while the player is in `status`: what to do.
    public mutating func soundServer(_ request: SoundServerRequest, status: PlaybackStatus) -> Action {
        guard mode == .pause else { return .none }
        switch request {
        case .pause:
            guard status == .playing else { return .none }
            interrupted = true
            return .pause
        case .play:
            defer { interrupted = false }
            return interrupted && status == .paused ? .resume : .none
        }
    }

    /// The listener played, paused, stopped or changed track: no automatic resume any more.
    public mutating func listenerActed() {
        interrupted = false
    }
}
