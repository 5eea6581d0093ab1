import FoundationEssentials

// The protocol the playback engine reads a track's bytes through, and the values it answers
// with. No networking, no cache: the engine depends on this alone, and the download engine
// (MediaSource) implements it.

/// What the playback engine learns about a resource when it opens.
public struct ResourceInfo: Sendable, Equatable {
    /// Total length in bytes, when known.
    public var length: Int64?
    /// The MIME type the origin declared, if any.
    public var contentType: String?
    /// Whether any offset can be read without first reading everything before it.
    public var randomAccess: Bool
    /// The station, when the resource is a live stream (internet radio): it has no length, no
    /// end and no place to seek to, and its titles come as it plays (``ByteSource/whenStreamTitle(_:)``).
    public var live: LiveStation?
    /// The length in time, when the source knows it without the decoder (an HLS playlist's
    /// total): the engine reports it, since a stream of segments tells the decoder none.
    public var duration: Duration?
    /// Whether the engine may seek in it; false for a stream it can only play from its start.
    public var seekable: Bool
    /// Whether a seek restarts the stream at a time (``ByteSource/restart(at:)``) rather than
    /// moving in its bytes: a stream of timed pieces with no map from time to byte (HLS).
    public var seeksByRestart: Bool

    /// Creates resource facts.
    public init(
        length: Int64?, contentType: String? = nil, randomAccess: Bool, live: LiveStation? = nil,
        duration: Duration? = nil, seekable: Bool = true, seeksByRestart: Bool = false
    ) {
        self.length = length
        self.contentType = contentType
        self.randomAccess = randomAccess
        self.live = live
        self.duration = duration
        self.seekable = seekable
        self.seeksByRestart = seeksByRestart
    }

    /// The facts in words, for the log line of an open.
    public var openedDescription: String {
        if let live { return "a live stream\(live.name.map { " (\($0))" } ?? "")" }
        if let duration, length == nil {
            return "a stream of segments, \(duration.components.seconds) s"
        }
        return "\(length.map(String.init) ?? "unknown") bytes, \(randomAccess ? "range requests" : "no range support")"
    }
}

/// Which of a presentation's variants plays (an HLS master playlist's): its bit rate and its
/// place among the variants allowed, by bit rate.
public struct StreamVariant: Sendable, Equatable {
    /// The variant's bit rate (`BANDWIDTH`), in bits per second.
    public var bitrate: Int
    /// Its place from the lowest, from 1.
    public var number: Int
    /// How many variants it is chosen among.
    public var count: Int

    /// Creates the facts.
    public init(bitrate: Int, number: Int, count: Int) {
        self.bitrate = bitrate
        self.number = number
        self.count = count
    }
}

/// One ended transfer over the network: the bytes it brought and the time they took, from the
/// request to the last byte.
public struct TransferSample: Sendable, Equatable {
    /// Bytes received.
    public var bytes: Int64
    /// From the request to the last byte.
    public var took: Duration

    /// Creates a sample.
    public init(bytes: Int64, took: Duration) {
        self.bytes = bytes
        self.took = took
    }
}

/// What a live stream's origin says about its station (the `icy-*` headers of internet radio).
/// Every text is valid UTF-8.
public struct LiveStation: Sendable, Equatable, Codable {
    /// The station's name (`icy-name`).
    public var name: String?
    /// Its genre (`icy-genre`).
    public var genre: String?
    /// Its web page (`icy-url`).
    public var homepage: String?
    /// Its description (`icy-description`).
    public var description: String?
    /// The stream's bitrate in kbit/s (`icy-br`).
    public var bitrate: Int?

    /// How long a paused live stream is kept: a Play within it plays on from where it paused
    /// (its bytes were kept in memory meanwhile); beyond it, the stream rejoins live.
    public static let pauseWindow: Duration = .seconds(120)

    /// Creates a station's facts; all optional.
    public init(
        name: String? = nil, genre: String? = nil, homepage: String? = nil, description: String? = nil,
        bitrate: Int? = nil
    ) {
        self.name = name
        self.genre = genre
        self.homepage = homepage
        self.description = description
        self.bitrate = bitrate
    }
}

