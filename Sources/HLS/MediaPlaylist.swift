import FoundationEssentials

/// A media playlist (RFC 8216 §4.3.3): the segments of one stream, plus what a client needs to
/// play it live or on demand.
public struct MediaPlaylist: Sendable, Equatable {
    /// The playlist's own URL; every URI in it was resolved against this.
    public var url: URL
    /// `EXT-X-VERSION`, when given and readable (absent means version 1).
    public var version: Int?
    /// `EXT-X-TARGETDURATION`: the longest segment, rounded; the live reload interval.
    public var targetDuration: Duration
    /// `EXT-X-MEDIA-SEQUENCE`: the first segment's media sequence number (0 when absent).
    public var mediaSequence: Int
    /// `EXT-X-DISCONTINUITY-SEQUENCE`: the first segment's discontinuity sequence number (0 when
    /// absent).
    public var discontinuitySequence: Int
    /// Whether `EXT-X-ENDLIST` closes it: no segment will be added (on demand, or a live event
    /// that ended). Without it the playlist is live and must be reloaded.
    public var endList: Bool
    /// `EXT-X-PLAYLIST-TYPE`; nil when absent or of an unknown value.
    public var playlistType: PlaylistType?
    /// `EXT-X-INDEPENDENT-SEGMENTS`: each segment decodes without the ones before it.
    public var independentSegments: Bool
    /// `EXT-X-I-FRAMES-ONLY`: the segments are single video frames (trick play), no audio.
    public var iFramesOnly: Bool
    /// `EXT-X-START`: where playback should begin, when the playlist says.
    public var start: StartPoint?
    /// The segments, in playlist order.
    public var segments: [MediaSegment]

    /// Creates a media playlist.
    public init(
        url: URL, version: Int? = nil, targetDuration: Duration, mediaSequence: Int = 0, discontinuitySequence: Int = 0,
        endList: Bool = false, playlistType: PlaylistType? = nil, independentSegments: Bool = false,
        iFramesOnly: Bool = false, start: StartPoint? = nil, segments: [MediaSegment] = []
    ) {
        self.url = url
        self.version = version
        self.targetDuration = targetDuration
        self.mediaSequence = mediaSequence
        self.discontinuitySequence = discontinuitySequence
        self.endList = endList
        self.playlistType = playlistType
        self.independentSegments = independentSegments
        self.iFramesOnly = iFramesOnly
        self.start = start
        self.segments = segments
    }

    /// The sum of the segments' durations.
    public var totalDuration: Duration {
        segments.reduce(.zero) { $0 + $1.duration }
    }

    /// Whether the playlist can still change, so a client must reload it (RFC 8216 §6.3.4):
    /// false once `EXT-X-ENDLIST` is present or the type is VOD.
    public var isLive: Bool { !endList && playlistType != .vod }

    /// Indices of the segments whose duration, rounded to the nearest second, exceeds the target
    /// duration. RFC 8216 §4.3.3.1 forbids them, but real servers write them and players play
    /// them, so the parser accepts them; this lists them for a log line.
    public var segmentsExceedingTargetDuration: [Int] {
        segments.indices.filter { roundedToWholeSeconds(segments[$0].duration) > targetDuration }
    }

    /// When segment `index` starts, counted from the first segment's start. `index` may be
    /// `segments.count` (the end).
    public func startTime(ofSegmentAt index: Int) -> Duration {
        segments.prefix(max(0, index)).reduce(.zero) { $0 + $1.duration }
    }

    /// The segment that plays at `time` (counted from the first segment's start) and how far into
    /// it `time` is: for seeking. A time exactly on a boundary belongs to the segment starting
    /// there; a negative time counts as 0; nil at or past ``totalDuration`` (nothing plays
    /// there) and for an empty playlist.
    public func segmentPosition(at time: Duration) -> SegmentPosition? {
        let target = max(time, .zero)
        var segmentStart = Duration.zero
        for (index, segment) in segments.enumerated() {
            let segmentEnd = segmentStart + segment.duration
            if target < segmentEnd { return SegmentPosition(segmentIndex: index, offset: target - segmentStart) }
            segmentStart = segmentEnd
        }
        return nil
    }

