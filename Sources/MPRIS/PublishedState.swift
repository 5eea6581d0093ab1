import DBusKit
import EngineAPI
import FoundationEssentials
import PlayerCore

extension MPRISService {
    /// Everything the service publishes and remembers between signals, under one lock: property
    /// reads answer from it without waiting on the player.
    struct Published {
        var snapshot = PlayerSnapshot()
        /// The snapshot as of the last signals sent, for the TrackList signals.
        var signalledSnapshot: PlayerSnapshot?
        /// Player properties as last signalled (or first seen), to send only what changed.
        var signalled: [String: DBusValue]?
        var flushScheduled = false
        /// Why the last input could not be queued (a remote playlist that could not be fetched).
        var inputError: String?
        /// How many calls have replaced the queue: a remote playlist fetched for an older one is dropped.
        var replacements: UInt64 = 0
        /// `LastError` as last signalled.
        var signalledLastError: String?
        /// The lyrics line last signalled, and the timer that follows the lines.
        var lyrics = LyricsState()
        /// The playlist last activated, and the queue replacement it made (it stays active until the next).
        var activePlaylist: (name: String, replacement: UInt64)?
        /// `PlaylistCount`, as last counted off the D-Bus thread (at start, after a playlist was
        /// saved or removed, and whenever the playlists were listed anyway).
        var playlistCount: UInt32 = 0
    }
}
