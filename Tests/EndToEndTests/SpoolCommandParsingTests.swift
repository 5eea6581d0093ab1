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

    /// Observations in order, and the verdict after the last one.
    static let startCases: [(observations: [StartObservation], verdict: StartVerdict)] = [
        ([.status("Playing"), .position(0), .position(40_000)], .waiting),
        ([.position(0), .position(120_000)], .started),
        ([.position(30_000_000), .position(30_100_000)], .started),  // a resume position is the baseline
        ([.position(0), .lastError("a.mp3: Not Found")], .waiting),  // the player retries first
        ([.lastError("a.mp3: Not Found"), .track("/org/spool/Track/2")], .failed("a.mp3: Not Found")),
        ([.lastError("a.mp3: Not Found"), .status("Stopped")], .failed("a.mp3: Not Found")),
        ([.lastError("a.mp3: 503"), .position(0), .position(200_000)], .started),  // the retry played
        ([.lastError(""), .status("Stopped")], .readLastError),  // an unchanged error is not signalled
        ([.status("Stopped"), .errorAfterwards("a.mp3: Not Found")], .failed("a.mp3: Not Found")),
        ([.track("/org/spool/Track/2"), .errorAfterwards("")], .failed("a.mp3 stopped before it started")),
        ([.track("/org/spool/Track/1"), .status("Playing")], .waiting),
        ([.track("/org/spool/Track/0"), .position(0)], .waiting),  // the queue before, signalled late
        ([.track("/org/mpris/MediaPlayer2/TrackList/NoTrack"), .errorAfterwards("a.mp3: x")], .failed("a.mp3: x")),
        ([.status("Paused")], .started),
        ([.lastError("a.mp3: could not resolve host"), .timeout], .failed("a.mp3: could not resolve host")),
        ([.position(0), .timeout], .undecided),
    ]

    @Test func aPlaylistFetchedLaterIsWatchedFromItsFirstTrack() {
        var watch = StartWatch(track: "/org/spool/Track/3", name: "list.m3u", replacing: true)
        #expect(watch.observe(.position(0)) == .waiting)
        #expect(watch.observe(.position(500_000)) == .waiting)  // the old track playing on
        #expect(watch.observe(.track("/org/spool/Track/7")) == .waiting)
        #expect(watch.observe(.position(0)) == .waiting)
        #expect(watch.observe(.position(100_000)) == .started)
        var failing = StartWatch(track: "/org/spool/Track/3", name: "list.m3u", replacing: true)
        #expect(
            failing.observe(.lastError("list.m3u: cannot fetch the playlist: HTTP 404"))
                == .failed("list.m3u: cannot fetch the playlist: HTTP 404"))
        var slow = StartWatch(track: "/org/spool/Track/3", name: "list.m3u", replacing: true)
        #expect(slow.observe(.timeout) == .undecided)
        // The failure of the queue before, signalled after the call, is not the playlist's.
        var late = StartWatch(
            track: "/org/spool/Track/3", name: "the playlist", replacing: true, playlistNames: ["list.m3u"])
        #expect(late.observe(.lastError("missing.mp3: not found: HTTP status 404")) == .waiting)
        #expect(
            late.observe(.lastError("list.m3u: cannot fetch the playlist: HTTP 404"))
                == .failed("list.m3u: cannot fetch the playlist: HTTP 404"))
    }

    @Test func aListsWarningIsShownOnceAndIsNoFailure() {
        let warning =
            "list.m3u: 1 entry dropped: file:///etc/hostname (a list from the network may name only http(s) addresses)"
        var watch = StartWatch(
            track: "/org/spool/Track/3", name: "the playlist", replacing: true, playlistNames: ["list.m3u"])
        #expect(watch.observe(.lastError(warning)) == .warning(warning))
        #expect(watch.observe(.lastError(warning)) == .waiting)
        #expect(watch.observe(.track("/org/spool/Track/7")) == .waiting)
        #expect(watch.observe(.position(0)) == .waiting)
        #expect(watch.observe(.timeout) == .undecided)
        var local = StartWatch(track: "/org/spool/Track/1", name: "a.mp3")
        #expect(local.observe(.lastError(warning)) == .warning(warning))
        #expect(local.observe(.status("Stopped")) == .readLastError)
        #expect(local.observe(.errorAfterwards(warning)) == .failed("a.mp3 stopped before it started"))
    }

    @Test(arguments: startCases.indices)
    func playWaitsForTheFirstTrackToStartOrFail(_ index: Int) {
        let (observations, expected) = Self.startCases[index]
        var watch = StartWatch(track: "/org/spool/Track/1", name: "a.mp3")
        let verdicts = observations.map { watch.observe($0) }
        #expect(verdicts.last == expected, "\(observations)")
        #expect(verdicts.dropLast().allSatisfy { $0 == .waiting || $0 == .readLastError }, "\(verdicts)")
    }
}
