import EngineAPI
import PlayerCore
import Testing

/// The one place that corrects the position shown beside a track's metadata, as a table.
@Suite("The position shown beside the metadata")
struct ShownPositionTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let rule: String
        let place: Duration?
        let heard: HeardPosition?
        let shown: ShownPosition.Shown?
        let expected: Duration
        var testDescription: String { rule }
    }

    static let old = TrackID(1)
    static let new = TrackID(2)

    static let rows: [Row] = [
        Row(
            rule: "nothing loaded and no place: zero", place: nil, heard: nil,
            shown: .init(track: old, length: .seconds(60)), expected: .zero),
        Row(
            rule: "the machine's place wins over the engine (a restored or resuming track)",
            place: .seconds(42), heard: HeardPosition(track: old, position: .seconds(3)),
            shown: .init(track: old, length: .seconds(60)), expected: .seconds(42)),
        Row(
            rule: "the machine's place when nothing is loaded", place: .seconds(42), heard: nil, shown: nil,
            expected: .seconds(42)),
        Row(
            rule: "the heard track is the shown one: what is heard",
            place: nil, heard: HeardPosition(track: old, position: .seconds(12)),
            shown: .init(track: old, length: .seconds(60)), expected: .seconds(12)),
        Row(
            rule: "a hand-over the metadata has not caught up with: the shown track's end",
            place: nil, heard: HeardPosition(track: new, position: .milliseconds(300)),
            shown: .init(track: old, length: .seconds(60)), expected: .seconds(60)),
        Row(
            rule: "a hand-over to a track whose length is not known yet: what is heard",
            place: nil, heard: HeardPosition(track: new, position: .milliseconds(300)),
            shown: .init(track: old, length: nil), expected: .milliseconds(300)),
        Row(
            rule: "the engine does not say which track: what is heard",
            place: nil, heard: HeardPosition(track: nil, position: .seconds(5)),
            shown: .init(track: old, length: .seconds(60)), expected: .seconds(5)),
        Row(
            rule: "a reader that shows no metadata: what is heard",
            place: nil, heard: HeardPosition(track: new, position: .seconds(5)), shown: nil, expected: .seconds(5)),
    ]

    @Test(arguments: rows)
    func theShownPositionFollowsItsRule(row: Row) {
        #expect(ShownPosition.position(place: row.place, heard: row.heard, beside: row.shown) == row.expected)
    }
}
