import Basics
import ByteSourceAPI
import FoundationEssentials
import HLS
import Synchronization

/// Reading: the parts one after another as one stream, each step decided under the lock
/// (``nextStep(_:offset:wake:)``) and carried out outside it.
extension HLSByteSource {
    /// Reads the stream forward across part boundaries.
    public func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        read(at: offset, maxLength: maxLength, minLength: maxLength, wake: wake)
    }

    /// Reads the stream forward across part boundaries, answering once `minLength` bytes of the
    /// current part are here (a part's end answers with what is left of it).
    public func read(at offset: Int64, maxLength: Int, minLength: Int, wake: @escaping @Sendable () -> Void)
        -> ReadOutcome
    {
        while true {
            let step = state.withLock { state -> Step in nextStep(&state, offset: offset, wake: wake) }
            switch step {
            case .answer(let outcome): return outcome
            case .read(let index, let source, let local, let limit):
                let wanted = limit.map { Int(min(Int64(maxLength), $0 - local)) } ?? maxLength
                let outcome = source.read(at: local, maxLength: wanted, minLength: min(minLength, wanted), wake: wake)
                if case .failed(let error) = outcome, !error.isClosed, state.withLock({ $0.live != nil }) {
                    // A live segment that breaks off ends there; the next one follows.
                    Self.log.warning("a live segment broke off: \(error)")
                    partEnded(index, at: offset)
                    continue
                }
                if case .data(let bytes) = outcome {
                    scanForTitles(bytes, at: offset, part: index)
                    return outcome
                }
                guard case .endOfStream = outcome else { return outcome }
                partEnded(index, at: offset)
            case .rangeEnded(let index):
                partEnded(index, at: offset)
            case .lookForTag(let index, let source, let local):
                let head: Data
                switch source.read(at: local, maxLength: 10, minLength: 10, wake: wake) {
                case .data(let bytes): head = bytes
                case .endOfStream: head = Data()
                case .pending: return .pending
                case .failed(let error): return .failed(error)
                }
                let length = ID3v2.tagLength(head)
                var announced: [(StreamTitle, Int64)] = []
                if length > 10, state.withLock({ Self.scansForTimedMetadata($0) }) {
                    // A live segment's tag may name what is on air (TIT2, TPE1): read it whole.
                    let whole: Data
                    switch source.read(at: local, maxLength: Int(length), minLength: Int(length), wake: wake) {
                    case .data(let bytes): whole = bytes
                    case .pending: return .pending
                    case .endOfStream: whole = head
                    case .failed(let error): return .failed(error)
                    }
                    if let title = Self.songTitle(inTag: whole) { announced = [(title, offset)] }
                }
                let dated = state.withLock { state -> (Date, Int64, @Sendable (Date, Int64) -> Void)? in
                    guard state.current == index else { return nil }
                    state.currentTag = length
                    // A segment with no leading tag may carry timed ID3 (MPEG-TS).
                    state.timedMetadata = length == 0 && Self.scansForTimedMetadata(state) ? TimedID3Scanner() : nil
                    guard let date = state.parts[index].programDate, let handler = state.dateHandler else { return nil }
                    return (date, Self.parserOffset(state, streamOffset: offset, head: head), handler)
                }
                if let (date, at, handler) = dated { handler(date, at) }
                announce(announced)
            case .openParts:
                openAhead()
            case .enter(let index, let source, let base):
                if let pending = enter(part: index, of: source, at: base, wake: wake) { return pending }
            }
        }
    }

    enum Step {
        case answer(ReadOutcome)
        /// Read part `index`'s source at `local` (an offset in its resource), up to `limit` (the
        /// end of its range).
        case read(index: Int, source: any ByteSource, local: Int64, limit: Int64?)
        /// Part `index` ended (its byte range is read through).
        case rangeEnded(index: Int)
        /// Part `index` is a segment not yet looked at: read its first bytes at `local` (an
        /// offset in its resource) for an ID3v2 tag. Packed audio begins every segment with one
        /// (its timestamp); a parser meeting it mid-stream takes it for lost sync and the decoder
        /// flushes, losing or mangling a frame at each join, as GStreamer's own HLS reader
        /// avoids by stripping them too.
        case lookForTag(index: Int, source: any ByteSource, local: Int64)
        /// The reader's part has no source: open it (and those ahead), then read again.
        case openParts
        /// Part `index`, restarted into, is to be entered part-way: find where, from its bytes
        /// at `base` (its first byte in its resource) on (``SegmentEntry``).
        case enter(index: Int, source: any ByteSource, base: Int64)
    }

    func nextStep(_ state: inout State, offset: Int64, wake: @escaping @Sendable () -> Void) -> Step {
        if state.closed { return .answer(.failed(.closed)) }
        if offset < state.starts[state.current] {
            // Back into a part already read: start again from the part holding the offset.
            let index = state.starts.lastIndex { $0 <= offset } ?? 0
            for source in state.sources.values { source.source.close() }
            state.sources = [:]
            state.current = index
            state.currentTag = nil
            state.timedMetadata = nil
            state.starts.removeSubrange((index + 1)...)
            return .openParts
        }
        guard state.current < state.parts.count else {
            // A live playlist's next segments come with a reload.
            guard let live = state.live, !live.ended else {
                return .answer(state.live?.failure.map(ReadOutcome.failed) ?? .endOfStream)
            }
            state.wake = wake
            return .answer(.pending)
        }
        if state.currentTag == nil, Self.leftTheWindow(state, part: state.current) {
            // A live segment the window slid past while the reader waited (a pause): skipped
            // unasked, to the oldest one still listed.
            Self.log.info("live segment \(state.parts[state.current].sequence ?? 0) left the window unread: skipped")
            return .rangeEnded(index: state.current)
        }
        guard let opened = state.sources[state.current] else { return .openParts }
        guard opened.opened else {
            state.wake = wake
            return .answer(.pending)
        }
        if let failure = opened.failure {
            // A live segment that cannot be had is skipped: the window goes on without it.
            guard state.live != nil, !failure.isClosed else { return .answer(.failed(failure)) }
            Self.log.warning("live segment \(state.parts[state.current].url.lastPathComponent) skipped: \(failure)")
            return .rangeEnded(index: state.current)
        }
        let local = offset - state.starts[state.current]
        // An encrypted part's source reads its own range and answers with plaintext.
        let part = state.parts[state.current]
        let range = part.encryption == nil ? part.range : nil
        let base = range?.lowerBound ?? 0
        let entered = state.current == 0 ? state.entry : nil
        if part.isInitialization {
            state.currentTag = 0
        } else if let entered, entered.found == nil {
            return .enter(index: state.current, source: opened.source, base: base)
        } else if state.currentTag == nil {
            return .lookForTag(index: state.current, source: opened.source, local: base)
        }
        var start = base + (state.currentTag ?? 0) + local
        var limit = range?.upperBound
        if let found = entered?.found {
            // The head's tables as they are, then the segment from the entry on.
            if local < found.tablesLength {
                limit = base + found.tablesLength
            } else {
                start = found.resume + local - found.tablesLength
            }
        }
        if let range, start >= range.upperBound { return .rangeEnded(index: state.current) }
        if state.adaptation?.readSince == nil { state.adaptation?.readSince = .now }
        return .read(index: state.current, source: opened.source, local: start, limit: limit)
    }

    /// Part `index` ended at stream offset `end`: the next one starts there.
    func partEnded(_ index: Int, at end: Int64) {
        finishTitles(ofPart: index)
        state.withLock { state in
            guard state.current == index else { return }
            state.starts.append(end)
            let skipped = index == 0 ? state.entry?.found?.skipped ?? .zero : .zero
            state.adaptation?.timeRead += state.parts[index].duration - skipped
            state.current += 1
            state.currentTag = nil
            if state.live != nil {
                // A live presentation's parts come for hours: those read are forgotten, so its
                // lists stay as long as the window, not the listening. (Its reader never goes
                // back past a part: it is pushed, with no seeking.)
                let read = state.current
                state.parts.removeFirst(read)
                state.starts.removeFirst(read)
                state.current = 0
                state.sources = Dictionary(uniqueKeysWithValues: state.sources.map { ($0.key - read, $0.value) })
                // Keys rotate on a live stream: only those of the parts still listed are kept.
                let inUse = Set(state.parts.compactMap { $0.encryption?.keyURL })
                state.keys = state.keys.filter { inUse.contains($0.key) }
            }
        }
        openAhead()
    }
}
