/// What a reload of a live media playlist adds to the segments already known, matched by media
/// sequence number (RFC 8216 §6.3.5).
///
/// - Normal slide: the segments numbered after the last known one are new.
/// - Jump: the reload's first segment comes more than one number after the last known one; the
///   segments between slid out of the server's window before this client loaded them, and
///   ``missedSegmentCount`` says how many. The reload's segments are all new.
/// - Restart: the reload's last segment is numbered below the last known one (the media
///   sequence went backwards), or the segment numbered like the last known one has another URI
///   or byte range (RFC 8216 §6.3.4 says to verify them): the server started over. Every
///   segment of the reload is returned as new, and the caller should treat the first as a
///   discontinuity.
public struct LiveSegmentUpdate: Sendable, Equatable {
    /// The segments to append, in order.
    public var newSegments: [MediaSegment]
    /// How many segments between the last known one and the first new one were never seen.
    public var missedSegmentCount: Int
    /// Whether the server started over (see the type's description).
    public var isRestart: Bool

    /// Creates an update from its parts.
    public init(newSegments: [MediaSegment], missedSegmentCount: Int = 0, isRestart: Bool = false) {
        self.newSegments = newSegments
        self.missedSegmentCount = missedSegmentCount
        self.isRestart = isRestart
    }

    /// What `reloaded` adds after `known`, the segments already known in order (only its last
    /// one matters; empty when none is known yet, and then every segment is new). A reload
    /// without segments adds nothing and proves nothing.
    public init(known: [MediaSegment], reloaded: MediaPlaylist) {
        let segments = reloaded.segments
        guard let lastKnown = known.last, let first = segments.first, let last = segments.last else {
            self.init(newSegments: known.isEmpty ? segments : [])
            return
        }
        let lastKnownNumber = lastKnown.mediaSequenceNumber
        let overlapping = segments.first { $0.mediaSequenceNumber == lastKnownNumber }
        let wentBackwards = last.mediaSequenceNumber < lastKnownNumber
        let replaced = overlapping.map { $0.uri != lastKnown.uri || $0.byteRange != lastKnown.byteRange } ?? false
        if wentBackwards || replaced {
            self.init(newSegments: segments, isRestart: true)
            return
        }
        let (gap, overflow) = first.mediaSequenceNumber.subtractingReportingOverflow(lastKnownNumber)
        let missed = overflow ? Int.max : max(0, gap - 1)
        self.init(newSegments: segments.filter { $0.mediaSequenceNumber > lastKnownNumber }, missedSegmentCount: missed)
    }

    /// Whether the reload added nothing.
    public var isUnchanged: Bool { newSegments.isEmpty && !isRestart }
}
