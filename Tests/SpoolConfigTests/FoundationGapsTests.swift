import Basics
import Foundation
import Testing

/// Basics's stand-ins for `String(format:)` and `trimmingCharacters(in:)`
/// (the daemon does not import Foundation, issue #5) answer as Foundation does.
/// Here because Basics has no test target of its own and this one links it.
@Suite("Basics's stand-ins for Foundation")
struct FoundationGapsTests {
    @Test func cFormatMatchesStringFormat() {
        #expect(cFormat("%ld:%02ld:%02ld", 1, 2, 3) == String(format: "%d:%02d:%02d", 1, 2, 3))
        for value in [0.0, 0.5, 1.5, 2.5, 99.95, 1234.56, -3.25] {
            #expect(cFormat("%.1f", value) == String(format: "%.1f", value))
            #expect(cFormat("%.0f", value) == String(format: "%.0f", value))
            #expect(cFormat("%3.0f%%", value) == String(format: "%3.0f%%", value))
            #expect(cFormat("%g", value) == String(format: "%g", value))
        }
        let long = cFormat("%0300ld", 7)  // longer than the first buffer
        #expect(long.count == 300 && long.hasSuffix("07"))
    }

    @Test func trimmingMatchesTrimmingCharacters() {
        for text in ["  a b \t", "\u{3000}x\u{A0}", "\n y \r\n", "\u{85}z\u{2028}", "", " \t ", "é"] {
            #expect(text.trimmingWhitespace() == text.trimmingCharacters(in: .whitespaces), "\(text.debugDescription)")
            #expect(
                text.trimmingWhitespaceAndNewlines() == text.trimmingCharacters(in: .whitespacesAndNewlines),
                "\(text.debugDescription)")
        }
    }
}
