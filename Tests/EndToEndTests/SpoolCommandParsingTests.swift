import Testing

@testable import spool

@Suite("Parsing and drawing in the spool command")
struct SpoolCommandParsingTests {
    @Test(arguments: [
        ("90", 90.0), ("1.5", 1.5), ("1:30", 90), ("1:02:03", 3723), ("1h2m3s", 3723), ("2m", 120), ("90s", 90),
        ("1h", 3600), ("0", 0),
    ])
    func durationsParse(text: String, seconds: Double) {
        #expect(parseDuration(text) == seconds)
    }

    @Test(arguments: ["", "abc", "1:", ":30", "1:2:3:4", "1x", "1h1h", "h", "-5", "1:-3", "inf", "nan"])
    func malformedDurationsAreRejected(text: String) {
        #expect(parseDuration(text) == nil)
    }

    @Test func seekTargetsAreAbsoluteRelativeOrAFraction() {
        #expect(SeekTarget("1:30") == .absolute(90))
        #expect(SeekTarget("+10") == .relative(10))
        #expect(SeekTarget("-1m") == .relative(-60))
        #expect(SeekTarget("50%") == .fraction(0.5))
        #expect(SeekTarget("150%") == nil)
        #expect(SeekTarget("+-3") == nil)
    }

    @Test func theBarShowsPlayedThenCachedThenMissing() {
        #expect(progressBar(played: 0.25, cached: [0...0.5], width: 8) == "[##==----]")
        #expect(progressBar(played: nil, cached: fractions([(0, 25), (75, 100)], length: 100), width: 4) == "[=--=]")
        #expect(progressBar(played: 0, cached: fractions([(0, 50)], length: -1), width: 4) == "[----]")
    }

    @Test func timesAndSizesAreShortAndReadable() {
        #expect(formatTime(59.9) == "0:59")
        #expect(formatTime(3723) == "1:02:03")
        #expect(formatBytes(512) == "512 B")
        #expect(formatBytes(3 << 20) == "3.0 MiB")
    }
}
