import Basics
import FoundationEssentials
import Testing

@testable import HLS

/// An HLS playlist from the network names only http(s) addresses (see `ListTrust`), whatever it
/// names: a segment, a key, an initialization section (each fails the playlist: an on-demand
/// timeline cannot skip a piece), a variant or a rendition (each left out, the others play).
/// The same grid as `PlayerCoreTests/ListTrustTests`, with RFC 3986 resolution: in HLS an
/// absolute path is a path on the playlist's server.
@Suite("What an HLS playlist may name")
struct PlaylistTrustTests {
    enum Place: String, CaseIterable, Sendable {
        case segment, key, map, variant, rendition

        func text(naming reference: String) -> String {
            switch self {
            case .segment:
                "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\nok.aac\n#EXTINF:4,\n\(reference)\n#EXT-X-ENDLIST\n"
            case .key:
                """
                #EXTM3U
                #EXT-X-TARGETDURATION:4
                #EXT-X-KEY:METHOD=AES-128,URI="\(reference)"
                #EXTINF:4,
                ok.aac
                #EXT-X-ENDLIST

                """
            case .map:
                "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-MAP:URI=\"\(reference)\"\n#EXTINF:4,\nok.mp4\n#EXT-X-ENDLIST\n"
            case .variant:
                """
                #EXTM3U
                #EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.2"
                \(reference)
                #EXT-X-STREAM-INF:BANDWIDTH=128000,CODECS="mp4a.40.2"
                ok.m3u8

                """
            case .rendition:
                """
                #EXTM3U
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",URI="\(reference)"
                #EXT-X-STREAM-INF:BANDWIDTH=128000,CODECS="mp4a.40.2",AUDIO="a"
                ok.m3u8

                """
            }
        }

        /// The line the reference is on.
        var line: Int {
            switch self {
            case .segment: 6
            case .key, .map, .variant: 3
            case .rendition: 2
            }
        }

        /// The URIs the parsed playlist names at the reference's place.
        func named(in playlist: HLSPlaylist) -> [String] {
            switch (self, playlist) {
            case (.segment, .media(let media)): media.segments.map(\.uri.absoluteString)
            case (.key, .media(let media)): media.segments.compactMap { $0.key?.uri.absoluteString }
            case (.map, .media(let media)): media.segments.compactMap { $0.map?.uri.absoluteString }
            case (.variant, .master(let master)): master.variants.map(\.uri.absoluteString)
            case (.rendition, .master(let master)): master.renditions.compactMap { $0.uri?.absoluteString }
            default: []
            }
        }

        /// What the place names besides the reference.
        func others(base: String) -> [String] {
            switch self {
            case .segment: [base + "ok.aac"]
            case .variant: [base + "ok.m3u8"]
            case .key, .map, .rendition: []
            }
        }
    }

    static let remoteBase = "http://media.example/hls/"
    static let localBase = "file:///music/hls/"

    /// A reference and what it resolves to against each base; whether each may be named.
    struct Row: Sendable, CustomStringConvertible {
        let reference: String
        let remote: (url: String, admitted: Bool)
        let local: (url: String, admitted: Bool)
        var description: String { reference }
    }

    static let rows: [Row] = [
        Row(
            reference: "file:///etc/hostname", remote: ("file:///etc/hostname", false),
            local: ("file:///etc/hostname", true)),
        Row(
            reference: "data:text/plain,abc", remote: ("data:text/plain,abc", false),
            local: ("data:text/plain,abc", false)),
        Row(
            reference: "smb://nas/share/a.aac", remote: ("smb://nas/share/a.aac", false),
            local: ("smb://nas/share/a.aac", false)),
        Row(
            reference: "/etc/hostname", remote: ("http://media.example/etc/hostname", true),
            local: ("file:///etc/hostname", true)),
        Row(
            reference: "sub/a.aac", remote: ("http://media.example/hls/sub/a.aac", true),
            local: ("file:///music/hls/sub/a.aac", true)),
        Row(
            reference: "http://cdn.example/a.aac", remote: ("http://cdn.example/a.aac", true),
            local: ("http://cdn.example/a.aac", true)),
        Row(
            reference: "https://cdn.example/a.aac", remote: ("https://cdn.example/a.aac", true),
            local: ("https://cdn.example/a.aac", true)),
    ]

    @Test(arguments: Place.allCases, rows)
    func aURIInheritsTheTrustOfItsPlaylist(place: Place, row: Row) throws {
        for remote in [true, false] {
            let base = remote ? Self.remoteBase : Self.localBase
            let (resolved, admitted) = remote ? row.remote : row.local
            let context = "\(place) of a playlist \(remote ? "from the network" : "on disk"): \(row.reference)"
            let result = HLSParser.parse(place.text(naming: row.reference), url: url(base + "index.m3u8"))
            let reason = remote ? ListTrust.networkReason : ListTrust.localReason
            let refusal = HLSParseError.refusedURI(line: place.line, uri: resolved, reason: reason)
            switch (place, admitted) {
            case (_, true):
                let playlist = try result.get()
                let named = place.named(in: playlist)
                #expect(Set(named) == Set([resolved] + place.others(base: base)), "\(context)")
                #expect(playlist.master?.refused ?? [] == [], "\(context)")
            case (.segment, false), (.key, false), (.map, false):
                #expect(result == .failure(refusal), "\(context)")
                if case .failure(let error) = result {
                    #expect(error.description == "line \(place.line): \(resolved) is refused (\(reason))")
                }
            case (.variant, false), (.rendition, false):
                let playlist = try result.get()
                #expect(place.named(in: playlist) == place.others(base: base), "\(context)")
                #expect(playlist.master?.refused == [refusal], "\(context)")
            }
        }
    }

    @Test func aMasterWhoseEveryVariantIsRefusedFailsWithTheRefusal() {
        let text = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=64000\nfile:///etc/hostname\n"
        #expect(
            HLSParser.parse(text, url: url(Self.remoteBase + "index.m3u8"))
                == .failure(.refusedURI(line: 3, uri: "file:///etc/hostname", reason: ListTrust.networkReason)))
    }

    @Test func aKeyOfAnotherMethodIsNeverFetchedSoItsSchemeIsNoMatter() throws {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:4
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://key-id",KEYFORMAT="com.apple.streamingkeydelivery"
            #EXTINF:4,
            ok.aac

            """
        let media = try parseMedia(text, url: url(Self.remoteBase + "index.m3u8"))
        #expect(media.segments.first?.key?.method == .sampleAES)
    }
}