/// A song title a live stream announced in its bytes (ICY `StreamTitle`), split into artist and
/// title where it splits cleanly.
public struct StreamTitle: Sendable, Equatable, Codable {
    /// The text as the station sent it ("Artist - Title"); empty: the station names no song.
    public var text: String
    /// The artist, when the text splits as "Artist - Title".
    public var artist: String?
    /// The song's title: the part after the artist, else the whole text.
    public var title: String
    /// A link the station sent with it (`StreamUrl`), if any.
    public var link: String?

    /// Creates a title.
    public init(text: String, artist: String?, title: String, link: String? = nil) {
        self.text = text
        self.artist = artist
        self.title = title
        self.link = link
    }
}

/// Why a source cannot deliver bytes.
public enum MediaSourceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The resource could not be opened this time (a server error, a dropped connection):
    /// trying again later may work.
    case unavailable(String)
    /// The resource is not there and asking again will not change it (a missing file, an
    /// HTTP 404 or 410, an unsupported URL).
    case gone(String)
    /// No connection to the origin could be made at all (unknown host, refused, no route):
    /// the server or the network is down. The text says so itself.
    case unreachable(String)
    /// Reading failed after the resource was opened.
    case readFailed(String)
    /// The source was closed.
    case closed
    /// The play began from the cached copy and the origin then answered with a new version of
    /// the resource: the copy is gone, and the play is to start again on the new version.
    case versionChanged(String)

    /// A one-line explanation for logs and users.
    public var description: String {
        switch self {
        case .unavailable(let why): "cannot open: \(why)"
        case .gone(let why): "not found: \(why)"
        case .unreachable(let why): why
        case .readFailed(let why): "read failed: \(why)"
        case .closed: "source closed"
        case .versionChanged(let why): "a new version on the server: \(why)"
        }
    }
}

/// The answer to a non-blocking read.
public enum ReadOutcome: Sendable, Equatable {
    /// Bytes starting exactly at the offset asked (at least one, at most the length asked).
    case data(Data)
    /// The offset is at or past the end of the resource.
    case endOfStream
    /// The bytes are not here yet; the read's `wake` closure will be called once
    /// when reading again may succeed.
    case pending
    /// The bytes will never come.
    case failed(MediaSourceError)
}

