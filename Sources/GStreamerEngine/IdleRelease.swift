import ByteSourceAPI

/// When the engine lets go of its pipeline while nothing plays. Pure: tested by a table
/// without GStreamer.
///
/// A paused pipeline keeps its decoders, streaming threads, audio sink connection and the
/// track's open source; a stopped one (NULL) keeps the heap those threads grew. After `delay`
/// without playing, the engine tears the pipeline down (the track and its position stay, so
/// play() reloads it where it was) and hands the heap back to the system. Every change of the
/// transport starts the wait again; a track that is between states when the wait ends
/// (loading, seeking, a rebuild, a hand-over not yet heard) waits another `delay`, so what
/// the engine keeps is always a settled position. So does a pipeline the player asked to keep
/// (paused by a call: the sound server tells the end of the call to that stream only).
struct IdleRelease: Equatable, Sendable {
    /// What the transport does, as last asked.
    enum Transport: Equatable, Sendable {
        case playing, paused, stopped
    }

    /// What a wait that ended means.
    enum Decision: Equatable, Sendable {
        /// A later change of the transport replaced this wait: nothing.
        case stale
        /// Release the pipeline now.
        case release
        /// The track is between states: wait again, for the wait with this token.
        case waitAgain(token: UInt64)
    }

    /// How long the transport must stay paused or stopped; nil: never release.
    let delay: Duration?
    /// The token of the wait that counts, if any.
    private(set) var armed: UInt64?
    private var issued: UInt64 = 0

    /// A policy that releases after `delay` (nil or zero: never).
    init(delay: Duration?) {
        self.delay = delay.flatMap { $0 > .zero ? $0 : nil }
    }

    /// The transport changed to `transport`: the token of a wait to start (``delay(live:)``),
    /// or nil. `live`: the loaded track is a live stream.
    mutating func transportChanged(to transport: Transport, live: Bool = false) -> UInt64? {
        armed = nil
        guard transport != .playing, delay(live: live) != nil else { return nil }
        return arm()
    }

    /// How long to wait: ``delay``, but for a live stream at most its pause window (then the
    /// stream is let go of, and play() rejoins it live), whether idle releases are on or not.
    func delay(live: Bool) -> Duration? {
        guard live else { return delay }
        return min(delay ?? LiveStation.pauseWindow, LiveStation.pauseWindow)
    }

    /// The wait `token` ended; `settled`: the loaded track (if any) is prerolled with nothing
    /// in flight.
    mutating func waitEnded(_ token: UInt64, settled: Bool) -> Decision {
        guard armed == token else { return .stale }
        guard settled else { return .waitAgain(token: arm()) }
        armed = nil
        return .release
    }

    private mutating func arm() -> UInt64 {
        issued &+= 1
        armed = issued
        return issued
    }
}
