import FoundationEssentials

/// The byte store of an http source whose bytes may not or cannot go to the disk: no cache, a
/// `no-store` response, a full disk. At most its ``MemoryWindow``'s capacity is held; over it,
/// the window decides what goes (bytes far behind the reader first).
struct MemoryStore {
    private var runs = ByteRuns()
    /// How much is held, and which part.
    let window: MemoryWindow

    /// An empty store bounded by `window`.
    init(window: MemoryWindow) { self.window = window }

    /// Bytes held now (never more than the window's capacity after a ``keep(_:at:reader:)``).
    var count: Int64 { runs.count }

    /// The held ranges, in order.
    var ranges: [Range<Int64>] { runs.ranges }

    /// Up to `maxLength` contiguous bytes from `offset`, or nil if that byte is not held.
    func read(at offset: Int64, maxLength: Int) -> Data? { runs.read(at: offset, maxLength: maxLength) }

    /// Stores `bytes` at `offset`, then trims to the window around `reader`, keeping what a
    /// waiting read `needs`.
    mutating func keep(_ bytes: Data, at offset: Int64, reader: Int64, needed: Range<Int64>?) {
        runs.write(bytes, at: offset)
        if runs.count > window.capacity {
            runs.retain(window.retained(runs.ranges, reader: reader, needed: needed))
        }
    }

    /// Drops every byte (another version of the resource, or the source closed).
    mutating func empty() { runs = ByteRuns() }
}
