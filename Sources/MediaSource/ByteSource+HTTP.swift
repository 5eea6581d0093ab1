import ByteSourceAPI
import Fetcher
import FoundationEssentials
import Synchronization

// What the download engine's HTTP facts mean in the byte-source interface's terms.

extension ResourceInfo {
    /// What the first response of an http(s) origin says: random access needs both ranges
    /// and a known length.
    public init(response head: ResponseHead) {
        self.init(
            length: head.totalLength, contentType: head.contentType,
            randomAccess: head.honoursRange && head.totalLength != nil,
            live: head.isLive ? LiveStation(icy: head.icy) : nil)
    }
}

extension LiveStation {
    /// The station as its `icy-*` headers name it.
    public init(icy: ICYHeaders) {
        self.init(
            name: icy.name, genre: icy.genre, homepage: icy.url, description: icy.description, bitrate: icy.bitrate)
    }
}

extension StreamTitle {
    /// The title of an ICY metadata block; nil when the block names no title.
    public init?(_ metadata: ICYMetadata) {
        guard let text = metadata.streamTitle else { return nil }
        let (artist, title) = ICYMetadata.artistAndTitle(text)
        self.init(text: text, artist: artist, title: title, link: metadata.streamURL)
    }
}

extension MediaSourceError {
    /// The error for a download that failed with `error`: a client error that a retry will not
    /// cure (404, 410, other 4xx but 408 and 429; no new URL after a 401/403/410) is ``gone(_:)``,
    /// no connection at all is ``unreachable(_:)``, anything else ``unavailable(_:)``.
    public init(downloadFailure error: FetchError) {
        switch error {
        case .httpStatus(let status) where (400..<500).contains(status) && status != 408 && status != 429:
            self = .gone(error.description)
        case .unresolvable:
            self = .gone(error.description)
        case .transport where error.unreachableServer != nil:
            self = .unreachable(error.unreachableServer ?? error.description)
        default:
            self = .unavailable(error.description)
        }
    }
}

extension ByteSource {
    /// Opens the source and reads it whole (a playlist): at most `limit` bytes, else it fails.
    /// The source stays open; its owner closes it.
    public func readWhole(limit: Int = 4 << 20) async throws(MediaSourceError) -> Data {
        let opened = await withCheckedContinuation { continuation in open { continuation.resume(returning: $0) } }
        if case .failure(let error) = opened { throw error }
        var collected = Data()
        while true {
            let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<ReadOutcome, Never>) in
                let once = Mutex(false)
                let answer = { @Sendable (outcome: ReadOutcome) in
                    let first = once.withLock { answered in
                        defer { answered = true }
                        return !answered
                    }
                    if first { continuation.resume(returning: outcome) }
                }
                let now = read(at: Int64(collected.count), maxLength: 64 << 10, minLength: 1) { answer(.pending) }
                if case .pending = now { return }
                answer(now)
            }
            switch outcome {
            case .data(let bytes):
                collected.append(bytes)
                if collected.count > limit { throw .unavailable("larger than \(limit) bytes") }
            case .endOfStream: return collected
            case .failed(let error): throw error
            case .pending: continue
            }
        }
    }
}
