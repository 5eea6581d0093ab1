import Basics
import Foundation
import Testing

/// RFC 9111's freshness rules for a private cache, by table: each row a response's headers and
/// the decision a cache must reach.
@Suite("HTTP freshness (RFC 9111)")
struct HTTPFreshnessTests {
    /// RFC 9110's own example date, `Sun, 06 Nov 1994 08:49:37 GMT`.
    static let exampleDate = Date(timeIntervalSince1970: 784_111_777)
    static let date = "Sun, 06 Nov 1994 08:49:37 GMT"

    /// A response and what it must give: fresh for `freshFor` seconds from its arrival (nil:
    /// stale at once), or kept off disk.
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        var headers = CachingHeaders()
        var status = 200
        /// Seconds between the request leaving and the head arriving.
        var delay: TimeInterval = 0
        /// Seconds the head arrived after its Date.
        var arrivedAfterDate: TimeInterval = 0
        var freshFor: TimeInterval?
        var everyUse = false
        var mustRevalidate = false
        var memoryOnly = false
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "max-age counts from the arrival", headers: .init(cacheControl: "max-age=3600", date: date),
            freshFor: 3600),
        Case(
            name: "Age uses up lifetime (§4.2.3)", headers: .init(cacheControl: "max-age=3600", date: date, age: "600"),
            freshFor: 3000),
        Case(
            name: "the response delay adds to Age", headers: .init(cacheControl: "max-age=3600", date: date, age: "10"),
            delay: 2, freshFor: 3588),
        Case(
            name: "apparent age from Date when larger",
            headers: .init(cacheControl: "max-age=3600", date: date, age: "10"),
            arrivedAfterDate: 100, freshFor: 3500),
        Case(
            name: "an age past the lifetime is stale", headers: .init(cacheControl: "max-age=60", date: date, age: "61")
        ),
        Case(
            name: "max-age wins over Expires",
            headers: .init(cacheControl: "max-age=10", expires: "Sun, 06 Nov 1994 09:49:37 GMT", date: date),
            freshFor: 10),
        Case(name: "s-maxage is for shared caches only", headers: .init(cacheControl: "s-maxage=600", date: date)),
        Case(
            name: "Expires minus Date", headers: .init(expires: "Sun, 06 Nov 1994 08:59:37 GMT", date: date),
            freshFor: 600),
        Case(
            name: "Expires in the RFC 850 form",
            headers: .init(expires: "Sunday, 06-Nov-94 08:59:37 GMT", date: date), freshFor: 600),
        Case(name: "Expires: 0 has already expired", headers: .init(cacheControl: "public", expires: "0", date: date)),
        Case(name: "an Expires before Date", headers: .init(expires: "Sun, 06 Nov 1994 08:00:00 GMT", date: date)),
        Case(
            name: "heuristic: 10 % of the time since Last-Modified",
            headers: .init(date: date, lastModified: "Sun, 06 Nov 1994 06:49:37 GMT"), freshFor: 720),
        Case(
            name: "heuristic: capped at a day",
            headers: .init(date: date, lastModified: "Sun, 06 Nov 1984 08:49:37 GMT"), freshFor: 86400),
        Case(
            name: "heuristic: not for a 302",
            headers: .init(date: date, lastModified: "Sun, 06 Nov 1994 06:49:37 GMT"), status: 302),
        Case(
            name: "heuristic: a 206 may", headers: .init(date: date, lastModified: "Sun, 06 Nov 1994 06:49:37 GMT"),
            status: 206, freshFor: 720),
        Case(name: "nothing said: stale", headers: .init(date: date)),
        Case(
            name: "no-cache: checked before every use",
            headers: .init(cacheControl: "no-cache, max-age=3600", date: date),
            freshFor: 3600, everyUse: true, mustRevalidate: true),
        Case(
            name: "no-cache with fields counts as no-cache",
            headers: .init(cacheControl: "no-cache=\"Set-Cookie, X-A\", max-age=60", date: date), freshFor: 60,
            everyUse: true, mustRevalidate: true),
        Case(
            name: "must-revalidate", headers: .init(cacheControl: "max-age=60, must-revalidate", date: date),
            freshFor: 60,
            mustRevalidate: true),
        Case(name: "no-store: never on disk", headers: .init(cacheControl: "private, no-store"), memoryOnly: true),
        Case(name: "directives in any case", headers: .init(cacheControl: "No-Store"), memoryOnly: true),
        Case(
            name: "Vary: * cannot be matched", headers: .init(cacheControl: "max-age=60", vary: "Accept, *"),
            memoryOnly: true),
        Case(
            name: "Vary naming headers is stored",
            headers: .init(cacheControl: "max-age=60", date: date, vary: "Accept-Encoding"),
            freshFor: 60),
        Case(name: "a quoted max-age", headers: .init(cacheControl: "max-age=\"60\"", date: date), freshFor: 60),
        Case(
            name: "the first max-age counts", headers: .init(cacheControl: "max-age=60, max-age=3600", date: date),
            freshFor: 60),
        Case(name: "an unreadable max-age is stale", headers: .init(cacheControl: "max-age=soon", date: date)),
        Case(
            name: "a negative Age counts as none", headers: .init(cacheControl: "max-age=60", date: date, age: "-5"),
            freshFor: 60),
    ]

    @Test(arguments: cases)
    func decides(_ row: Case) {
        let arrival = Self.exampleDate.addingTimeInterval(row.arrivedAfterDate)
        let decision = HTTPFreshness.decide(
            row.headers, status: row.status, requestTime: arrival.addingTimeInterval(-row.delay), responseTime: arrival)
        if row.memoryOnly {
            guard case .memoryOnly = decision else {
                Issue.record("\(decision) where the bytes must stay off disk")
                return
            }
            return
        }
        guard case .store(let freshness) = decision else {
            Issue.record("\(decision) where the response may be stored")
            return
        }
        #expect(freshness.freshUntil.map { $0.timeIntervalSince(arrival) } == row.freshFor)
        #expect(freshness.revalidatesEveryUse == row.everyUse)
        #expect(freshness.mustRevalidate == row.mustRevalidate)
    }

    @Test func freshIsStrictlyBeforeTheEndAndNeverUnderNoCache() {
        let end = Self.exampleDate.addingTimeInterval(60)
        let fresh = Freshness(freshUntil: end)
        #expect(fresh.isFresh(at: end.addingTimeInterval(-0.001)))
        #expect(!fresh.isFresh(at: end))
        #expect(!fresh.needsAnswerBeforeUse(at: end.addingTimeInterval(1)), "stale, not must-revalidate")
        #expect(!Freshness(freshUntil: end, revalidatesEveryUse: true).isFresh(at: Self.exampleDate))
        #expect(Freshness(freshUntil: end, revalidatesEveryUse: true).needsAnswerBeforeUse(at: Self.exampleDate))
        let strict = Freshness(freshUntil: end, mustRevalidate: true)
        #expect(!strict.needsAnswerBeforeUse(at: Self.exampleDate))
        #expect(strict.needsAnswerBeforeUse(at: end))
        #expect(!Freshness.unknown.isFresh(at: Self.exampleDate))
    }

    @Test func aNotModifiedRenewsTheLifetimeItStates() {
        let stored = Freshness(freshUntil: Self.exampleDate, mustRevalidate: true)
        let later = Self.exampleDate.addingTimeInterval(1000)
        let renewed = HTTPFreshness.refreshed(
            stored, by: CachingHeaders(cacheControl: "max-age=120"), requestTime: later, responseTime: later)
        #expect(renewed == Freshness(freshUntil: later.addingTimeInterval(120)))
        let silent = HTTPFreshness.refreshed(stored, by: CachingHeaders(), requestTime: later, responseTime: later)
        #expect(silent == stored, "a 304 without caching headers keeps the stored rules")
    }

    @Test func selectingHeadersNameWhatTheRequestSent() {
        let sent = ["user-agent": "Spool/1", "accept-encoding": "identity"]
        let lines = VaryHeader.selectingHeaders("User-Agent, Accept-Language,accept-encoding") { sent[$0.lowercased()] }
        #expect(lines == "accept-encoding: identity\naccept-language: \nuser-agent: Spool/1")
        #expect(VaryHeader.selectingHeaders("*") { _ in nil } == nil)
    }

    @Test func httpDatesInTheirThreeForms() {
        for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            #expect(HTTPDates.parse(text) == Self.exampleDate, "\(text)")
        }
        for text in ["0", "", "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 CET", "tomorrow"] {
            #expect(HTTPDates.parse(text) == nil, "\(text)")
        }
    }
}
