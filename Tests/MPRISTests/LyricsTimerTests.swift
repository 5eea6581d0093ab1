import Foundation
import Testing

@testable import MPRIS

/// The wait of the timer that follows the lyrics lines: the track's time to the next line at the
/// current rate, within the recheck that catches a jump the player does not report.
@Suite("The lyrics line timer")
struct LyricsTimerTests {
    @Test(arguments: [
        // (position, next line, rate) → wait in milliseconds
        (12_000, 15_000, 2.0, 1_503),
        (12_000, 15_000, 1.0, 2_000),
        (14_000, 15_000, 1.0, 1_003),
        (14_000, 15_000, 0.5, 2_000),
        (14_900, 15_000, 1.5, 70),
        (14_000, 14_000, 1.0, 3),
    ])
    func theWaitIsTheTracksTimeToTheNextLineAtTheRate(position: Int, next: Int, rate: Double, wait: Int) {
        let waited = MPRISService.lyricsWait(from: .milliseconds(position), to: .milliseconds(next), rate: rate)
        let off = waited - .milliseconds(wait)
        #expect(off < .milliseconds(1) && off > .milliseconds(-1), "waited \(waited)")
    }

    @Test func withoutANextLineTheTimerOnlyRechecks() {
        #expect(MPRISService.lyricsWait(from: .seconds(16), to: nil, rate: 2) == MPRISService.lyricsRecheck)
    }
}
