import Basics
import Fetcher
import Foundation
import TestSupport
import Testing

@Suite("Fetcher validators: If-Range, revalidation, the end of the resource", .serialized)
struct ValidatorTests {
    let fetcher = Fetcher(configuration: .forTests)
    let body = patternedBody(100_000)

    private func serve(etag: String = "\"v1\"") throws -> (FaultOrigin, URL) {
        let origin = try FaultOrigin()
        origin.serve(OriginResource(body, etag: etag), at: "/a.mp3")
        return (origin, origin.url(for: "/a.mp3"))
    }

    @Test func anUnchangedResourceAnswersIfRangeWithTheRange() throws {
        let (origin, url) = try serve()
        let version = try #require(ResourceVersion.named(etag: "\"v1\"", lastModified: nil))
        let recorder = fetcher.record(
            RangeRequest(url: url, start: 30_000, knownLength: 100_000, condition: .ifRange(version)))
        expectDelivered(recorder, body[30_000...], from: 30_000)
        #expect(recorder.head?.status == 206)
        #expect(recorder.changes.isEmpty)
        let log = try origin.requests(atLeast: 1)
        #expect(log.map(\.ifRange) == ["\"v1\""])
        #expect(log.map(\.range) == ["bytes=30000-99999"])
    }

    @Test func aWeakETagIsNeverSentAsIfRangeTheDateIs() throws {
        let (origin, url) = try serve(etag: "W/\"w1\"")
        let first = fetcher.record(RangeRequest(url: url, end: 10))
        #expect(first.waitForEnd())
        let version = try #require(first.head?.validator)
        #expect(version.etag == "W/\"w1\"")
        let second = fetcher.record(RangeRequest(url: url, start: 10, condition: .ifRange(version)))
        expectDelivered(second, body[10...], from: 10)
        let lastModified = HTTPDate.format(OriginResource(Data()).lastModified)
        #expect(try origin.requests(atLeast: 2).map(\.ifRange) == [nil, lastModified])
    }

    @Test func aRevalidationOfAnUnchangedResourceIsNotModified() throws {
        let (origin, url) = try serve()
        let version = try #require(ResourceVersion.named(etag: "\"v1\"", lastModified: nil))
        let recorder = fetcher.record(RangeRequest(url: url, end: 4096, condition: .ifNoneMatch(version)))
        #expect(recorder.waitForEnd())
        #expect(recorder.contractViolation == nil)
        guard case .notModified(let head)? = recorder.all.first(where: \.isHead) else {
            Issue.record("expected not modified: \(recorder.all)")
            return
        }
        #expect(head.status == 304)
        #expect(head.etag == "\"v1\"")
        #expect(recorder.finished)
        #expect(recorder.body == nil)
        #expect(try origin.requests(atLeast: 1).map(\.ifNoneMatch) == ["\"v1\""])
    }

    @Test func aRevalidationOfAChangedResourceDeliversTheNewStart() throws {
        let (origin, url) = try serve()
        let newBody = Data(body.reversed())
        origin.replace("/a.mp3", with: OriginResource(newBody, etag: "\"v2\""))
        let version = try #require(
            ResourceVersion.named(
                etag: "\"v1\"", lastModified: HTTPDate.format(Date(timeIntervalSince1970: 1_600_000_000))))
        let recorder = fetcher.record(RangeRequest(url: url, end: 4096, condition: .ifNoneMatch(version)))
        expectDelivered(recorder, newBody.prefix(4096))
        #expect(recorder.changes.map(\.etag) == ["\"v2\""])
        #expect(recorder.changes.first?.totalLength == 100_000)
        let log = try origin.requests(atLeast: 1)
        #expect(log.first?.ifNoneMatch == "\"v1\"")
        #expect(log.first?.ifModifiedSince == version.lastModified)
    }

    @Test func a416AtTheKnownEndIsTheEndOfTheResource() throws {
        let (origin, url) = try serve()
        let recorder = fetcher.record(RangeRequest(url: url, start: 100_000, knownLength: 100_000))
        #expect(recorder.waitForEnd())
        #expect(recorder.contractViolation == nil)
        #expect(recorder.finished)
        #expect(recorder.head?.status == 416)
        #expect(recorder.head?.totalLength == 100_000)
        #expect(recorder.body == nil)
        #expect(try origin.requests(atLeast: 1).map(\.range) == ["bytes=100000-"])
    }

    @Test func a416BelowTheKnownEndMeansTheResourceChanged() throws {
        let (origin, url) = try serve()
        let recorder = fetcher.record(RangeRequest(url: url, start: 150_000, knownLength: 200_000))
        expectFailure(recorder) { if case .resourceChanged = $0 { true } else { false } }
        #expect(recorder.body == nil)
        #expect(try origin.requests(atLeast: 1).map(\.status) == [416])
    }

    @Test func aPartialResponseWithAnotherTotalIsNeverDelivered() throws {
        let (origin, url) = try serve()
        let recorder = fetcher.record(RangeRequest(url: url, start: 1000, knownLength: 90_000))
        expectFailure(recorder) { if case .resourceChanged = $0 { true } else { false } }
        #expect(recorder.body == nil)
        #expect(recorder.all.allSatisfy { !$0.isData })
        #expect(try origin.requests(atLeast: 1).count == 1)
    }
}
