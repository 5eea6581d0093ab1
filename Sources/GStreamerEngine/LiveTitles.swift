import ByteSourceAPI
internal import CGStreamer
import Dispatch
import EngineAPI
import FoundationEssentials
import Synchronization

/// What a live stream announces in its bytes, to be reported when the byte it applies from is
/// heard.
enum LiveAnnouncement: Sendable, Equatable {
    /// The song on air (ICY `StreamTitle`, an HLS segment's ID3 tag).
    case title(StreamTitle)
    /// When the audio from there went on air (an HLS segment's `EXT-X-PROGRAM-DATE-TIME`).
    case programDate(Date)
}

/// When a live stream's titles are heard. Pure: the shell tells it where titles stand in the
/// bytes, where the parser's frames stand in bytes and in time, and what the listener hears.
///
/// A title arrives with the download, seconds before its audio is heard (the stream's buffer,
/// the decoder's queue, the sound server's latency). It applies from a byte offset; the first
/// frame the parser cuts at or past that offset gives its stream time; the title is due once
/// the heard position reaches that time, never before.
struct LiveTitleSchedule {
    /// A title waiting to be heard: where it starts in the bytes, and in time once a frame
    /// there was parsed.
    struct Waiting: Equatable {
        let announcement: LiveAnnouncement
        let offset: Int64
        var time: Duration?
    }

    /// The titles not heard yet, in the order they came (and so of their offsets).
    private(set) var waiting: [Waiting] = []
    /// The last frame the parser cut: a title that arrives for bytes already parsed starts there.
    private var lastFrame: (offset: Int64, time: Duration)?

    /// A title that applies from byte `offset` on.
    mutating func titleArrived(_ title: StreamTitle, at offset: Int64) {
        arrived(.title(title), at: offset)
    }

    /// An announcement that applies from byte `offset` on.
    mutating func arrived(_ announcement: LiveAnnouncement, at offset: Int64) {
        var entry = Waiting(announcement: announcement, offset: offset)
        if let lastFrame, lastFrame.offset >= offset { entry.time = lastFrame.time }
        waiting.append(entry)
        // A station announcing faster than anyone listens keeps only the newest few.
        if waiting.count > Self.limit { waiting.removeFirst(waiting.count - Self.limit) }
    }

    /// The most titles kept waiting.
    static let limit = 64

    /// The parser cut a frame at byte `offset` with stream time `time`.
    mutating func frameParsed(at offset: Int64, time: Duration) {
        lastFrame = (offset, time)
        for index in waiting.indices where waiting[index].time == nil && offset >= waiting[index].offset {
            waiting[index].time = time
        }
    }

    /// The titles whose audio is heard at `heard`, in order; they stop waiting.
    mutating func due(heard: Duration) -> [LiveAnnouncement] {
        var heardTitles: [LiveAnnouncement] = []
        while let first = waiting.first, let time = first.time, time <= heard {
            heardTitles.append(first.announcement)
            waiting.removeFirst()
        }
        return heardTitles
    }

    /// Whether any title waits.
    var hasWaiting: Bool { !waiting.isEmpty }
}

/// The ``LiveTitleSchedule`` of one live stream, shared by the threads that feed it: the
/// fetcher's (titles), a streaming thread (frames, from a probe on the parser's output) and the
/// control queue (what is heard). None of them waits here but for the lock.
final class LiveTitleClock: Sendable {
    private let schedule = Mutex(LiveTitleSchedule())

    /// A title that applies from byte `offset` on.
    func titleArrived(_ title: StreamTitle, at offset: Int64) {
        schedule.withLock { $0.titleArrived(title, at: offset) }
    }

    /// The audio from byte `offset` on went on air at `date`.
    func dateArrived(_ date: Date, at offset: Int64) {
        schedule.withLock { $0.arrived(.programDate(date), at: offset) }
    }

    /// The parser cut a frame at `offset`, heard at `time`.
    func frameParsed(at offset: Int64, time: Duration) {
        schedule.withLock { $0.frameParsed(at: offset, time: time) }
    }

    /// The titles heard by `heard`, in order.
    func due(heard: Duration) -> [LiveAnnouncement] { schedule.withLock { $0.due(heard: heard) } }

    /// Whether any title waits to be heard.
    var hasWaiting: Bool { schedule.withLock { $0.hasWaiting } }

    /// Watches the frames `parser` puts out (their byte offsets and times), for as long as the
    /// parser lives: the probe holds the clock and lets go of it when the pad goes.
    func watch(parser: UnsafeMutablePointer<GstElement>) {
        guard let pad = gst_element_get_static_pad(parser, "src") else { return }
        defer { gst_object_unref(UnsafeMutableRawPointer(pad)) }
        let context = Unmanaged.passRetained(self).toOpaque()
        gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, Self.onBuffer, context, Self.release)
    }

    private static let onBuffer: GstPadProbeCallback = { _, info, context in
        guard let info, let context, let data = info.pointee.data else { return GST_PAD_PROBE_OK }
        let buffer = data.assumingMemoryBound(to: GstBuffer.self)
        let offset = buffer.pointee.offset
        let pts = buffer.pointee.pts
        // Frames without a byte offset or a time (none from the audio parsers) say nothing.
        guard offset != UInt.max, pts != GstClockTime.max else { return GST_PAD_PROBE_OK }
        Unmanaged<LiveTitleClock>.fromOpaque(context).takeUnretainedValue()
            .frameParsed(at: Int64(offset), time: .nanoseconds(Int64(pts)))
        return GST_PAD_PROBE_OK
    }

    private static let release: GDestroyNotify = { context in
        guard let context else { return }
        Unmanaged<LiveTitleClock>.fromOpaque(context).release()
    }
}

extension GStreamerEngine {
    /// How often a waiting title is checked against what is heard: a title reaches the player
    /// at most this long after its audio.
    static let titleCheckInterval: DispatchTimeInterval = .milliseconds(100)

    /// A live stream's title arrived: checks what is heard until no title waits.
    func checkLiveTitlesSoon() {
        let schedule = shared.withLock { state -> Bool in
            defer { state.titleCheckScheduled = true }
            return !state.titleCheckScheduled
        }
        if schedule { onControl(at: .now() + Self.titleCheckInterval) { [self] in checkLiveTitles() } }
    }

    /// On the control queue: reports the loaded live stream's titles whose audio is heard, and
    /// checks again while any stream's title waits.
    private func checkLiveTitles() {
        let (current, clocks) = shared.withLock { state in
            (
                state.lifecycle.current.flatMap { current in
                    state.feeders[current.uri]?.liveTitles.map { (current.track.id, $0) }
                },
                state.feeders.values.compactMap(\.liveTitles)
            )
        }
        if let (id, clock) = current, let heard = heardPosition(), heard.track == id {
            for announcement in clock.due(heard: heard.position) {
                switch announcement {
                case .title(let title): emit(.streamTitle(id, title))
                case .programDate(let date): emit(.programDate(id, date, heardAt: heard.position))
                }
            }
        }
        let again = shared.withLock { state -> Bool in
            state.titleCheckScheduled = clocks.contains { $0.hasWaiting }
            return state.titleCheckScheduled
        }
        if again { onControl(at: .now() + Self.titleCheckInterval) { [self] in checkLiveTitles() } }
    }
}
