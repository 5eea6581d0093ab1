import Dispatch
import FoundationEssentials
import PlayerCore

extension MPRISService {
    /// How many folders' answers are remembered (a folder is read once while its tracks play).
    static let sidecarMemory = 64
    /// How long after a local track's length is known its folder's art is shown: an embedded
    /// picture can arrive in a tag a little after the length, and should be the only art shown.
    static let sidecarSettle: DispatchTimeInterval = .milliseconds(400)

    /// `snapshot` with the art of its track's folder when the track has none of its own. The
    /// folder is read off the D-Bus and player threads, ``sidecarSettle`` after the length is
    /// known, and the published snapshot patched then. Called with the published state locked.
    func withSidecarArt(_ snapshot: PlayerSnapshot, _ state: inout Published) -> PlayerSnapshot {
        guard let folder = SidecarArt.folder(of: snapshot.nowPlaying), let id = snapshot.nowPlaying?.entry.id else {
            return snapshot
        }
        if state.sidecarTrack == id, let known = state.sidecars[folder] {
            var patched = snapshot
            patched.nowPlaying?.tags.artURL = known
            return patched
        }
        guard state.sidecarPending != id else { return snapshot }
        state.sidecarPending = id
        let cached = state.sidecars[folder]
        artQueue.asyncAfter(deadline: .now() + Self.sidecarSettle) { [weak self] in
            let found = cached ?? SidecarArt.find(in: folder)
            guard let self else { return }
            let changed = self.published.withLock { state -> Bool in
                if state.sidecars[folder] == nil, state.sidecars.count >= Self.sidecarMemory { state.sidecars.removeAll() }
                state.sidecars[folder] = .some(found)
                guard state.snapshot.nowPlaying?.entry.id == id, SidecarArt.folder(of: state.snapshot.nowPlaying) == folder
                else { return false }
                state.sidecarTrack = id
                guard let found else { return false }
                state.snapshot.nowPlaying?.tags.artURL = found
                defer { state.flushScheduled = true }
                return !state.flushScheduled
            }
            if changed { self.scheduleFlush() }
        }
        return snapshot
    }
}
