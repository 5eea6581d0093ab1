import EngineAPI
import PlayerCore

extension MPRISService {
    /// The position to show beside the published metadata (the player corrects it, see
    /// ``ShownPosition``): these properties publish a flush after the player.
    func shownPosition() -> Duration {
        let shown = published.withLock { state in
            state.snapshot.nowPlaying.map { ShownPosition.Shown(track: $0.entry.id, length: $0.duration) }
        }
        return player.position(beside: shown)
    }
}
