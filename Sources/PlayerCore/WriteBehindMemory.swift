import Dispatch
import Synchronization

/// A ``PlaybackMemory`` whose writes reach the store it wraps on a serial queue of their own,
/// so that the player never waits for the disk (a SQLite commit and its sync can take
/// hundreds of milliseconds on a slow disk, and every MPRIS answer would wait with it).
/// Reads see every write asked for, written yet or not; a burst of session saves writes only
/// the newest. ``flush()`` waits for what was asked so far, for shutdown.
public final class WriteBehindMemory: PlaybackMemory {
    private struct Pending {
        /// Positions saved (or forgotten: nil) and not yet written, by key.
        var positions: [String: SavedPosition?] = [:]
        /// The newest session saved and not yet written.
        var session: SavedSession?
    }

    private let store: PlaybackMemory
    private let writes = DispatchQueue(label: "spool.state.writes")
    private let pending = Mutex(Pending())

    /// Wraps `store`, which from now on is written on this memory's queue only.
    public init(_ store: PlaybackMemory) {
        self.store = store
    }

    /// The saved position of the track with this key.
    public func position(forKey key: String) -> SavedPosition? {
        if let waiting = pending.withLock({ $0.positions[key] }) { return waiting }
        return store.position(forKey: key)
    }

    /// Saves (replaces) a track's position.
    public func save(_ position: SavedPosition) {
        pending.withLock { $0.positions[position.key] = .some(position) }
        writes.async { [self] in
            store.save(position)
            pending.withLock { if $0.positions[position.key] == .some(position) { $0.positions[position.key] = nil } }
        }
    }

    /// Forgets a track's position.
    public func forgetPosition(forKey key: String) {
        pending.withLock { $0.positions[key] = .some(nil) }
        writes.async { [self] in
            store.forgetPosition(forKey: key)
            pending.withLock { if $0.positions[key] == .some(nil) { $0.positions[key] = nil } }
        }
    }

    /// The saved session, if any.
    public func session() -> SavedSession? {
        pending.withLock { $0.session } ?? store.session()
    }

    /// Saves (replaces) the session: the newest one waiting is written, once.
    public func save(_ session: SavedSession) {
        pending.withLock { $0.session = session }
        writes.async { [self] in
            guard let newest = pending.withLock({ $0.session }) else { return }  // written by an earlier turn
            store.save(newest)
            pending.withLock { if $0.session == newest { $0.session = nil } }
        }
    }

    /// Adds a song heard to the history, written in order with the positions and the session.
    public func recordHeard(_ song: HeardSong) {
        writes.async { [self] in store.recordHeard(song) }
    }

    /// The songs heard, newest first, at most `limit`: read on the write queue, after every write
    /// asked for before the call, so it waits while the store writes. Reads are rare (a listener
    /// asking), so no copy of the songs in flight is kept as it is of positions.
    public func heardSongs(limit: Int) -> [HeardSong] {
        writes.sync { store.heardSongs(limit: limit) }
    }

    /// Returns once every write asked for before the call has reached the store.
    public func flush() {
        writes.sync {}
    }

    /// ``flush()`` without holding the caller's thread.
    public func written() async {
        await withCheckedContinuation { continuation in writes.async { continuation.resume() } }
    }
}
