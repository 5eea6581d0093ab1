import HLS
import Testing

/// What a reload adds to the segments already known.
@Suite("Live segment update")
struct LiveSegmentUpdateTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        /// The sequence numbers known (named `segment<number>.aac`).
        let known: ClosedRange<Int>?
        /// The reload's window.
        let reloaded: ClosedRange<Int>
        let expectedNew: [Int]
        let expectedMissed: Int
        let expectedRestart: Bool
        var testDescription: String { name }
    }

    @Test(arguments: [
        Case(
            name: "normal slide: the ones after the last known", known: 100...104, reloaded: 102...106,
            expectedNew: [105, 106], expectedMissed: 0, expectedRestart: false),
        Case(
            name: "unchanged", known: 100...104, reloaded: 100...104, expectedNew: [], expectedMissed: 0,
            expectedRestart: false),
        Case(
            name: "window moved on without a new segment", known: 100...104, reloaded: 103...104, expectedNew: [],
            expectedMissed: 0, expectedRestart: false),
        Case(
            name: "directly adjacent", known: 100...104, reloaded: 105...107, expectedNew: [105, 106, 107],
            expectedMissed: 0, expectedRestart: false),
        Case(
            name: "jump: segments slid out before they were seen", known: 100...104, reloaded: 110...112,
            expectedNew: [110, 111, 112], expectedMissed: 5, expectedRestart: false),
        Case(
            name: "restart: the sequence went backwards", known: 100...104, reloaded: 0...2, expectedNew: [0, 1, 2],
            expectedMissed: 0, expectedRestart: true),
        Case(
            name: "nothing known yet: all new", known: nil, reloaded: 7...9, expectedNew: [7, 8, 9], expectedMissed: 0,
            expectedRestart: false),
    ])
    func update(_ test: Case) throws {
        let known =
            try test.known.map { try livePlaylist(firstSequence: $0.lowerBound, count: $0.count).segments } ?? []
        let reload = try livePlaylist(firstSequence: test.reloaded.lowerBound, count: test.reloaded.count)
        let update = LiveSegmentUpdate(known: known, reloaded: reload)
        #expect(update.newSegments.map(\.mediaSequenceNumber) == test.expectedNew)
        #expect(update.newSegments.map(\.uri.lastPathComponent) == test.expectedNew.map { "segment\($0).aac" })
        #expect(update.missedSegmentCount == test.expectedMissed)
        #expect(update.isRestart == test.expectedRestart)
        #expect(update.isUnchanged == (test.expectedNew.isEmpty && !test.expectedRestart))
    }

    @Test func sameNumberWithAnotherURIIsARestart() throws {
        let known = try livePlaylist(firstSequence: 10, count: 3).segments
        let restarted = try parseMedia(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:6
            #EXT-X-MEDIA-SEQUENCE:11
            #EXTINF:6,
            new-encoder-a.aac
            #EXTINF:6,
            new-encoder-b.aac
            #EXTINF:6,
            new-encoder-c.aac
            """)
        let update = LiveSegmentUpdate(known: known, reloaded: restarted)
        #expect(update.isRestart)
        #expect(
            update.newSegments.map(\.uri.lastPathComponent) == [
                "new-encoder-a.aac", "new-encoder-b.aac", "new-encoder-c.aac",
            ])
    }

    @Test func emptyReloadAddsNothing() throws {
        let known = try livePlaylist(firstSequence: 10, count: 3).segments
        let empty = try parseMedia("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:0\n")
        #expect(LiveSegmentUpdate(known: known, reloaded: empty) == LiveSegmentUpdate(newSegments: []))
    }
}
