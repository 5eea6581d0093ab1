import DBusKit
import Foundation
import TestSupport
import Testing

@testable import spool

@Suite("spool history: its options and its lines")
struct HistoryCommandParsingTests {
    @Test func theLimitAndJSONAreRead() throws {
        let plain = try HistoryRequest([])
        #expect(plain.limit == HistoryRequest.defaultLimit && !plain.json)
        #expect(try HistoryRequest(["--limit", "5"]).limit == 5)
        let both = try HistoryRequest(["--limit=1000", "--json"])
        #expect(both.limit == 1_000 && both.json)
    }

    @Test(arguments: [["--limit"], ["--limit", "0"], ["--limit", "1001"], ["--limit", "ten"], ["--limit=-3"], ["5"]])
    func aBadLimitOrOptionIsAUsageError(arguments: [String]) {
        do throws(CommandFailure) {
            _ = try HistoryRequest(arguments)
            Issue.record("\(arguments) was accepted")
        } catch {
            #expect(error.status == ExitStatus.usageOrConfiguration, "\(arguments): \(error)")
        }
    }

    @Test func aMistypedOptionGetsAHint() {
        do throws(CommandFailure) {
            _ = try HistoryRequest(["--limt", "3"])
            Issue.record("--limt was accepted")
        } catch {
            #expect(error.description.contains("did you mean '--limit'?"), "\(error)")
        }
    }

    /// 2026-12-05 09:31:20 UTC.
    static let heard = 1_796_463_080.0

    @Test func aLineIsTheMinuteTheStationAndArtistThenTitle() {
        let song = ListedSong(heard: Self.heard, station: "Jazz FM", artist: "Miles Davis", title: "So What")
        #expect(song.line(utcOffset: 3_600) == "2026-12-05 10:31  Jazz FM  Miles Davis – So What")
        let jingle = ListedSong(heard: Self.heard, station: "Jazz FM", artist: nil, title: "Station jingle")
        #expect(jingle.line(utcOffset: -36_000) == "2026-12-04 23:31  Jazz FM  Station jingle")
        #expect(
            jingle.json == #"{"artist":null,"heard":1796463080,"station":"Jazz FM","title":"Station jingle"}"#)
    }

    @Test func theReplyIsReadSkippingWhatIsMalformed() {
        let reply = DBusValue.array(
            elementSignature: "(dsss)",
            [
                .structure([.double(Self.heard), .string("Jazz FM"), .string(""), .string("Station jingle")]),
                .structure([.double(.nan), .string("Jazz FM"), .string(""), .string("Never")]),
                .structure([.string("Jazz FM")]),
                .structure([.double(Self.heard - 60), .string("Jazz FM"), .string("Miles Davis"), .string("So What")]),
            ])
        #expect(
            ListedSong.songs(in: reply) == [
                ListedSong(heard: Self.heard, station: "Jazz FM", artist: nil, title: "Station jingle"),
                ListedSong(heard: Self.heard - 60, station: "Jazz FM", artist: "Miles Davis", title: "So What"),
            ])
    }
}

@Suite("spool history from a live station", .serialized)
struct HistoryEndToEndTests {
    /// `spool history ARGUMENTS` against `environment`'s bus, without holding a thread of the tests.
    static func history(_ arguments: [String] = [], _ environment: [String: String]) async throws -> CommandResult {
        try await runCommandAwaiting(try spoolExecutable(), ["history"] + arguments, environment: environment)
    }

    /// The lines of stdout.
    static func lines(_ result: CommandResult) -> [String] { result.stdout.split(separator: "\n").map(String.init) }

    @Test func theSongsHeardAreListedNewestFirstAndSurviveARestart() async throws {
        let radio = try await RadioCase(settings: RadioSettings(icyName: "History FM"))
        var environment = radio.rig.bus.environment
        environment["TZ"] = "UTC"
        let started = Date()
        #expect(Self.lines(try await Self.history([], environment)) == ["no songs heard yet"])
        let opened = try await radio.probe.open(radio.station.url)
        _ = try await radio.probe.awaitAdvancing(since: opened)

        // Each title is announced in every metadata block (each second) until the next one.
        let titles = ["Artist One - Song One", "Song Two", "Artist Three - Song Three"]
        for (index, title) in titles.enumerated() {
            radio.station.setTitle(title)
            let listed = try await awaitValue(
                "spool history after '\(title)'\n\(radio.context())", timeout: 15, interval: .milliseconds(200),
                { Self.lines(try await Self.history([], environment)) },
                until: { $0.count > index && !$0[0].hasSuffix("no songs heard yet") })
            try #require(listed.count == index + 1, "after '\(title)': \(listed)\n\(radio.context())")
        }

        let listed = Self.lines(try await Self.history([], environment))
        let songs = ["Artist Three – Song Three", "Song Two", "Artist One – Song One"]
        #expect(listed.count == 3 && zip(listed, songs).allSatisfy { $0.hasSuffix("  History FM  \($1)") }, "\(listed)")
        // Stamped in UTC (TZ), to the minute, while the test ran.
        let minute = DateFormatter()
        minute.locale = Locale(identifier: "en_US_POSIX")
        minute.timeZone = TimeZone(identifier: "UTC")
        minute.dateFormat = "yyyy-MM-dd HH:mm"
        let minutes = Set(
            stride(from: started.timeIntervalSince1970 - 60, through: Date().timeIntervalSince1970 + 60, by: 30).map {
                minute.string(from: Date(timeIntervalSince1970: $0))
            })
        #expect(listed.allSatisfy { minutes.contains(String($0.prefix(16))) }, "\(listed) not within \(minutes)")

        #expect(Self.lines(try await Self.history(["--limit", "1"], environment)) == [listed[0]])
        let json = Self.lines(try await Self.history(["--json", "--limit", "2"], environment)).map {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        try #require(json.count == 2, "\(json)")
        #expect(json[0]?["title"] as? String == "Song Three" && json[0]?["artist"] as? String == "Artist Three")
        #expect(json[1]?["title"] as? String == "Song Two" && json[1]?["artist"] is NSNull)
        #expect(json.allSatisfy { $0?["station"] as? String == "History FM" })
        let heard = try #require(json[0]?["heard"] as? Double)
        #expect(heard >= started.timeIntervalSince1970 && heard <= Date().timeIntervalSince1970)

        // Without a daemon the command says so on one line and exits 2.
        let first = radio.player
        await onOwnThread { first.stop() }
        let refused = try await Self.history([], environment)
        #expect(refused.status == 2 && refused.stdout.isEmpty, "\(refused)")
        #expect(refused.stderr.contains("not running") && refused.stderr.split(separator: "\n").count == 1)

        // A daemon started again with the same home lists what the first one heard.
        let again = try radio.rig.startSpool(executable: try spoolExecutable(), home: radio.player.home, lifetime: 60)
            .keepingTestLog()
        try await PlayerProbe(
            remote: DBusMPRISRemote(connection: radio.connection, busName: again.busName), player: again, rig: radio.rig
        ).waitUntilReady()
        let afterRestart = try await Self.history([], environment)
        #expect(afterRestart.status == 0 && Self.lines(afterRestart) == listed, "\(afterRestart)\n\(again.logTail())")
    }
}
