import EngineAPI
import Testing

@testable import GStreamerEngine

/// The loaded track's position when playbin answers nothing for a moment, or already the next
/// stream's time at a hand-over the bus has not told yet.
@Suite("The position of a load, steadied across playbin's stream switch")
struct SteadiedPositionTests {
    static let load = LoadTicket(track: TrackID(1), generation: 7)
    static let reload = LoadTicket(track: TrackID(1), generation: 8)

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let reported: Duration?
        let last: Duration?
        let lastTicket: LoadTicket
        let handingOver: Bool
        let expected: Duration?
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(
            name: "the pipeline's answer, as a rule", reported: .seconds(12), last: .seconds(11),
            lastTicket: load, handingOver: false, expected: .seconds(12)),
        Row(
            name: "no answer: the last position of this load", reported: nil, last: .seconds(11),
            lastTicket: load, handingOver: false, expected: .seconds(11)),
        Row(
            name: "no answer, nothing heard of this load: none", reported: nil, last: .seconds(11),
            lastTicket: reload, handingOver: false, expected: nil),
        Row(
            name: "the next stream's time while handing over: the last position", reported: .milliseconds(20),
            last: .milliseconds(3_980), lastTicket: load, handingOver: true, expected: .milliseconds(3_980)),
        Row(
            name: "going on while handing over", reported: .milliseconds(3_990), last: .milliseconds(3_980),
            lastTicket: load, handingOver: true, expected: .milliseconds(3_990)),
        Row(
            name: "earlier without a hand-over (a seek landed): the pipeline's", reported: .seconds(2),
            last: .seconds(40), lastTicket: load, handingOver: false, expected: .seconds(2)),
        Row(
            name: "another load of the track starts where it starts", reported: .zero, last: .seconds(40),
            lastTicket: reload, handingOver: true, expected: .zero),
    ]

    @Test(arguments: rows)
    func steadied(_ row: Row) {
        let last = row.last.map { (ticket: row.lastTicket, position: $0) }
        #expect(
            HandOverTiming.steadied(row.reported, last: last, ticket: Self.load, handingOver: row.handingOver)
                == row.expected)
    }
}
