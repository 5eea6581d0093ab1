import Foundation
import Testing
import TestSupport

/// The command line's first-try edges, against a real daemon: settings that print
/// themselves, mistakes in one sentence, cache listings that say what they mean.
@Suite("The spool command's edges", .serialized)
struct CommandEdgesTests {
    @Test func loopAndShuffleWithoutAValuePrintTheSetting() async throws {
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        #expect(try daemon.spool("loop").stdout == "none\n")
        #expect(try daemon.spool("shuffle").stdout == "off\n")

        #expect(try daemon.spool("loop", "playlist").status == 0)
        _ = try daemon.waitForPlayerctl(["loop"]) { $0 == "Playlist" }
        #expect(try daemon.spool("loop").stdout == "playlist\n")

        for (word, shown) in [("yes", "on"), ("0", "off"), ("true", "on"), ("no", "off"), ("1", "on")] {
            let result = try daemon.spool("shuffle", word)
            #expect(result.status == 0, "shuffle \(word): \(result)")
            _ = try daemon.waitForSpool("shuffle") { $0 == shown + "\n" }
        }
    }

    @Test func aMistakeWithASuggestionReadsAsOneSentence() throws {
        let bus = try PrivateBus()  // no daemon: a mistake never needs one
        for arguments in [["loop", "trak"], ["shuffle", "offf"], ["cache", "sats"]] {
            let result = try runSpool(arguments, environment: bus.environment)
            #expect(result.status == 1, "\(arguments): \(result)")
            #expect(result.stderr.hasSuffix("?\n") && !result.stderr.contains("?;"), "\(arguments): \(result.stderr)")
        }
        let tooMany = try runSpool(["shuffle", "on", "off"], environment: bus.environment)
        #expect(tooMany.status == 1 && tooMany.stderr.contains("at most one value"), "\(tooMany)")
    }
}
