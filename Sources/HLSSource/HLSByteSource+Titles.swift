import Basics
import ByteSourceAPI
import FoundationEssentials
import HLS
import Synchronization

/// The titles a live presentation names in its segments, as radio packagers do: packed audio in
/// the ID3 tag each segment begins with, MPEG-TS in timed ID3 (a metadata stream of its own).
extension HLSByteSource {
    /// Calls `handler` with each title a live presentation's segments name (`TIT2`, with `TPE1`
    /// as the artist) and the stream offset where it is heard: a packed-audio segment's first
    /// byte, or the TS packet where a timed ID3 tag begins.
    public func whenStreamTitle(_ handler: @escaping @Sendable (StreamTitle, _ offset: Int64) -> Void) {
        state.withLock { $0.titleHandler = handler }
    }

    /// Calls `handler` with the date each live segment went on air (its own
    /// `EXT-X-PROGRAM-DATE-TIME`, or one counted from an earlier segment's) and the stream
    /// offset of its first byte.
    public func whenProgramDate(_ handler: @escaping @Sendable (Date, _ offset: Int64) -> Void) {
        state.withLock { $0.dateHandler = handler }
    }

    /// `parts` with the dates `playlist` gives their segments.
    static func dated(_ parts: [StreamPart], by playlist: MediaPlaylist) -> [StreamPart] {
        guard let first = playlist.segments.first?.mediaSequenceNumber else { return parts }
        return parts.map { part in
            var part = part
            if let sequence = part.sequence, sequence >= first, sequence - first < playlist.segments.count {
                part.programDate = playlist.programDateTime(ofSegmentAt: sequence - first)
            }
            return part
        }
    }

    /// The song an ID3 tag names, if it names one.
    static func songTitle(inTag tag: Data) -> StreamTitle? {
        let frames = ID3v2.textFrames(tag)
        guard let title = frames["TIT2"] else { return nil }
        let artist = frames["TPE1"]
        return StreamTitle(text: artist.map { "\($0) - \(title)" } ?? title, artist: artist, title: title)
    }

    /// Whether the reader's part, just begun with no leading tag, is scanned for timed ID3 (and
    /// its audio bytes counted): only a live presentation's with a listener for what it says.
    static func scansForTimedMetadata(_ state: State) -> Bool {
        state.live != nil && (state.titleHandler != nil || state.dateHandler != nil)
    }

    /// Where a part that begins with `head` starts, as the parser counts bytes: in an MPEG-TS
    /// stream, the audio's bytes read before it (the demuxer hands the parser PES payloads
    /// only); otherwise the stream offset.
    static func parserOffset(_ state: State, streamOffset: Int64, head: Data) -> Int64 {
        head.first == 0x47 && state.timedMetadata != nil ? state.audioBytesBefore : streamOffset
    }

    /// `bytes`, read at stream offset `offset` from part `index`, go through the part's timed ID3
    /// scanner; the titles its completed tags name are announced at their offsets in the audio.
    func scanForTitles(_ bytes: Data, at offset: Int64, part index: Int) {
        let announced = state.withLock { state -> [(StreamTitle, Int64)] in
            // Scanned where it is kept: a copy would copy the tag gathered so far at every read.
            guard state.current == index, let fed = state.timedMetadata?.fed else { return [] }
            guard offset - state.starts[index] == fed else {
                // Not the bytes that follow those scanned (a read again): the segment's titles
                // are not worth a guess.
                state.timedMetadata = nil
                return []
            }
            let found = state.timedMetadata?.scan(bytes) ?? []
            if state.timedMetadata?.stopped == true { state.timedMetadata = nil }
            let audioBefore = state.audioBytesBefore
            return found.compactMap { tag in Self.songTitle(inTag: tag.tag).map { ($0, audioBefore + tag.audioOffset) }
            }
        }
        announce(announced)
    }

    /// Part `index` ended: a tag it left open ends with it.
    func finishTitles(ofPart index: Int) {
        let announced = state.withLock { state -> [(StreamTitle, Int64)] in
            defer { state.timedMetadata = nil }
            guard state.current == index, var scanner = state.timedMetadata else { return [] }
            let audioBefore = state.audioBytesBefore
            state.audioBytesBefore += scanner.audioBytes
            return scanner.finish().compactMap { tag in
                Self.songTitle(inTag: tag.tag).map { ($0, audioBefore + tag.audioOffset) }
            }
        }
        announce(announced)
    }

    func announce(_ titles: [(StreamTitle, Int64)]) {
        guard !titles.isEmpty, let handler = state.withLock({ $0.titleHandler }) else { return }
        for (title, offset) in titles { handler(title, offset) }
    }
}
