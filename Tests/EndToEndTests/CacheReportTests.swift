import DBusKit
import Testing

@testable import spool

@Suite("What spool cache stats prints, and which accounts exist")
struct CacheReportTests {
    @Test func countersGetAlignedHumanLabelsAndSizesInUnits() {
        let lines = CacheReport.lines([("entries", 2), ("bytesFromNetwork", 5_976_883), ("misses", 7), ("surprise", 3)])
        #expect(
            lines == [
                "files:                       2",
                "fetched from the network:    5.7 MiB",
                "downloads for missing bytes: 7",
                "surprise:                    3",
            ])
    }

    @Test func jsonKeepsTheDaemonsNamesAndExactNumbers() {
        #expect(
            CacheReport.json([("entries", 2), ("bytesFromNetwork", 5_976_883)])
                == #"{"entries": 2, "bytesFromNetwork": 5976883}"#)
        #expect(CacheReport.json([]) == "{}")
    }

    @Test(
        arguments: [
            ("", [], "default", nil),
            ("default", [], "default", nil),
            ("work", ["work"], "default", nil),
            ("nope", ["work"], "default", "no such account 'nope' in the cache; accounts: default, work"),
            ("wrk", ["work"], "default", "no such account 'wrk' in the cache; did you mean 'work'?"),
            ("nope", [], nil, "no such account 'nope' in the cache; the cache is empty"),
        ] as [(String, Set<String>, String?, String?)])
    func anAccountIsKnownWhenItHasFilesOrIsTheConfiguredOne(
        account: String, cached: Set<String>, own: String?, problem: String?
    ) {
        #expect(unknownAccount(account, cached: cached, own: own) == problem)
    }

    @Test(
        arguments: [
            (0, -1, "[not cached]"), (0, 100, "[not cached]"), (nil, nil, "[not cached]"), (45, 100, "[cached 45%]"),
            (2048, -1, "[cached 2.0 KiB]"), (100, 100, "[cached 100%]"),
        ] as [(Int64?, Int64?, String)])
    func nothingCachedReadsNotCached(cached: Int64?, length: Int64?, note: String) {
        var fields: [String: DBusValue] = ["spool:url": .string("https://example.org/a.mp3")]
        fields["spool:cachedBytes"] = cached.map(DBusValue.int64)
        fields["spool:contentLength"] = length.map(DBusValue.int64)
        #expect(cacheNote(fields) == note)
        #expect(cacheNote(["spool:url": .string("file:///a.mp3")]) == "[local]")
    }
}
