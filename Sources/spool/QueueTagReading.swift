import Basics
import ByteSourceAPI
import Dispatch
import EngineAPI
import FoundationEssentials
import GStreamerEngine
import MediaSource
import PlayerCore
import RangeCache

/// Reads the tags of queued tracks for the player: local files, and http tracks the cache holds
/// completely (read from the cache alone: never a request). One read at a time, on a utility
/// queue of its own, so neither GStreamer's streaming threads, the D-Bus thread nor the player's
/// executor wait for a file.
final class QueueTagReading: QueueTagReader {
    private let cache: RangeCache?
    private let namespace: String
    private let work = DispatchQueue(label: "spool.queue-tags", qos: .utility)
    private let log = Logger(label: "tags")

    /// Reads local files, and complete entries of `cache` (when there is one) in `namespace`.
    init(cache: RangeCache?, namespace: String) {
        self.cache = cache
        self.namespace = namespace
    }

    func holdsAllBytes(of url: URL) -> Bool {
        if url.isFileURL { return true }
        // The index's snapshot: no handle is opened (one would keep the entry from eviction).
        return cache.flatMap { $0.info(for: $0.key(for: url), namespace: namespace) }?.isComplete == true
    }

    func read(_ url: URL) async -> ReadTags? {
        await work.perform { self.readNow(url) }
    }

    private func readNow(_ url: URL) -> ReadTags? {
        let source: ByteSource
        if url.isFileURL {
            source = FileByteSource(path: url.path)
        } else if let cache, let entry = try? cache.entry(for: cache.key(for: url), namespace: namespace, create: false)
        {
            guard let copy = CachedCopySource(entry: entry) else {
                entry.close()
                return nil
            }
            source = copy
        } else {
            return nil
        }
        let clock = ContinuousClock()
        let started = clock.now
        let found = TagProbe.read(source, url: url)
        // The file name only: an http URL may carry a token in its query.
        let name = TagText.clean(url.lastPathComponent) ?? "?"
        log.debug("read ahead \(name): \(found == nil ? "nothing" : "tags") in \((clock.now - started).forPeople)")
        return found.map { ReadTags(tags: $0.tags, duration: $0.duration) }
    }
}
