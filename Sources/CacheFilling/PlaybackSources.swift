import FoundationEssentials
import MediaSource
import Synchronization

/// The http sources playback opened, looked up by URL, so clients and the preloader can ask
/// how their downloads go, and every one told at once when metered rules start or stop, so a download running past the
/// metered window stops and one held back goes on. Weak: a source lives as long as the engine
/// holds it. Prefetches are not here: the user asked for them, and they are not limited.
public final class PlaybackSources: Sendable {
    private final class Weak: @unchecked Sendable {
        weak var source: HTTPByteSource?
        init(_ source: HTTPByteSource) { self.source = source }
    }

    private struct State {
        /// Whether metered rules are in force. Under the same lock as the sources, so a source
        /// registered during a switch never keeps the old rules.
        var metered = false
        /// Every live source, an older one of a URL still playing included.
        var all: [Weak] = []
        /// The newest source of each URL.
        var byURL: [String: Weak] = [:]
    }

    private let state = Mutex(State())

    /// An empty registry, with metered rules off.
    public init() {}

    /// Remembers `source` as the one playing `url` and applies the metered rules in force to
    /// it (call before it opens) and to every later switch.
    public func register(_ source: HTTPByteSource, for url: URL) {
        state.withLock { state in
            state.all = state.all.filter { $0.source != nil } + [Weak(source)]
            state.byURL = state.byURL.filter { $0.value.source != nil }
            state.byURL[url.absoluteString] = Weak(source)
            if state.metered { source.setMetered(true) }
        }
    }

    /// The live source for `url`, if any.
    public func source(for url: URL) -> HTTPByteSource? {
        state.withLock { $0.byURL[url.absoluteString]?.source }
    }

    /// Whether metered rules are in force.
    public var metered: Bool { state.withLock { $0.metered } }

    /// Switches metered rules on or off for every live source.
    public func setMetered(_ metered: Bool) {
        state.withLock { state in
            state.metered = metered
            state.all = state.all.filter { $0.source != nil }
            for weak in state.all { weak.source?.setMetered(metered) }
        }
    }
}
