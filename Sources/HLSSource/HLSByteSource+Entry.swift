import Basics
import ByteSourceAPI
import FoundationEssentials
import Synchronization

/// A seek deep into an on-demand MPEG-TS segment not fetched yet, entered near its target:
/// the stream restarted there is the segment's tables, then the segment from a packet that
/// begins an audio PES packet a little before the target (``TransportStreamEntry``). The
/// bytes between are never asked for, so over a slow link the seek waits for about one
/// round trip, not for the segment's bytes before the target. The engine learns where the
/// entered stream starts (``whenRestartMoved(_:)``) before its first audio is read.
struct SegmentEntry {
    /// How far into the segment the stream is to start: the target, less ``margin``.
    var depth: Duration
    /// Where the segment starts in the presentation.
    var segmentStart: Duration
    /// The restart it belongs to (``HLSByteSource/State/restarts``).
    var restart: Int
    /// Once found, what the stream reads instead of the segment's bytes.
    var found: Found?
    /// The offset (in the segment) asked for now, once the head told where to look; an entry
    /// found past the target moves it back.
    var estimate: Int64?
    /// Estimates that landed past the target so far.
    var overshoots = 0

    /// Where the entered stream's bytes come from.
    struct Found {
        /// The head's tables (the segment's bytes before its first audio), read first.
        var tablesLength: Int64
        /// The resource offset of the packet the stream goes on from after the tables.
        var resume: Int64
        /// The segment's time before that packet's audio (not read).
        var skipped: Duration
    }

    /// How far before the target the stream is entered: the decoder's first frames after an
    /// entry (AAC's overlap, MP3's bit reservoir) are not the whole stream's, and a byte
    /// estimate of time is rough (an estimate past the target is moved back).
    static let margin: Duration = .milliseconds(300)
    /// A target closer than this to its segment's start reads the segment whole: the bytes
    /// before it come about as soon as a new request's would.
    static let minimumDepth: Duration = .milliseconds(800)
    /// Estimates past the target tried again before the segment is read whole.
    static let maximumOvershoots = 2
    /// Bytes read for the head: the tables and the first audio packet are within them.
    static let headBytes = 188 * 16
    /// Bytes that usually hold the head: the PAT, the program map and the first audio packet.
    static let headBytesUsually = 188 * 3
    /// Bytes asked for at the estimate: more than a probe's, so the download planner takes it
    /// for a seek (the download from the segment's start makes way), answered once a few
    /// packets are here.
    static let entryRead = 64 * 1024 + 188
    static let entryMinimum = 188 * 8

    /// The entry of a restart at `target` into `part` (starting at `segmentStart`), or nil
    /// when the part is read whole: encrypted (CBC reads from its start) or too shallow.
    init?(target: Duration, segmentStart: Duration, part: StreamPart, restart: Int) {
        guard part.encryption == nil, !part.isInitialization, target - segmentStart >= Self.minimumDepth else {
            return nil
        }
        depth = target - segmentStart - Self.margin
        self.segmentStart = segmentStart
        self.restart = restart
    }
}

extension HLSByteSource {
    /// Calls `handler` with where a restarted stream entered part-way into its segment starts.
    public func whenRestartMoved(_ handler: @escaping @Sendable (Duration) -> Void) {
        state.withLock { $0.restartMovedHandler = handler }
    }

