import Basics
import Testing

@Suite("Whether two HTTP versions are the same bytes")
struct HTTPVersionsTests {
    @Test(
        arguments: [
            // Two strong tags decide alone, whatever the dates say.
            ("\"a\"", "Mon", "\"a\"", "Tue", true),
            ("\"a\"", "Mon", "\"b\"", "Mon", false),
            // A weak tag matches only the same weak tag, and the dates must agree too.
            ("W/\"a\"", "Mon", "W/\"a\"", "Mon", true),
            ("W/\"a\"", "Mon", "W/\"a\"", "Tue", false),
            ("W/\"a\"", "Mon", "\"a\"", "Mon", false),
            // Dates alone.
            (nil, "Mon", nil, "Mon", true),
            (nil, "Mon", nil, "Tue", false),
            // A validator on one side only is a difference.
            ("\"a\"", "Mon", nil, "Mon", false),
            (nil, "Mon", nil, nil, false),
        ] as [(String?, String?, String?, String?, Bool)])
    func theRuleOfStrongAndWeakTags(etag: String?, date: String?, otherETag: String?, otherDate: String?, same: Bool) {
        #expect(
            sameHTTPVersion(etag: etag, lastModified: date, otherETag: otherETag, otherLastModified: otherDate) == same)
    }
}
