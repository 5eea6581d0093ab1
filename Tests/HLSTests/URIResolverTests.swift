import FoundationEssentials
import Testing

@testable import HLS

/// The resolver's shortcuts for plain paths and absolute URLs give what Foundation's general
/// RFC 3986 merge gives.
@Suite("URI resolver")
struct URIResolverTests {
    static let bases = [
        "https://media.example.com/live/radio/index.m3u8",
        "https://media.example.com/live/radio/index.m3u8?token=abc#frag",
        "https://media.example.com/live/radio/",
        "https://media.example.com",
        "http://user@host.example:8080/a/b;params/c.m3u8",
        "file:///srv/hls/playlist.m3u8",
    ]

    static let references = [
        "seg.aac", "seg-1.ts?sig=x%2Fy&b=2", "sub/dir/seg.aac", "sub/./seg.aac", "sub/../seg.aac", "a.b.c",
        "seg.aac#t=10", "my seg.aac", "séance.aac", "x:y/seg.aac", "https://cdn.example.net/a/../b.aac",
        "HTTP://Example.COM/Seg.aac", "skd://key-id", "data:text/plain,abc", "/abs/seg.aac", "//other.example/seg.aac",
        "../up.aac", "./here.aac", ".hidden.aac", "?only=query", "#only-fragment", "a/b?c/../d", "seg:1.aac",
    ]

    @Test(arguments: bases)
    func shortcutsAgreeWithFoundation(base: String) throws {
        let baseURL = url(base)
        let resolver = URIResolver(base: baseURL)
        for reference in Self.references {
            let expected = URL(string: reference, relativeTo: baseURL)?.absoluteURL
            let resolved = try? resolver.resolve(reference, line: 1)
            #expect(resolved == expected, "\(reference) against \(base)")
            #expect(resolved?.absoluteString == expected?.absoluteString, "\(reference) against \(base)")
        }
    }

    @Test func emptyReferenceIsInvalid() {
        #expect(throws: HLSParseError.invalidURI(line: 9)) { try URIResolver(base: playlistURL).resolve("", line: 9) }
    }
}