    /// Where playback should begin; nil for a playlist without segments.
    ///
    /// 1. `EXT-X-START` when present: a positive `TIME-OFFSET` counts from the start, a negative
    ///    one from the end; beyond either end it means that end (RFC 8216 §4.3.5.2). Without
    ///    `PRECISE=YES` playback begins at the start of the segment holding that time (offset 0).
    ///    An offset at or past the end begins at the last segment.
    /// 2. Else, for a live playlist (``isLive``), the last segment that starts at least three
    ///    target durations before the end (RFC 8216 §6.3.3), or the first when the whole playlist
    ///    is shorter than that.
    /// 3. Else the first segment.
    public func startPosition() -> SegmentPosition? {
        guard let lastIndex = segments.indices.last else { return nil }
        if let start {
            let total = totalDuration
            let time = start.timeOffset < .zero ? max(total + start.timeOffset, .zero) : start.timeOffset
            guard let position = segmentPosition(at: time) else {
                return SegmentPosition(segmentIndex: lastIndex, offset: .zero)
            }
            return start.precise ? position : SegmentPosition(segmentIndex: position.segmentIndex, offset: .zero)
        }
        guard isLive else { return SegmentPosition(segmentIndex: 0, offset: .zero) }
        let holdBack = targetDuration * 3
        var fromEnd = Duration.zero
        for index in segments.indices.reversed() {
            fromEnd += segments[index].duration
            if fromEnd >= holdBack { return SegmentPosition(segmentIndex: index, offset: .zero) }
        }
        return SegmentPosition(segmentIndex: 0, offset: .zero)
    }

    /// The date of segment `index`'s first sample: its own `EXT-X-PROGRAM-DATE-TIME`, else
    /// extrapolated forward from the nearest earlier dated segment, else backward from the
    /// nearest later one, by the `EXTINF` durations between (RFC 8216 §6.3.3). The extrapolation
    /// does not cross a discontinuity, where the timeline may restart. Nil when no dated segment
    /// is reachable, or `index` is out of range.
    public func programDateTime(ofSegmentAt index: Int) -> Date? {
        guard segments.indices.contains(index) else { return nil }
        if let date = segments[index].programDateTime { return date }
        var elapsed = Duration.zero
        var earlier = index
        while earlier > 0, !segments[earlier].discontinuity {
            earlier -= 1
            elapsed += segments[earlier].duration
            if let date = segments[earlier].programDateTime { return date.addingTimeInterval(seconds(elapsed)) }
        }
        var remaining = segments[index].duration
        var later = index + 1
        while later < segments.count, !segments[later].discontinuity {
            if let date = segments[later].programDateTime { return date.addingTimeInterval(-seconds(remaining)) }
            remaining += segments[later].duration
            later += 1
        }
        return nil
    }

    /// Whether `other` (an earlier load of the same playlist) holds exactly these segments and
    /// end state: what RFC 8216 §6.3.4 calls an unchanged playlist.
    public func hasSameContent(as other: MediaPlaylist) -> Bool {
        mediaSequence == other.mediaSequence && endList == other.endList && segments.count == other.segments.count
            && segments.last?.mediaSequenceNumber == other.segments.last?.mediaSequenceNumber
            && segments == other.segments
    }
}

/// `EXT-X-PLAYLIST-TYPE`.
public enum PlaylistType: String, Sendable, Equatable {
    /// On demand: the playlist cannot change.
    case vod = "VOD"
    /// A live event: segments are only appended, never removed.
    case event = "EVENT"
}

/// `EXT-X-START`: the preferred point to begin playback.
public struct StartPoint: Sendable, Equatable {
    /// `TIME-OFFSET`: from the start when positive, from the end when negative.
    public var timeOffset: Duration
    /// `PRECISE=YES`: begin exactly at the offset rather than at the start of its segment.
    public var precise: Bool

    /// Creates a start point.
    public init(timeOffset: Duration, precise: Bool = false) {
        self.timeOffset = timeOffset
        self.precise = precise
    }
}

/// A point inside a media playlist: a segment and how far into it.
public struct SegmentPosition: Sendable, Equatable {
    /// The segment's index in ``MediaPlaylist/segments`` (not its media sequence number).
    public var segmentIndex: Int
    /// How far into that segment, from its start.
    public var offset: Duration

    /// Creates a position.
    public init(segmentIndex: Int, offset: Duration) {
        self.segmentIndex = segmentIndex
        self.offset = offset
    }
}

/// `duration` rounded to the nearest whole second, halves up (RFC 8216 §4.3.3.1's rounding).
func roundedToWholeSeconds(_ duration: Duration) -> Duration {
    let (wholeSeconds, attoseconds) = duration.components
    return .seconds(wholeSeconds + (attoseconds >= 500_000_000_000_000_000 ? 1 : 0))
}

/// `duration` in seconds, for `Date` arithmetic.
func seconds(_ duration: Duration) -> TimeInterval {
    let (wholeSeconds, attoseconds) = duration.components
    return TimeInterval(wholeSeconds) + TimeInterval(attoseconds) / 1e18
}
