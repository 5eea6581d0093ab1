import Foundation
import Testing

@testable import Fetcher

/// The response policy, driven directly: no server, every branch.
@Suite("Fetcher response policy")
struct PolicyTests {
    private func judge(
        _ status: Int, _ headers: [String: String] = [:], start: Int64 = 0, end: Int64? = nil,
        knownLength: Int64? = nil, condition: RequestCondition? = nil
    ) -> HeadVerdict {
        let fields = HeadFields(status: status) { name in headers[name] }
        return ResponsePolicy.judge(fields, plan: AttemptPlan(start: start, end: end, knownLength: knownLength, condition: condition))
    }

    private let v1 = Validator(etag: "\"v1\"", lastModified: nil)!

    @Test func aMatchingPartialResponseIsAccepted() {
        #expect(judge(206, ["Content-Range": "bytes 100-199/1000"], start: 100, end: 200, knownLength: 1000)
            == .accept(bodyStart: 100, total: 1000, declaredEnd: 200))
        #expect(judge(206, ["Content-Range": "bytes 100-149/*"], start: 100, end: 200)
            == .accept(bodyStart: 100, total: nil, declaredEnd: 150))
    }

    @Test func aPartialResponseAtAnotherStartOrPastTheEndIsRejected() {
        #expect(judge(206, ["Content-Range": "bytes 0-199/1000"], start: 100) == .fail(.badContentRange("bytes 0-199/1000")))
        #expect(judge(206, ["Content-Range": "bytes 100-299/1000"], start: 100, end: 200)
            == .fail(.badContentRange("bytes 100-299/1000")))
        #expect(judge(206, [:], start: 100) == .fail(.badContentRange("<missing>")))
        #expect(judge(206, ["Content-Range": "bytes 0-9/10", "Content-Type": "multipart/byteranges; boundary=x"])
            == .fail(.badContentRange("multipart/byteranges")))
    }

    @Test func aPartialResponseWithAnotherTotalMeansChanged() {
        guard case .fail(.resourceChanged) = judge(206, ["Content-Range": "bytes 0-9/999"], knownLength: 1000) else {
            Issue.record("another total must be a change")
            return
        }
    }

    @Test func aFullResponseToIfRangeIsAChangeUnlessItNamesTheSameVersion() {
        #expect(judge(200, ["Content-Length": "500", "ETag": "\"v2\""], start: 100, condition: .ifRange(v1))
            == .changed(total: 500, declaredEnd: 500))
        // A server ignoring Range sends the same version whole: skip to the byte asked.
        #expect(judge(200, ["Content-Length": "500", "ETag": "\"v1\""], start: 100, condition: .ifRange(v1))
            == .accept(bodyStart: 0, total: 500, declaredEnd: 500))
        #expect(judge(200, ["Content-Length": "500"], start: 100) == .accept(bodyStart: 0, total: 500, declaredEnd: 500))
        guard case .fail(.resourceChanged) = judge(200, ["Content-Length": "500"], start: 100, knownLength: 400) else {
            Issue.record("a 200 of another length must be a change")
            return
        }
    }

    @Test func revalidationAnswersAreNotModifiedOrChanged() {
        #expect(judge(304, condition: .ifNoneMatch(v1)) == .notModified)
        #expect(judge(304) == .fail(.httpStatus(304)))
        #expect(judge(206, ["Content-Range": "bytes 0-9/20"], end: 10, condition: .ifNoneMatch(v1))
            == .changed(total: 20, declaredEnd: 10))
        #expect(judge(200, ["Content-Length": "20"], end: 10, condition: .ifNoneMatch(v1)) == .changed(total: 20, declaredEnd: 20))
    }

    @Test func statusesMapToThePolicy() {
        #expect(judge(416, ["Content-Range": "bytes */1000"], start: 1000) == .endOfResource(total: 1000))
        #expect(judge(416, [:], start: 1000, knownLength: 1000) == .endOfResource(total: 1000))
        #expect(judge(416, [:], start: 10) == .fail(.httpStatus(416)))
        guard case .fail(.resourceChanged) = judge(416, ["Content-Range": "bytes */800"], start: 900, knownLength: 1000) else {
            Issue.record("a shorter resource must be a change")
            return
        }
        for status in [401, 403, 410] { #expect(judge(status) == .reresolve(status: status)) }
        for status in [408, 425, 429, 500, 502, 503, 504] {
            #expect(judge(status) == .retry(.httpStatus(status), retryAfter: nil))
        }
        #expect(judge(503, ["Retry-After": "7"]) == .retry(.httpStatus(503), retryAfter: 7))
        for status in [400, 404, 405, 451] { #expect(judge(status) == .fail(.httpStatus(status))) }
    }

    @Test func retryAfterParsesSecondsAndDates() throws {
        #expect(ResponsePolicy.parseRetryAfter("120") == 120)
        #expect(ResponsePolicy.parseRetryAfter("soon") == nil)
        let date = Date().addingTimeInterval(30)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let seconds = try #require(ResponsePolicy.parseRetryAfter(formatter.string(from: date)))
        #expect(seconds > 27 && seconds <= 30)
    }

    @Test func backoffDoublesFromHalfASecondIsCappedAndJittered() {
        let configuration = FetcherConfiguration(userAgent: "Spool/test")
        func delay(_ attempt: Int, _ jitter: Double, retryAfter: Double? = nil) -> Double {
            ResponsePolicy.backoff(attempt: attempt, retryAfter: retryAfter, configuration: configuration, jitter: jitter)
        }
        #expect(delay(1, 1) == 0.5)
        #expect(delay(1, 0) == 0.25)
        #expect(delay(2, 1) == 1)
        #expect(delay(4, 1) == 4)
        #expect(delay(7, 1) == 30)
        #expect(delay(50, 0) == 15)
        #expect(delay(1, 0.5, retryAfter: 12) == 12)
        #expect(delay(1, 0.5, retryAfter: 600) == 60)
    }

    @Test func onlyStrongETagsGuardARange() {
        #expect(Validator(etag: "W/\"x\"", lastModified: nil)?.ifRangeValue == nil)
        #expect(Validator(etag: "W/\"x\"", lastModified: "Tue, 14 Nov 2023 22:13:20 GMT")?.ifRangeValue
            == "Tue, 14 Nov 2023 22:13:20 GMT")
        #expect(Validator(etag: "\"x\"", lastModified: "Tue, 14 Nov 2023 22:13:20 GMT")?.ifRangeValue == "\"x\"")
        #expect(Validator(etag: nil, lastModified: nil) == nil)
    }

    @Test func contentRangeIsParsedStrictly() {
        #expect(parseContentRange("bytes 0-99/1000")! == (0, 99, 1000))
        #expect(parseContentRange("bytes 5-9/*")! == (5, 9, nil))
        #expect(parseContentRange("bytes 9-5/1000") == nil)
        #expect(parseContentRange("bytes 0-1000/1000") == nil)
        #expect(parseContentRange("items 0-1/2") == nil)
        #expect(parseContentRange("bytes */1000") == nil)
    }
}
