import Foundation
import Testing

@testable import Fetcher

/// Retry-After dates are parsed by hand since the Fetcher may not import
/// Foundation (issue #5); the answers must be DateFormatter's.
@Suite("HTTP dates")
struct HTTPDateTests {
    @Test func parsesWhatTheFormerDateFormatterParsedAndRejectsTheRest() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let samples = [
            "Wed, 21 Oct 2015 07:28:00 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", "Sun, 29 Feb 2032 23:59:59 GMT",
            "wed, 21 oct 2015 07:28:00 GMT", "Wed, 1 Oct 2015 07:28:00 GMT",
            "Wed, 21 Oct 2015 25:28:00 GMT", "Wed, 21 Oct 2015 07:28:00 UTC", "21 Oct 2015 07:28:00 GMT",
            "Wed, 21 Oct 2015 07:28:00 GMT junk", "Wed, 21 Foo 2015 07:28:00 GMT", "Wed, 21 Oct 2015 07:28 GMT", "",
        ]
        for sample in samples {
            #expect(ResponsePolicy.parseHTTPDate(sample) == formatter.date(from: sample), "\(sample)")
        }
        #expect(ResponsePolicy.parseHTTPDate("Wed, 21 Oct 2015 07:28:00 GMT")?.timeIntervalSince1970 == 1_445_412_480)
    }
}