/// Random-access bytes of one track for the playback engine. Reads never block:
/// bytes that are here are returned at once, and a reader asking for bytes that
/// are not is woken when they arrive. This keeps GStreamer's streaming threads
/// off the network.
public protocol ByteSource: AnyObject, Sendable {
    /// Starts opening the resource; `completion` is called once, on any thread.
    func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void)

    /// Like ``open(_:)`` for a resource whose decoder reads its last `tail` bytes before its
    /// first audio (an Ogg demuxer finds the duration on the last page): a source that
    /// downloads fetches them first, beside the head, and the rest after.
    func open(tail: Int64?, _ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void)

    /// Reads up to `maxLength` bytes at `offset` without waiting. On `.pending`,
    /// `wake` is called once (on any thread, never from inside this call) when
    /// a new read may succeed; a later read or ``cancelPendingReads()`` replaces it.
    func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome

    /// Like ``read(at:maxLength:wake:)``, but answers as soon as `minLength` bytes are here
    /// (fewer only at the end): a reader that takes short buffers (a pushed stream) goes on
    /// with what has arrived instead of waiting for all it asked.
    func read(at offset: Int64, maxLength: Int, minLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome

    /// Drops the pending wake-up, if any: the reader moved elsewhere (seek, stop).
    func cancelPendingReads()

    /// Stops all work for this source and releases what it holds. Reads after this fail.
    func close()

    /// Marks the source as prepared ahead of need (the next track): its downloads
    /// yield to the playing track's. Set back to false when its audio starts.
    func setBackground(_ background: Bool)

    /// Whether every byte of `range` is here now, so reading it waits for nothing. The engine
    /// lets a parser read through bytes that are held, and sends a seek straight to its target
    /// when they are not.
    func holds(_ range: Range<Int64>) -> Bool

    /// Tells the source the stream's average bytes per second (length over duration, once the
    /// player knows the duration), so a seek a few seconds of audio ahead of a running
    /// download waits for it instead of opening a new request.
    func setByteRate(_ bytesPerSecond: Double)

    /// Calls `handler`, on any thread, with each title a live stream announces, and the offset
    /// of the first byte of audio it applies to, counted as the stream's parser counts its
    /// input (the stream's bytes; in an MPEG-TS stream, its audio's PES payloads): the title is
    /// heard when that byte is. Replaces an earlier handler.
    func whenStreamTitle(_ handler: @escaping @Sendable (StreamTitle, _ offset: Int64) -> Void)

    /// Calls `handler`, on any thread, with the date each part of a live stream went on air
    /// (an HLS segment's `EXT-X-PROGRAM-DATE-TIME`) and the offset of its first byte, counted
    /// as for ``whenStreamTitle(_:)``. Replaces an earlier handler.
    func whenProgramDate(_ handler: @escaping @Sendable (Date, _ offset: Int64) -> Void)

    /// Calls `handler` once, on any thread, if the source fails on its own while no read may be
    /// asking (a new version of the resource found just after the play began from the cached
    /// copy): the reader learns it now, not at its next read. Replaces an earlier handler.
    func whenFailed(_ handler: @escaping @Sendable (MediaSourceError) -> Void)

    /// Calls `handler`, on any thread, each time a transfer of the source's bytes over the
    /// network ends: how many bytes it brought and how long from its request to its last byte
    /// (a measure of the link; bytes read from the cache bring none). Replaces an earlier handler.
    func whenTransferred(_ handler: @escaping @Sendable (TransferSample) -> Void)

    /// Calls `handler`, on any thread, with the variant that plays now (at once, if one was
    /// chosen) and with each one it switches to. Replaces an earlier handler.
    func whenVariantChosen(_ handler: @escaping @Sendable (StreamVariant) -> Void)

    /// Starts the stream again at the piece that holds `target` (a source whose info says
    /// ``ResourceInfo/seeksByRestart``): offset 0 is then that piece's first byte (after what
    /// decoding it needs first, an initialization section). Answers the piece's start time, or
    /// nil when the source cannot restart. The reader must read from offset 0 again.
    func restart(at target: Duration) -> Duration?

    /// Calls `handler` when a restarted stream begins part-way into the piece whose start
    /// ``restart(at:)`` answered (closer to the target, so that less is fetched before it):
    /// with the time its first sample plays at, from inside the read that is about to return
    /// its first bytes of media, before they reach the decoder. Replaces an earlier handler.
    func whenRestartMoved(_ handler: @escaping @Sendable (Duration) -> Void)
}

extension ByteSource {
    /// Sources whose reads never wait for a download read the tail when it is asked for.
    public func open(tail: Int64?, _ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        open(completion)
    }

    /// Sources whose reads never wait for a download answer as they always do.
    public func read(at offset: Int64, maxLength: Int, minLength: Int, wake: @escaping @Sendable () -> Void)
        -> ReadOutcome
    {
        read(at: offset, maxLength: maxLength, wake: wake)
    }

    /// Sources with nothing to download ignore the hint.
    public func setBackground(_ background: Bool) {}

    /// Sources with nothing to download hold every byte.
    public func holds(_ range: Range<Int64>) -> Bool { true }

    /// Sources with nothing to download ignore the rate.
    public func setByteRate(_ bytesPerSecond: Double) {}

    /// Sources that fail only when read never call the handler.
    public func whenFailed(_ handler: @escaping @Sendable (MediaSourceError) -> Void) {}

    /// Sources that transfer nothing over the network never call the handler.
    public func whenTransferred(_ handler: @escaping @Sendable (TransferSample) -> Void) {}

    /// Sources of one resource have no variants.
    public func whenVariantChosen(_ handler: @escaping @Sendable (StreamVariant) -> Void) {}

    /// Sources addressed by bytes do not restart at a time.
    public func restart(at target: Duration) -> Duration? { nil }

    /// Sources that do not restart never move a restart.
    public func whenRestartMoved(_ handler: @escaping @Sendable (Duration) -> Void) {}

    /// Sources of files announce no titles.
    public func whenStreamTitle(_ handler: @escaping @Sendable (StreamTitle, _ offset: Int64) -> Void) {}

    /// Only a live HLS presentation dates its parts.
    public func whenProgramDate(_ handler: @escaping @Sendable (Date, _ offset: Int64) -> Void) {}
}
