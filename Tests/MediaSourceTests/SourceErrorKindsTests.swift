import ByteSourceAPI
import Fetcher
import MediaSource
import Testing

@Suite("What a download failure says about trying again")
struct SourceErrorKindsTests {
    static let cases: [(FetchError, String)] = [
        (.httpStatus(404), "gone"), (.httpStatus(410), "gone"), (.httpStatus(403), "gone"),
        (.unresolvable(status: 410), "gone"),
        (.httpStatus(408), "unavailable"), (.httpStatus(429), "unavailable"), (.httpStatus(503), "unavailable"),
        (.transport(code: 6, message: "Could not resolve host"), "unreachable"),
        (.transport(code: 7, message: "Connection refused"), "unreachable"),
        (.transport(code: 28, message: "Timeout"), "unavailable"),
        (.resourceChanged("new length"), "unavailable"),
    ]

    @Test(arguments: cases)
    func classification(failure: FetchError, expected: String) {
        let kind: String =
            switch MediaSourceError(downloadFailure: failure) {
            case .gone: "gone"
            case .unreachable: "unreachable"
            case .unavailable: "unavailable"
            case .readFailed, .closed, .versionChanged: "other"
            }
        #expect(kind == expected)
    }
}
