import DBusKit
import Testing

@testable import spool

@Suite("One verdict a preloaded track in spool status")
struct MessageWordingTests {
    @Test(
        arguments: [
            ("complete", false, 100, 100, "boom", "b.mp3 complete"),
            ("whole", true, 100, 100, "boom", "b.mp3 complete"),
            ("whole", false, 40, 100, "HTTP 404", "b.mp3 failed (HTTP 404)"),
            ("whole", false, 40, 100, nil, "b.mp3 whole 40%"),
            ("head-ready", false, 0, -1, nil, "b.mp3 head-ready"),
        ] as [(String, Bool, Int64, Int64, String?, String)])
    func aPreloadIsCompleteOrFailedOrOnItsWay(
        stage: String, complete: Bool, cached: Int64, length: Int64, error: String?, note: String
    ) {
        var row: [String: DBusValue] = [
            "spool:url": .string("https://example.org/b.mp3"), "spool:stage": .string(stage),
            "spool:complete": .boolean(complete), "spool:cachedBytes": .int64(cached),
            "spool:contentLength": .int64(length),
        ]
        row["spool:error"] = error.map(DBusValue.string)
        #expect(preloadNote(row) == note)
    }
}
