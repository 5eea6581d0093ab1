import Testing

@testable import Fetcher

/// The rate check and the classification of libcurl failures, driven directly.
@Suite("Fetcher speed check and transport failures")
struct SpeedCheckTests {
    @Test func windowsAreJudgedOnlyWhenOver() {
        var check = SpeedCheck(minimumRate: 100, window: 1, now: 0)
        #expect(check.deadline == 1)
        check.received(50)
        #expect(check.judge(now: 0.5) == .pending)
        #expect(check.judge(now: 1) == .tooSlow(50))
        check.received(150)
        #expect(check.judge(now: 2) == .fastEnough)
        // Nothing at all in a window is the slowest rate, judged late: over the time it took.
        #expect(check.judge(now: 4) == .tooSlow(0))
        check.received(300)
        #expect(check.judge(now: 6) == .fastEnough)  // 150 bytes/s over 2 s
    }

    @Test func aRestartForgetsTheWindowSoFar() {
        var check = SpeedCheck(minimumRate: 100, window: 1, now: 0)
        check.received(10)
        check.restart(now: 5)  // after a pause: the paused time is not the server's
        #expect(check.judge(now: 5.9) == .pending)
        check.received(100)
        #expect(check.judge(now: 6) == .fastEnough)
    }

    @Test func aZeroMinimumTurnsTheCheckOff() {
        var check = SpeedCheck(minimumRate: 0, window: 1, now: 0)
        #expect(check.deadline == nil)
        #expect(check.judge(now: 100) == .pending)
    }

    @Test(arguments: [
        // code, message, head read, error, retryable
        (47, "Maximum (5) redirects followed", false, FetchError.tooManyRedirects(5), false),
        (
            56, "Too large response headers: 307755 > 307200", false,
            .responseHeadTooLarge("Too large response headers: 307755 > 307200"), false
        ),
        (27, "Out of memory", false, .responseHeadTooLarge("a header line over 100 KB"), false),
        (27, "Out of memory", true, .transport(code: 27, message: "Out of memory"), false),
        (56, "Connection reset by peer", false, .transport(code: 56, message: "Connection reset by peer"), true),
        (7, "Failed to connect", false, .transport(code: 7, message: "Failed to connect"), true),
    ])
    func transportFailuresAreClassified(
        code: Int, message: String, headRead: Bool, error: FetchError, retryable: Bool
    ) {
        let failure = ResponsePolicy.transportFailure(code: code, message: message, headRead: headRead, maxRedirects: 5)
        #expect(failure.error == error)
        #expect(failure.retryable == retryable)
    }
}
