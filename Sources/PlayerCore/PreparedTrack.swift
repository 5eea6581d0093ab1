/// Where one upcoming track of the preload window (``PreloadPlan``) stands: its stage and how
/// much of it is cached. The preloader fills it in; clients read it (D-Bus `Preloads`).
public struct PreparedTrack: Sendable, Equatable {
    /// The track's URL.
    public var url: String
    /// The ``PreloadPlan/Stage`` by its raw value: waiting, paused, fetching-head, head-ready,
    /// whole (handed to the engine, the rest downloading) or complete.
    public var stage: String
    /// The bytes its head (prefix and tail) takes.
    public var headBytes: Int64
    /// Whether the head is cached: the track starts with no network.
    public var headReady: Bool
    /// Bytes of it cached.
    public var cachedBytes: Int64
    /// Its length, when known (nil for local files).
    public var length: Int64?
    /// Whether every byte is here (local files always are).
    public var complete: Bool
    /// Why preloading it failed, if it did.
    public var error: String?

    /// Creates a description.
    public init(
        url: String, stage: String, headBytes: Int64, headReady: Bool, cachedBytes: Int64, length: Int64?,
        complete: Bool, error: String? = nil
    ) {
        self.url = url
        self.stage = stage
        self.headBytes = headBytes
        self.headReady = headReady
        self.cachedBytes = cachedBytes
        self.length = length
        self.complete = complete
        self.error = error
    }
}
