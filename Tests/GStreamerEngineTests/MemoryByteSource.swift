import ByteSourceAPI
import Foundation
import Synchronization

/// A track's bytes held in memory: the engine's tests read through this, not through the
/// download engine (whose own tests cover files, http and the cache). A missing file fails the
/// open as not found, as a real source does; reads are never pending.
final class MemoryByteSource: ByteSource {
    private let url: URL
    private let seekable: Bool
    private let bytes = Mutex<Data?>(nil)

    /// A source of the file at `url`, read whole at the open; `seekable` false plays one that
    /// says it can only be played from its start.
    init(file url: URL, seekable: Bool = true) {
        self.url = url
        self.seekable = seekable
    }

    func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        guard let data = try? Data(contentsOf: url) else {
            return completion(.failure(.gone("\(url.path): cannot be read")))
        }
        bytes.withLock { $0 = data }
        completion(.success(ResourceInfo(length: Int64(data.count), randomAccess: true, seekable: seekable)))
    }

    func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        bytes.withLock { data in
            guard let data else { return .failed(.closed) }
            guard offset < Int64(data.count) else { return .endOfStream }
            let start = data.startIndex + Int(offset)
            return .data(data[start..<min(data.endIndex, start + maxLength)])
        }
    }

    func cancelPendingReads() {}

    func close() { bytes.withLock { $0 = nil } }
}
