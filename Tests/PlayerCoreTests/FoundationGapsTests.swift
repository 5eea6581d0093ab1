import Foundation
import Testing

@testable import PlayerCore

/// PlayerCore replaced NSString methods with its own (it must not import
/// Foundation, issue #5); each must answer as Foundation does, so the test
/// (which may import Foundation) asks both.
@Suite("PlayerCore's stand-ins for NSString")
struct FoundationGapsTests {
    @Test func percentEncodingMatchesURLPathAllowed() {
        for text in ["a b.mp3", "100%.mp3", "é/ü?#x", "dir/sub;x=1&y", "🎵 \u{1}\t", "~user/(1)+[2]{3}|\\\"'", ""] {
            #expect(
                percentEncodingPath(text) == text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed),
                "\(text)")
        }
    }

    @Test func percentDecodingMatchesRemovingPercentEncoding() {
        for text in ["a%20b", "%zz", "x%2", "%", "%C3%A9", "%ff", "%41%e2%82%ac", "plain", "%2520", "%+1"] {
            #expect(removingPercentEncoding(text) == text.removingPercentEncoding, "\(text)")
        }
    }

    @Test func naturalOrderMatchesLocalizedStandardCompareForFileNames() {
        let names = [
            "10 ten.mp3", "2 two.flac", "1 one.ogg", "B side.mp3", "a side.mp3", "Track 2.mp3", "track 10.mp3",
            "cd1/01.mp3", "cd10/01.mp3", "cd2/01.mp3", "cd2/2.mp3", "002.mp3", "x1y.mp3", "x1.mp3", "xa.mp3",
        ]
        let ours = names.sorted(by: naturallyPrecedes)
        let foundations = names.sorted { $0.localizedStandardCompare($1) == .orderedAscending }
        #expect(ours == foundations)
    }
}
