import Basics
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
        return ResponsePolicy.judge(
            fields, plan: AttemptPlan(start: start, end: end, knownLength: knownLength, condition: condition))
    }

    private let v1 = ResourceVersion.named(etag: "\"v1\"", lastModified: nil)!

    @Test func aMatchingPartialResponseIsAccepted() {
        #expect(
            judge(206, ["Content-Range": "bytes 100-199/1000"], start: 100, end: 200, knownLength: 1000)
                == .accept(bodyStart: 100, total: 1000, declaredEnd: 200))
        #expect(
            judge(206, ["Content-Range": "bytes 100-149/*"], start: 100, end: 200)
                == .accept(bodyStart: 100, total: nil, declaredEnd: 150))
    }

    @Test func theLastBytesAreAcceptedWhereverTheyStartIfTheyRunToTheEnd() {
        func last(_ status: Int, _ headers: [String: String]) -> HeadVerdict {
            let fields = HeadFields(status: status) { name in headers[name] }
            return ResponsePolicy.judge(fields, plan: AttemptPlan(start: 0, end: nil, knownLength: nil, suffix: 8500))
        }
        #expect(
            last(206, ["Content-Range": "bytes 91500-99999/100000"])
                == .accept(bodyStart: 91500, total: 100_000, declaredEnd: 100_000))
        #expect(
            last(206, ["Content-Range": "bytes 0-4999/5000"]) == .accept(bodyStart: 0, total: 5000, declaredEnd: 5000))
        // Not the end, longer than asked, or no total: not the last bytes.
        #expect(
            last(206, ["Content-Range": "bytes 91500-99998/100000"])
                == .fail(.badContentRange("bytes 91500-99998/100000")))
        #expect(last(206, ["Content-Range": "bytes 0-99999/100000"]) == .fail(.badContentRange("bytes 0-99999/100000")))
        #expect(last(206, ["Content-Range": "bytes 91500-99999/*"]) == .fail(.badContentRange("bytes 91500-99999/*")))
        // An empty resource; an origin without ranges.
        #expect(last(416, ["Content-Range": "bytes */0"]) == .endOfResource(total: 0))
        #expect(last(200, ["Content-Length": "100000"]) == .accept(bodyStart: 0, total: 100_000, declaredEnd: 100_000))
    }

    @Test func aPartialResponseAtAnotherStartOrPastTheEndIsRejected() {
        #expect(
            judge(206, ["Content-Range": "bytes 0-199/1000"], start: 100) == .fail(.badContentRange("bytes 0-199/1000"))
        )
        #expect(
            judge(206, ["Content-Range": "bytes 100-299/1000"], start: 100, end: 200)
                == .fail(.badContentRange("bytes 100-299/1000")))
        #expect(judge(206, [:], start: 100) == .fail(.badContentRange("<missing>")))
        #expect(
            judge(206, ["Content-Range": "bytes 0-9/10", "Content-Type": "multipart/byteranges; boundary=x"])
                == .fail(.badContentRange("multipart/byteranges")))
    }

    @Test func aPartialResponseWithAnotherTotalMeansChanged() {
        guard case .fail(.resourceChanged) = judge(206, ["Content-Range": "bytes 0-9/999"], knownLength: 1000) else {
            Issue.record("another total must be a change")
            return
        }
    }

    @Test func aFullResponseToIfRangeIsAChangeUnlessItNamesTheSameVersion() {
        #expect(
            judge(200, ["Content-Length": "500", "ETag": "\"v2\""], start: 100, condition: .ifRange(v1))
                == .changed(total: 500, declaredEnd: 500))
        // A server ignoring Range sends the same version whole: skip to the byte asked.
        #expect(
            judge(200, ["Content-Length": "500", "ETag": "\"v1\""], start: 100, condition: .ifRange(v1))
                == .accept(bodyStart: 0, total: 500, declaredEnd: 500))
        #expect(
            judge(200, ["Content-Length": "500"], start: 100) == .accept(bodyStart: 0, total: 500, declaredEnd: 500))
        guard case .fail(.resourceChanged) = judge(200, ["Content-Length": "500"], start: 100, knownLength: 400) else {
            Issue.record("a 200 of another length must be a change")
            return
        }
    }

    /// A 206 to a request that held bytes of a version: joined only when nothing shows another version.
    @Test func aPartialResponseIsJoinedOnlyWithTheVersionItNames() {
        let date = "Tue, 14 Nov 2023 22:13:20 GMT"
        let later = "Wed, 15 Nov 2023 08:00:00 GMT"
        let range = "bytes 100-199/1000"
        let accepted = HeadVerdict.accept(bodyStart: 100, total: 1000, declaredEnd: 200)
        func verdict(_ held: ResourceVersion, _ served: [String: String]) -> HeadVerdict {
            judge(
                206, served.merging(["Content-Range": range]) { a, _ in a }, start: 100, end: 200,
                knownLength: 1000, condition: .ifRange(held))
        }
        func changed(_ verdict: HeadVerdict) -> Bool {
            if case .fail(.resourceChanged) = verdict { true } else { false }
        }
        let strong = ResourceVersion.named(etag: "\"s1\"", lastModified: date)!
        let weak = ResourceVersion.named(etag: "W/\"w1\"", lastModified: nil)!
        let weakDated = ResourceVersion.named(etag: "W/\"w1\"", lastModified: date)!
        let dated = ResourceVersion.named(etag: nil, lastModified: date)!
        // (held, served headers, joined?)
        let table: [(ResourceVersion, [String: String], Bool)] = [
            // A strong ETag: sent as If-Range; equal strong tags decide alone.
            (strong, ["ETag": "\"s1\"", "Last-Modified": later], true),
            (strong, ["ETag": "\"s2\"", "Last-Modified": date], false),
            (strong, [:], true),  // the origin checked If-Range and named nothing
            (strong, ["ETag": "W/\"s1\""], false),  // weak never matches strong
            // A weak ETag only: no If-Range can be sent, so the answer must name the same version.
            (weak, ["ETag": "W/\"w1\""], true),
            (weak, ["ETag": "W/\"w2\""], false),
            (weak, ["ETag": "\"w1\""], false),
            (weak, [:], false),
            (weak, ["ETag": "W/\"w1\"", "Last-Modified": date], false),  // a date appeared
            // A weak ETag and a date: the date goes as If-Range; the weak tag is still compared.
            (weakDated, ["ETag": "W/\"w1\"", "Last-Modified": date], true),
            (weakDated, ["ETag": "W/\"w2\"", "Last-Modified": date], false),
            // Last-Modified only.
            (dated, ["Last-Modified": date], true),
            (dated, ["Last-Modified": later], false),
            (dated, [:], true),
        ]
        for (held, served, joined) in table {
            let result = verdict(held, served)
            #expect(joined ? result == accepted : changed(result), "held \(held), served \(served): \(result)")
        }
        // Another total is a change whatever the validators say.
        #expect(
            changed(
                judge(
                    206, ["Content-Range": "bytes 100-199/1001", "ETag": "W/\"w1\""], start: 100,
                    end: 200, knownLength: 1000, condition: .ifRange(weak))))
    }

    @Test func aFullResponseToAWeakValidatorIsAChangeUnlessTheSameWeakTag() {
        let weak = ResourceVersion.named(etag: "W/\"w1\"", lastModified: nil)!
        #expect(
            judge(200, ["Content-Length": "500", "ETag": "W/\"w1\""], start: 100, condition: .ifRange(weak))
                == .accept(bodyStart: 0, total: 500, declaredEnd: 500))
        #expect(
            judge(200, ["Content-Length": "500", "ETag": "W/\"w2\""], start: 100, condition: .ifRange(weak))
                == .changed(total: 500, declaredEnd: 500))
    }

    @Test func revalidationAnswersAreNotModifiedOrChanged() {
        #expect(judge(304, condition: .ifNoneMatch(v1)) == .notModified)
        #expect(judge(304) == .fail(.httpStatus(304)))
        #expect(
            judge(206, ["Content-Range": "bytes 0-9/20"], end: 10, condition: .ifNoneMatch(v1))
                == .changed(total: 20, declaredEnd: 10))
        #expect(
            judge(200, ["Content-Length": "20"], end: 10, condition: .ifNoneMatch(v1))
                == .changed(total: 20, declaredEnd: 20))
    }

    @Test func statusesMapToThePolicy() {
        #expect(judge(416, ["Content-Range": "bytes */1000"], start: 1000) == .endOfResource(total: 1000))
        #expect(judge(416, [:], start: 1000, knownLength: 1000) == .endOfResource(total: 1000))
        #expect(judge(416, [:], start: 10) == .fail(.httpStatus(416)))
        guard case .fail(.resourceChanged) = judge(416, ["Content-Range": "bytes */800"], start: 900, knownLength: 1000)
        else {
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
            ResponsePolicy.backoff(
                attempt: attempt, retryAfter: retryAfter, configuration: configuration, jitter: jitter)
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
        #expect(ResourceVersion.named(etag: "W/\"x\"", lastModified: nil)?.ifRangeValue == nil)
        #expect(
            ResourceVersion.named(etag: "W/\"x\"", lastModified: "Tue, 14 Nov 2023 22:13:20 GMT")?.ifRangeValue
                == "Tue, 14 Nov 2023 22:13:20 GMT")
        #expect(
            ResourceVersion.named(etag: "\"x\"", lastModified: "Tue, 14 Nov 2023 22:13:20 GMT")?.ifRangeValue == "\"x\""
        )
        #expect(ResourceVersion.named(etag: nil, lastModified: nil) == nil)
    }

    @Test func contentRangeIsParsedStrictly() {
        #expect(parseContentRange("bytes 0-99/1000")! == (0, 99, 1000))
        #expect(parseContentRange("bytes 5-9/*")! == (5, 9, nil))
        #expect(parseContentRange("bytes 9-5/1000") == nil)
        #expect(parseContentRange("bytes 0-1000/1000") == nil)
        #expect(parseContentRange("items 0-1/2") == nil)
        #expect(parseContentRange("bytes */1000") == nil)
    }

    /// Whether a body closed short of its declared length ends the resource, or is continued.
    @Test func aShortBodyEndsTheResourceOnlyFromAnOriginThatCannotBeAskedForTheRest() {
        func ends(_ status: Int, ranges: String? = nil, code: Int = 18, bodyEnd: Int64 = 500, next: Int64 = 500) -> Bool
        {
            ResponsePolicy.shortBodyEndsResource(
                status: status, acceptRanges: ranges, code: code, bodyEnd: bodyEnd, next: next)
        }
        #expect(ends(200), "a 200 without Accept-Ranges, closed by the server where it ended")
        #expect(ends(200, ranges: "none"))
        #expect(!ends(200, ranges: "bytes"), "an origin offering ranges is asked from the short end")
        #expect(!ends(200, ranges: "Bytes , foo"))
        #expect(!ends(206), "a 206 is continued with a range request")
        #expect(!ends(200, code: 56), "a reset is a cut, not an end")
        #expect(!ends(200, code: 28), "a stall is a cut, not an end")
        #expect(!ends(200, bodyEnd: 400, next: 500), "a restart that ended before the bytes already delivered")
        #expect(!ends(200, bodyEnd: 0, next: 0), "an empty body is retried")
    }

    /// A 416 exactly where the last body ended, from an origin that checked If-Range: the length
    /// was overstated. Anywhere else, or unchecked, it is a change.
    @Test func aRefusalWhereTheBodyEndedCorrectsTheLength() {
        let refused = ["Content-Range": "bytes */900"]
        #expect(
            judge(416, refused, start: 900, knownLength: 1000, condition: .ifRange(v1)) == .endOfResource(total: 900))
        let weak = ResourceVersion.named(etag: "W/\"v1\"", lastModified: nil)!
        for verdict in [
            judge(416, refused, start: 800, knownLength: 1000, condition: .ifRange(v1)),
            judge(416, refused, start: 900, knownLength: 1000),
            judge(416, refused, start: 900, knownLength: 1000, condition: .ifRange(weak)),
        ] {
            guard case .fail(.resourceChanged) = verdict else {
                Issue.record("expected a change, got \(verdict)")
                continue
            }
        }
    }
}
