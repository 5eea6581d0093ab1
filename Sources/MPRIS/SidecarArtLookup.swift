import Dispatch
import FoundationEssentials
import PlayerCore

extension MPRISService {
    /// How many folders' answers are remembered.
    static let sidecarMemory = 256
    /// How many new folders one queue change reads ahead.
    static let sidecarReadAhead = 32

    /// `snapshot` with the art of its track's folder when the track has none of its own (yet:
    /// an embedded picture read later replaces it, which is a change of its own anyway). The
    /// folders of queued local tracks are read when they are queued, off the D-Bus and player
    /// threads, so a track shows its folder's art with its first change; a folder read too late
    /// patches the published snapshot when it answers. Called with the published state locked.
    func withSidecarArt(_ snapshot: PlayerSnapshot, _ state: inout Published) -> PlayerSnapshot {
        if snapshot.queue != state.snapshot.queue || state.sidecars.isEmpty {
            readFolders(of: snapshot, &state)
        }
        guard let folder = SidecarArt.folder(of: snapshot.nowPlaying), let known = state.sidecars[folder], let known
        else {
            return snapshot
        }
        var patched = snapshot
        patched.nowPlaying?.tags.artURL = known
        return patched
    }

    /// Starts reading the folders of the current and the queued local tracks not read yet.
    private func readFolders(of snapshot: PlayerSnapshot, _ state: inout Published) {
        var folders: [String] = []
        let entries = (snapshot.nowPlaying.map { [$0.entry] } ?? []) + snapshot.queue
        for entry in entries where entry.url.isFileURL && folders.count < Self.sidecarReadAhead {
            let folder = entry.url.deletingLastPathComponent().path
            guard state.sidecars[folder] == nil, !folders.contains(folder) else { continue }
            folders.append(folder)
        }
        guard !folders.isEmpty else { return }
        if state.sidecars.count + folders.count > Self.sidecarMemory { state.sidecars.removeAll() }
        for folder in folders { state.sidecars[folder] = .some(nil) }  // being read: no art until it answers
        artQueue.async { [weak self, folders] in
            let found = folders.map { ($0, SidecarArt.find(in: $0)) }
            guard let self else { return }
            let changed = self.published.withLock { state -> Bool in
                for (folder, art) in found { state.sidecars[folder] = .some(art) }
                guard let folder = SidecarArt.folder(of: state.snapshot.nowPlaying),
                    let art = found.first(where: { $0.0 == folder })?.1
                else { return false }
                state.snapshot.nowPlaying?.tags.artURL = art
                defer { state.flushScheduled = true }
                return !state.flushScheduled
            }
            if changed { self.scheduleFlush() }
        }
    }
}
