import Basics
import Foundation
import Testing

@testable import RangeCache

@Suite struct CacheKeyTests {
    @Test func urlsAreNormalised() {
        let key = CacheKey(url: URL(string: "HTTPS://User:pw@Media.Example.COM:443/a/Track.mp3?b=2&a=1#t=30")!)
        #expect(key.value == "https://media.example.com/a/Track.mp3?a=1&b=2")
        #expect(CacheKey(url: URL(string: "http://h.example:80")!).value == "http://h.example/")
        #expect(CacheKey(url: URL(string: "http://h.example:8080/x")!).value == "http://h.example:8080/x")
    }

    @Test func rotatingSignedURLsShareOneKey() {
        let first = URL(
            string:
                "https://bucket.s3.amazonaws.com/t.flac?X-Amz-Algorithm=AWS4&X-Amz-Signature=abc&X-Amz-Expires=60&v=3")!
        let second = URL(string: "https://bucket.s3.amazonaws.com/t.flac?v=3&x-amz-signature=def&X-Amz-Expires=90")!
        let cloudFront = URL(string: "https://cdn.example/t.flac?v=3&Expires=1&Signature=zz&Key-Pair-Id=K&Policy=p")!
        #expect(CacheKey(url: first) == CacheKey(url: second))
        #expect(CacheKey(url: first).value == "https://bucket.s3.amazonaws.com/t.flac?v=3")
        #expect(CacheKey(url: cloudFront).value == "https://cdn.example/t.flac?v=3")
        #expect(CacheKey(url: URL(string: "https://x.example/a?token=1&sig=2")!).value == "https://x.example/a")
        #expect(CacheKey(url: first, ignoring: []).value.contains("X-Amz-Signature=abc"))
        #expect(
            CacheKey(url: URL(string: "https://x.example/a?id=7")!, ignoring: ["id"]).value == "https://x.example/a")
    }

    @Test func callersMaySupplyAStableKey() {
        #expect(CacheKey(stable: "track:42").value == "track:42")
    }

    @Test func validatorsBindVersions() {
        let strong = ResourceVersion(etag: "\"a\"", lastModified: "Mon", length: 10)
        #expect(strong.isSameVersion(as: ResourceVersion(etag: "\"a\"", lastModified: "Tue", length: 10)))
        #expect(!strong.isSameVersion(as: ResourceVersion(etag: "\"b\"", lastModified: "Mon", length: 10)))
        #expect(!strong.isSameVersion(as: ResourceVersion(lastModified: "Mon", length: 10)), "the strong tag vanished")
        let dated = ResourceVersion(lastModified: "Mon", length: 10)
        #expect(dated.isSameVersion(as: ResourceVersion(lastModified: "Mon", length: 10)))
        #expect(!dated.isSameVersion(as: ResourceVersion(lastModified: "Mon", length: 11)))
        #expect(!dated.isSameVersion(as: ResourceVersion(lastModified: "Tue", length: 10)))
        let weak = ResourceVersion(etag: "W/\"w\"", length: 10)
        #expect(weak.hasWeakETag && weak.etag == "W/\"w\"")
        #expect(weak.isSameVersion(as: ResourceVersion(etag: "W/\"w\"", length: 10)))
        #expect(!weak.isSameVersion(as: ResourceVersion(etag: "W/\"v\"", length: 10)))
        #expect(!weak.isSameVersion(as: ResourceVersion(etag: "\"w\"", length: 10)), "weak never matches strong")
        let weakDated = ResourceVersion(etag: "W/\"w\"", lastModified: "Mon", length: 10)
        #expect(weakDated.isSameVersion(as: ResourceVersion(etag: "W/\"w\"", lastModified: "Mon", length: 10)))
        #expect(
            !weakDated.isSameVersion(as: ResourceVersion(etag: "W/\"v\"", lastModified: "Mon", length: 10)),
            "a changed weak tag is a new version even with the same date")
        #expect(!weak.isSameVersion(as: ResourceVersion(length: 10)), "the weak tag vanished")
        #expect(ResourceVersion(length: 10).isSameVersion(as: ResourceVersion(length: 10)))
        #expect(!ResourceVersion(length: 10).isSameVersion(as: ResourceVersion(length: 11)))
    }

    @Test func sha256MatchesTheStandardVectors() {
        #expect(SHA256.hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(String(repeating: "a", count: 1000)).hasPrefix("41edece42d63e8d9bf515a9ba6932e1c"))
    }
}
