import EngineAPI

/// The position shown beside a track's metadata. Every correction of what the engine hears is
/// made here, and only here:
/// - the machine's own place wins while the engine has none to give: a restored track not yet
///   loaded, a resume position until its seek lands, a failed track's place;
/// - across a gapless hand-over the engine moves to the new track one event before the player,
///   and the player one flush before a reader's properties: while the track heard is not the one
///   whose metadata is shown, that track's end is shown (its last samples were just heard), never
///   the new track's first second under the old title.
///
/// Pure: the player calls it with what it holds, a reader with what it shows.
public enum ShownPosition {
    /// The track whose metadata a reader shows, and its length when known.
    public struct Shown: Sendable, Equatable {
        /// The track named by the metadata.
        public var track: TrackID
        /// Its length, when known.
        public var length: Duration?

        /// Creates the description of what a reader shows.
        public init(track: TrackID, length: Duration?) {
            self.track = track
            self.length = length
        }
    }

    /// The position to show.
    /// - Parameters:
    ///   - place: the machine's place, when it overrides the engine (see ``PlaybackMachine/shownPosition``).
    ///   - heard: what the engine hears, and in which track; nil when nothing is loaded.
    ///   - shown: the track whose metadata is shown beside the position; nil when none or not known.
    public static func position(place: Duration?, heard: HeardPosition?, beside shown: Shown?) -> Duration {
        if let place { return place }
        guard let heard else { return .zero }
        guard let track = heard.track, let shown, shown.track != track else { return heard.position }
        return shown.length ?? heard.position
    }
}
