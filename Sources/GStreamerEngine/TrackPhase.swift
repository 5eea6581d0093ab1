/// Where the loaded track is in its life in the pipeline, as one value: the engine's handlers
/// (commands on the control queue, messages on the bus thread) change it only through these
/// transitions, and each transition says what the engine does next. Pure: tested without
/// GStreamer.
///
/// A track is *loading* (opening and prerolling; a start position is sought once prerolled),
/// *ready* (prerolled, nothing in flight) or *seeking* (a seek in flight). A rebuild around the
/// open source, for a new rate filter, is a loading that starts where the track was heard; it
/// lasts until its pipeline's restart marker has passed the bus and its own seek is done, and
/// meanwhile the position held at the rebuild is reported.
struct TrackPhase: Equatable, Sendable {
    /// The main stage.
    enum Stage: Equatable, Sendable {
        /// Opening or prerolling. `start` is sought once prerolled (nil: it plays from 0 at
        /// 1.0); `quiet`: that start is where a rate change found the track, not a listener's seek.
        case loading(start: Duration?, quiet: Bool)
        /// Prerolled; nothing in flight.
        case ready
        /// A seek in flight; `reported`: a listener's seek, which ends with a Seeked event (a
        /// seek that only applies a rate does not).
        case seeking(reported: Bool)
        /// The pipeline restarts around a source that begins again at the position held (a
        /// stream that seeks by restarting, ``ResourceInfo/seeksByRestart``): it prerolls
        /// there, and no seek follows. `reported` as for ``seeking(reported:)``.
        case restarting(reported: Bool)
    }

    /// What the engine does after a preroll or a seek is done (ASYNC_DONE).
    enum AfterAsyncDone: Equatable, Sendable {
        /// A message of the pipeline before a rebuild, or of another track: nothing.
        case stale
        /// The rate crossed 1.0 before the track was ready: rebuild for the right filter, at this position.
        case rebuild(at: Duration)
        /// Seek to the start position: `exact` for a local file or a rebuild's restart.
        case seek(to: Duration, exact: Bool)
        /// A seek is done: report it unless `quiet`, then play if wanted.
        case seeked(quiet: Bool)
        /// Nothing pending: play if wanted.
        case resume
    }

    /// What a listener's seek does now.
    enum SeekTiming: Equatable, Sendable {
        /// The track is ready: seek now.
        case now
        /// The track is not prerolled: the seek is its start position.
        case atPreroll
    }

    private(set) var stage: Stage
    /// The bus marker of the rebuild in progress, if any.
    private(set) var rebuildMarker: UInt64?
    /// The position reported while the pipeline answers no query for this track: during a
    /// rebuild, or while a load that replaces the track is queued.
    private(set) var held: Duration?
    /// Where the last seek went: the position while a seek in flight answers no query.
    private(set) var target: Duration?

    /// A track being loaded, to start at `start` (nil: from 0 at rate 1.0).
    static func loading(start: Duration?) -> TrackPhase { TrackPhase(stage: .loading(start: start, quiet: false)) }

    /// A track loaded again where the idle release let go of it: its start is sought exactly
    /// and not reported as a seek.
    static func resuming(at start: Duration?) -> TrackPhase { TrackPhase(stage: .loading(start: start, quiet: true)) }

    /// A track loaded with its source restarted at `start` (``restart(at:marker:reported:)``
    /// without a pipeline before it).
    static func restarted(at start: Duration, reported: Bool) -> TrackPhase {
        var phase = TrackPhase(stage: .restarting(reported: reported))
        phase.held = start
        return phase
    }

    /// A track already playing (handed over without a gap).
    static let ready = TrackPhase(stage: .ready)

    /// Whether the track has prerolled.
    var isPrerolled: Bool {
        if case .loading = stage { return false }
        return true
    }

    /// Whether the track is prerolled with nothing in flight: its position is where it will stay.
    var isSettled: Bool { stage == .ready && rebuildMarker == nil && held == nil }

    /// Whether a rebuild is in progress (its state changes and stream start are not the track's own).
    var isRebuilding: Bool { rebuildMarker != nil }

    /// The position to report: the held one, the start of a loading track, the target of a seek
    /// in flight (the pipeline answers 0 or the old place while it flushes), else the pipeline's,
    /// or where the last seek went when the pipeline answers nothing (just after a seek, on its
    /// way back to PLAYING).
    func reportedPosition(pipeline: () -> Duration?) -> Duration? {
        if let held { return held }
        if case .loading(let start, _) = stage { return start }
        if case .seeking = stage, let target { return target }
        return pipeline() ?? target
    }

    /// A load that replaces this track is queued: until it runs, its start is reported.
    mutating func replaced(startingAt start: Duration) { held = start }

    /// A listener's seek to `target`.
    mutating func listenerSeek(to target: Duration) -> SeekTiming {
        if case .loading = stage {
            stage = .loading(start: target, quiet: false)  // a listener's seek is reported
            if isRebuilding { held = target }
            return .atPreroll
        }
        // A restart in flight held its own target: this one is reported instead.
        if case .restarting = stage { held = nil }
        stage = .seeking(reported: true)
        self.target = target  // reported from now on, before the seek has even left
        return .now
    }

    /// A seek that applies a new rate at the current position (only once prerolled).
    mutating func rateSeek() {
        stage = .seeking(reported: false)
    }

    /// A seek leaves for `position`.
    mutating func aim(at position: Duration) { target = position }

    /// The pipeline is rebuilt around the open source at `position`; `marker` is the restart
    /// marker posted on the bus; at 1.0 and position 0 no seek is needed (nor wanted: an AAC
    /// decoder primes differently after one).
    mutating func rebuild(at position: Duration, marker: UInt64, rateIsOne: Bool) {
        rebuildMarker = marker
        held = position
        stage = .loading(start: position == .zero && rateIsOne ? nil : position, quiet: true)
    }

    /// The pipeline restarts around a source restarted at `position`; `marker` is the restart
    /// marker posted on the bus. The position is held there until the restart has prerolled.
    mutating func restart(at position: Duration, marker: UInt64, reported: Bool) {
        rebuildMarker = marker
        held = position
        target = position
        stage = .restarting(reported: reported)
    }

    /// The pipeline refused a seek: the track is as it was, ready.
    mutating func seekRefused() {
        stage = .ready
        rebuildMarker = nil
        held = nil
    }

    /// A preroll or seek is done. `markersSeen` counts the restart markers the bus passed;
    /// `filterMismatch` says the rate filter in place does not fit the rate; `exactSeeks` says
    /// the track seeks sample-accurately (a local file).
    mutating func asyncDone(markersSeen: UInt64, filterMismatch: Bool, exactSeeks: Bool) -> AfterAsyncDone {
        if let marker = rebuildMarker, marker != markersSeen { return .stale }
        switch stage {
        case .loading(let start, _) where filterMismatch:
            return .rebuild(at: start ?? held ?? .zero)
        case .loading(let start?, let quiet):
            // A rate applied at the start, or the position a rate change found, is not reported.
            stage = .seeking(reported: !(start == .zero || quiet))
            // A restart goes back exactly to what was heard; a listener's start as the track allows.
            return .seek(to: start, exact: quiet || exactSeeks)
        case .loading(nil, _), .ready:
            stage = .ready
            rebuildMarker = nil
            held = nil
            return .resume
        case .seeking(let reported), .restarting(let reported):
            stage = .ready
            rebuildMarker = nil
            held = nil
            return .seeked(quiet: !reported)
        }
    }
}
