import FoundationEssentials

/// A song a live stream (internet radio) named while it was heard: one line of `spool history`.
public struct HeardSong: Sendable, Equatable {
    /// How many songs are remembered; beyond it the oldest are forgotten.
    public static let historyLimit = 1_000

    /// When its title was heard, by the clock of the shell that recorded it.
    public var when: Date
    /// The station's name as it was shown (``NowPlaying/stationName``).
    public var station: String
    /// The artist, when the station's text named one.
    public var artist: String?
    /// The song's title.
    public var title: String
    /// The stream it was heard on.
    public var url: URL

    /// A song heard at `when` on `station` (whose stream is `url`).
    public init(when: Date, station: String, artist: String?, title: String, url: URL) {
        self.when = when
        self.station = station
        self.artist = artist
        self.title = title
        self.url = url
    }
}