    /// Finds where to enter part `index` (its bytes in `source` from `base`): reads its head,
    /// then the bytes at the estimate, moved back while what it finds plays past the target.
    /// Answers `.pending` while they are on their way, nil once the part is either entered or
    /// to be read whole; a failed read reads it whole too.
    func enter(part index: Int, of source: any ByteSource, at base: Int64, wake: @escaping @Sendable () -> Void)
        -> ReadOutcome?
    {
        let known = state.withLock { state -> (entry: SegmentEntry, part: StreamPart, length: Int64?)? in
            guard state.current == index, let entry = state.entry, entry.found == nil else { return nil }
            return (entry, state.parts[index], state.sources[index]?.length)
        }
        guard var entry = known?.entry, let part = known?.part else { return nil }
        var head: TransportStreamEntry.Head?
        // The tables and the first audio packet usually come in the first three packets: only
        // when they do not is the rest of the head waited for.
        for minimum in [SegmentEntry.headBytesUsually, SegmentEntry.headBytes] where head == nil {
            switch source.read(at: base, maxLength: SegmentEntry.headBytes, minLength: minimum, wake: wake) {
            case .pending: return .pending
            case .data(let bytes):
                head = TransportStreamEntry.head(of: bytes)
                if head == nil, bytes.count >= SegmentEntry.headBytes { return readWhole(entry) }
            case .endOfStream, .failed: return readWhole(entry)
            }
        }
        guard let head else { return readWhole(entry) }
        let length = part.range.map { $0.upperBound - $0.lowerBound } ?? known?.length.map { $0 - base }
        guard let length,
            let estimate = entry.estimate
                ?? TransportStreamEntry.estimatedOffset(
                    depth: entry.depth, duration: part.duration, length: length, head: head)
        else { return readWhole(entry) }
        let found: TransportStreamEntry.Entry
        switch source.read(
            at: base + estimate, maxLength: SegmentEntry.entryRead, minLength: SegmentEntry.entryMinimum, wake: wake)
        {
        case .pending:
            return remember(entry, estimate: estimate) ? .pending : nil
        case .data(let bytes):
            guard let parsed = TransportStreamEntry.entry(in: bytes, after: head) else { return readWhole(entry) }
            found = parsed
        case .endOfStream, .failed: return readWhole(entry)
        }
        let target = entry.depth + SegmentEntry.margin
        if found.time > target {
            // Past the target: back by what overshot and the margin, at the bytes per second
            // the find itself shows; the next call reads there.
            let bytesBefore = estimate + Int64(found.offset) - Int64(head.tablesLength)
            let perSecond = Double(bytesBefore) / found.time.inSeconds
            let back = Int64(perSecond * (found.time - entry.depth).inSeconds) / 188 * 188
            entry.overshoots += 1
            guard entry.overshoots <= SegmentEntry.maximumOvershoots, estimate - back > Int64(head.tablesLength),
                remember(entry, estimate: estimate - back)
            else { return readWhole(entry) }
            return enter(part: index, of: source, at: base, wake: wake)
        }
        let entered = SegmentEntry.Found(
            tablesLength: Int64(head.tablesLength), resume: base + estimate + Int64(found.offset), skipped: found.time)
        let handler = state.withLock { state -> (@Sendable (Duration) -> Void)? in
            guard state.current == index, state.entry?.restart == entry.restart else { return nil }
            state.entry?.found = entered
            state.currentTag = 0
            return state.restartMovedHandler
        }
        Self.log.debug(
            "\(url.lastPathComponent): entered a segment \(found.time) in, at byte \(entered.resume - base) of \(length)"
        )
        handler?(entry.segmentStart + found.time)
        return nil
    }

    /// Keeps where the entry is being looked for; false when the restart is no longer the one
    /// the entry belongs to.
    private func remember(_ entry: SegmentEntry, estimate: Int64) -> Bool {
        state.withLock { state in
            guard state.entry?.restart == entry.restart else { return false }
            state.entry?.estimate = estimate
            state.entry?.overshoots = entry.overshoots
            return true
        }
    }

    /// Reads the restarted part whole, from its first byte: it could not be entered.
    private func readWhole(_ entry: SegmentEntry) -> ReadOutcome? {
        state.withLock { state in
            if state.entry?.restart == entry.restart { state.entry = nil }
        }
        Self.log.debug("\(url.lastPathComponent): a segment read whole after a restart into it")
        return nil
    }
}
