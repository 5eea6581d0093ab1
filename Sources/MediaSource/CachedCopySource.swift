import ByteSourceAPI
import FoundationEssentials
import RangeCache
import Synchronization

/// The bytes of a resource the cache holds completely, read from the cache alone: never a
/// request, never a revalidation. For readers that want a cached track's bytes only when they
/// are all here (its tags read ahead for the queue); a byte missing after all (the entry was
/// evicted or emptied meanwhile) fails the read.
public final class CachedCopySource: ByteSource {
    private let entry: Mutex<CacheEntry?>
    private let length: Int64

    /// A source over `entry` when it holds every byte of a resource of known length; nil
    /// otherwise. The entry is closed with the source.
    public init?(entry: CacheEntry) {
        guard let length = entry.metadata.validator.length, length > 0, entry.contiguousLength(from: 0) >= length else {
            return nil
        }
        self.entry = Mutex(entry)
        self.length = length
    }

    /// Reports the length and random access at once.
    public func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        let contentType = entry.withLock { $0?.metadata.contentType }
        completion(.success(ResourceInfo(length: length, contentType: contentType, randomAccess: true)))
    }

    /// Reads from the cache; never pending.
    public func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        guard let entry = entry.withLock({ $0 }) else { return .failed(.closed) }
        guard offset < length else { return .endOfStream }
        let wanted = Int(min(Int64(maxLength), length - offset))
        guard let data = entry.read(at: offset, maxLength: wanted) else {
            return .failed(.readFailed("the cached copy lost bytes at \(offset)"))
        }
        return .data(data)
    }

    /// Nothing is ever pending.
    public func cancelPendingReads() {}

    /// Closes the cache entry.
    public func close() {
        entry.withLock { entry in
            entry?.close()
            entry = nil
        }
    }

    deinit { close() }
}
