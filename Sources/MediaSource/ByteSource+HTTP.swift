import ByteSourceAPI
import Fetcher

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
