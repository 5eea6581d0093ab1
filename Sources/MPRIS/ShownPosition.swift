import EngineAPI
import PlayerCore

extension MPRISService {
    /// The position to show beside the published metadata. Across a gapless hand-over the
    /// engine moves to the new track one event before the player does, and the player one
    /// flush before these properties: while the position heard belongs to another track than
    /// the one the metadata names, the named track's end is shown (its last samples were
    /// just heard), never the new track's first second under the old title.
    func shownPosition() -> Duration {
        let heard = player.heardPosition()
        guard let track = heard.track else { return heard.position }
        return published.withLock { state in
            guard let shown = state.snapshot.nowPlaying, shown.entry.id != track else { return heard.position }
            return shown.duration ?? heard.position
        }
    }
}
