import Foundation
import HLSSource
import TestSupport
import Testing

/// The timed ID3 a live MPEG-TS segment carries is found whole, at the packet its PES begins
/// in, however the segment's bytes arrive; anything else is read past without a guess.
@Suite("Timed ID3 in MPEG-TS segments")
struct TimedID3ScannerTests {
    static let song = TimedID3Writer.songTag(artist: "Miles Davis", title: "So What")

    /// Everything `scanner` finds in `bytes` fed `chunk` bytes at a time, and at the end.
    func scanAll(_ bytes: Data, chunk: Int) -> [TimedID3Scanner.Found] {
        var scanner = TimedID3Scanner()
        var found: [TimedID3Scanner.Found] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let end = min(bytes.endIndex, index + chunk)
            found += scanner.scan(bytes[index..<end])
            index = end
        }
        return found + scanner.finish()
    }

    @Test func aTagIsFoundWholeAtThePacketItsPESBeginsIn() throws {
        let segment = try TimedID3Writer.adding(Self.song, to: TimedID3Writer.syntheticSegment(audioPackets: 20))
        // After the PAT and the program map.
        #expect(scanAll(segment, chunk: segment.count) == [.init(tag: Self.song, position: 2 * 188)])
    }

    /// Reads of any size, a packet or a PES header cut anywhere: the same tags at the same places.
    @Test func readsOfAnySizeFindTheSameTags() throws {
        // A tag over several packets: a 600-byte comment beside the song.
        let long = Self.song + Data(repeating: 0x41, count: 600)
        var tag = [UInt8](long)
        let size = long.count - 10
        tag[6..<10] = [UInt8(size >> 21 & 0x7F), UInt8(size >> 14 & 0x7F), UInt8(size >> 7 & 0x7F), UInt8(size & 0x7F)]
        let segment = try TimedID3Writer.adding(Data(tag), to: TimedID3Writer.syntheticSegment(audioPackets: 12))
        let whole = scanAll(segment, chunk: segment.count)
        #expect(whole == [.init(tag: Data(tag), position: 2 * 188)])
        for chunk in [1, 7, 187, 188, 189, 376, 1000] {
            #expect(scanAll(segment, chunk: chunk) == whole, "read \(chunk) bytes at a time")
        }
    }

    @Test func aSegmentWithoutAMetadataStreamHasNoTag() {
        let segment = TimedID3Writer.syntheticSegment(audioPackets: 30)
        #expect(scanAll(segment, chunk: 500).isEmpty)
    }

    /// Packed audio, fMP4 or noise: the scanner stops at the first byte that is not a packet's.
    @Test func bytesThatAreNotATransportStreamStopTheScan() {
        var scanner = TimedID3Scanner()
        #expect(scanner.scan(Data([0xFF, 0xF1, 0x50, 0x80] + [UInt8](repeating: 0, count: 400))).isEmpty)
        #expect(scanner.stopped)
    }

    /// A PES packet grown past the limit is dropped; the tag in the next segment is found.
    @Test func anOversizedPESIsDroppedAndHoldsNoMemory() throws {
        let huge =
            Data("ID3".utf8) + [4, 0, 0, 0x7F, 0x7F, 0x7F, 0x7F] + Data(count: TimedID3Scanner.maximumTagSize * 2)
        let segment = try TimedID3Writer.adding(huge, to: TimedID3Writer.syntheticSegment(audioPackets: 4))
        #expect(scanAll(segment, chunk: 4096).isEmpty)
        let next = try TimedID3Writer.adding(Self.song, to: TimedID3Writer.syntheticSegment(audioPackets: 4))
        #expect(scanAll(next, chunk: 4096).map(\.tag) == [Self.song])
    }

    /// Two tags in one segment (a song change mid-segment) come in order, each at its own packet.
    @Test func twoTagsInOneSegmentComeInOrder() throws {
        let second = TimedID3Writer.songTag(artist: "John Coltrane", title: "Naima")
        let first = try TimedID3Writer.adding(Self.song, to: TimedID3Writer.syntheticSegment(audioPackets: 10))
        // The tables repeat, as a muxer repeats them, and a second tag follows them.
        let later = try TimedID3Writer.adding(second, to: TimedID3Writer.syntheticSegment(audioPackets: 10))
        let found = scanAll(first + later, chunk: 333)
        #expect(found.map(\.tag) == [Self.song, second])
        #expect(found.map(\.position) == [2 * 188, Int64(first.count) + 2 * 188])
        // Ten audio packets of 184 payload bytes, less one PES header (14), before the second.
        #expect(found.map(\.audioOffset) == [0, 10 * 184 - 14])
    }

    /// Where the tag lies in a PES packet: right after the header (private stream 1), or after a
    /// metadata access unit's 5-byte header (metadata stream 0xFC); nothing else is a tag.
    @Test(
        arguments: [
            ([0x00, 0x00, 0x01, 0xBD, 0, 0, 0x84, 0x80, 5, 1, 2, 3, 4, 5], true),
            ([0x00, 0x00, 0x01, 0xFC, 0, 0, 0x84, 0x80, 5, 1, 2, 3, 4, 5, 0, 0, 0, 0, 0], true),
            ([0x00, 0x00, 0x01, 0xBD, 0, 0, 0x84, 0x00, 0], true),
            ([0x00, 0x00, 0x01, 0xBD, 0, 0, 0x84, 0x00, 0, 9], false),
        ] as [([UInt8], Bool)])
    func theTagIsFoundAfterThePESHeader(_ header: [UInt8], _ holdsTag: Bool) {
        let pes = header + [UInt8](Self.song)
        #expect((TimedID3Scanner.tag(inPES: pes) == Self.song) == holdsTag)
    }
}
