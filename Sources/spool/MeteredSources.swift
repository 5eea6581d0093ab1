import MediaSource
import Synchronization

/// The cached sources playback opened, told at once when metered rules start or stop, so a
/// download running past the metered window stops and one held back goes on. Weak: a source
/// lives as long as the engine holds it. Prefetches are not here: the user asked for them.
final class MeteredSources: Sendable {
    private final class Weak: @unchecked Sendable {
        weak var source: CachedByteSource?
        init(_ source: CachedByteSource) { self.source = source }
    }

    /// Whether the rules are in force, and the sources to tell. One lock for both, so a source
    /// registered during a switch never keeps the old rules.
    private let state = Mutex<(metered: Bool, sources: [Weak])>((false, []))

    /// Applies the rules in force to `source` (before it opens) and to every later switch.
    func follow(_ source: CachedByteSource) {
        state.withLock { state in
            state.sources = state.sources.filter { $0.source != nil } + [Weak(source)]
            if state.metered { source.setMetered(true) }
        }
    }

    /// Switches every live source.
    func setMetered(_ metered: Bool) {
        state.withLock { state in
            state.metered = metered
            state.sources = state.sources.filter { $0.source != nil }
            for weak in state.sources { weak.source?.setMetered(metered) }
        }
    }
}
