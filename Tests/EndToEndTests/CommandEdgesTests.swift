import Foundation
import TestSupport
import Testing

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
        _ = try await daemon.waitForPlayerctl(["loop"]) { $0 == "Playlist" }
        #expect(try daemon.spool("loop").stdout == "playlist\n")

        for (word, shown) in [("yes", "on"), ("0", "off"), ("true", "on"), ("no", "off"), ("1", "on")] {
            let result = try daemon.spool("shuffle", word)
            #expect(result.status == 0, "shuffle \(word): \(result)")
            _ = try await daemon.waitForSpool("shuffle") { $0 == shown + "\n" }
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

    @Test func cacheStatsCountTheNetworkReadsAndTheCacheSaysWhatIsNotThere() async throws {
        let (daemon, server, track) = try await daemonWithNginx(serving: .flac)
        let url = server.url(for: track.fileName).absoluteString
        #expect(try daemon.spool("play", url).status == 0)
        _ = try await daemon.waitForSpool("queue") { $0.contains("[cached]") }

        let stats = try daemon.spool("cache", "stats").stdout
        let values = Dictionary(
            stats.split(separator: "\n").map { line in
                let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                return (parts[0], parts.count > 1 ? parts[1] : "")
            }, uniquingKeysWith: { first, _ in first })
        #expect(values["files"] == "1", "\(stats)")
        #expect(values["budget"] == "2.0 GiB", "\(stats)")
        #expect(
            values["fetched from the network"]?.hasSuffix("MiB") == true
                || values["fetched from the network"]?.hasSuffix("KiB") == true, "\(stats)")
        #expect((Int(values["downloads for missing bytes"] ?? "") ?? 0) > 0, "\(stats)")
        let json = try daemon.spool("cache", "stats", "--json").stdout
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Int]
        #expect((object?["misses"] ?? 0) > 0 && (object?["bytesFromNetwork"] ?? 0) > 0, "\(json)")

        let nope = try daemon.spool("cache", "ls", "--account", "nope")
        #expect(
            nope.status == 1 && nope.stderr == "spool: no such account 'nope' in the cache; accounts: default\n",
            "\(nope)")
        #expect(try daemon.spool("cache", "ls", "--account", "default").stdout.contains(url))

        #expect(try daemon.spool("stop").status == 0)
        #expect(try daemon.spool("cache", "clear").status == 0)
        let queue = try await daemon.waitForSpool("queue") { !$0.contains("[cached") }
        #expect(queue.hasSuffix("  [not cached]\n"), "\(queue)")
    }
}
