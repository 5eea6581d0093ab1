import Foundation
import Testing

@testable import PlayerCore

/// A station list, where it was read from, and the entries it must give.
struct StationListCase: Sendable, CustomTestStringConvertible {
    let name: String
    let text: String
    let base: String
    let urls: [String]
    let titles: [String?]
    /// Each entry's other addresses; empty: none has any.
    var mirrors: [[String]] = []
    var testDescription: String { name }
}

/// Text no station list should be read from, with the address it came from.
struct HostileInput: Sendable, CustomTestStringConvertible {
    let name: String
    let text: String
    let base: String
    var testDescription: String { name }
}

@Suite("Station files")
struct StationFileTests {
    static let realisticXSPF = """
        <?xml version="1.0" encoding="UTF-8"?>
        <playlist version="1" xmlns="http://xspf.org/ns/0/" xmlns:vlc="http://www.videolan.org/vlc/playlist/ns/0/">
          <title>Late Night Radio</title>
          <creator>Spool</creator>
          <trackList>
            <track>
              <location>https://ice1.example.net/nightjazz.mp3</location>
              <title>Night Jazz</title>
              <creator>Jazz FM</creator>
              <image>https://example.net/logo.png</image>
              <extension application="http://www.videolan.org/vlc/playlist/0">
                <vlc:id>0</vlc:id>
              </extension>
            </track>
            <track>
              <location>http://ice2.example.net:8000/ambient</location>
              <location>http://backup.example.net/ambient</location>
            </track>
          </trackList>
        </playlist>
        """

    static let lists: [StationListCase] = [
        StationListCase(
            name: "XSPF: a titled track, an untitled one named by the playlist",
            text: realisticXSPF, base: "http://radio.example/lists/night.xspf",
            urls: ["https://ice1.example.net/nightjazz.mp3", "http://ice2.example.net:8000/ambient"],
            titles: ["Night Jazz", "Late Night Radio"], mirrors: [[], ["http://backup.example.net/ambient"]]),
        StationListCase(
            name: "XSPF found by its namespace, with entities, CDATA and a commented-out track",
            text: """
                \u{FEFF}<?xml version="1.0"?>
                <!DOCTYPE playlist [ <!ENTITY x "y"> ]>
                <!-- <track><location>http://commented.example/</location></track> -->
                <playlist version="1" xmlns="http://xspf.org/ns/0/">
                  <trackList>
                    <track>
                      <location>http://radio.example/live?station=1&amp;format=mp3</location>
                      <title><![CDATA[Rock & <Roll> Radio]]></title>
                    </track>
                    <track>
                      <location>  http://radio.example/jazz  </location>
                      <title>Caf&#233; &#x4A;azz &lt;24/7&gt; &quot;live&quot; &apos;n&apos; more &bogus; &amp</title>
                    </track>
                  </trackList>
                </playlist>
                """,
            base: "http://radio.example/get?list=7",
            urls: ["http://radio.example/live?station=1&format=mp3", "http://radio.example/jazz"],
            titles: ["Rock & <Roll> Radio", "Café Jazz <24/7> \"live\" 'n' more &bogus; &amp"]),
        StationListCase(
            name: "XSPF: the first playable location, the creator when there is no title",
            text: """
                <playlist xmlns="http://xspf.org/ns/0/">
                  <trackList>
                    <track>
                      <location>mms://old.example/stream</location>
                      <location>http://new.example/stream</location>
                      <creator>Only A
                        Creator</creator>
                      <extension application="x"><title>not this</title></extension>
                    </track>
                    <track>
                      <title>   </title>
                      <location>http://blank.example/</location>
                    </track>
                    <track><title>No location</title></track>
                  </trackList>
                  <title>Named At The End</title>
                </playlist>
                """,
            base: "file:///home/user/radio.xspf",
            urls: ["http://new.example/stream", "http://blank.example/"],
            titles: ["Only A Creator", "Named At The End"]),
        StationListCase(
            name: "XSPF: relative locations resolved against an http base, an absolute path dropped",
            text: """
                <playlist version="1" xmlns="http://xspf.org/ns/0/"><trackList>
                <track><location>streams/a.mp3</location></track>
                <track><location>../b%20c.ogg</location></track>
                <track><location>/music/d.flac</location></track>
                </trackList></playlist>
                """,
            base: "http://radio.example/lists/local.xspf",
            urls: ["http://radio.example/lists/streams/a.mp3", "http://radio.example/b%20c.ogg"],
            titles: [nil, nil]),
        StationListCase(
            name: "ASX in upper case: two entries, the second's two refs one stream named by the list",
            text: """
                <ASX VERSION="3.0">
                  <TITLE>Radio Example</TITLE>
                  <ENTRY>
                    <TITLE>Morning Show</TITLE>
                    <MOREINFO HREF="http://radio.example/about" />
                    <REF HREF="http://stream.example/morning.mp3" />
                  </ENTRY>
                  <Entry>
                    <Ref Href="http://stream.example/backup.mp3"/>
                    <REF HREF="https://stream2.example/backup.mp3"/>
                  </Entry>
                </ASX>
                """,
            base: "http://radio.example/radio.asx",
            urls: ["http://stream.example/morning.mp3", "http://stream.example/backup.mp3"],
            titles: ["Morning Show", "Radio Example"], mirrors: [[], ["https://stream2.example/backup.mp3"]]),
        StationListCase(
            name: "ASX: single quotes, bare ampersands, mms and rtsp skipped, an unquoted relative ref",
            text: """
                <asx version='3.0'>
                  <entry>
                    <ref href='mms://wm.example/talk'/>
                    <ref href='http://wm.example/talk.mp3?a=1&b=2'/>
                    <ref href = "rtsp://wm.example/talk" >
                    <title>Talk</title>
                  </entry>
                  <Entry><Ref Href=relative/news.mp3 /></Entry>
                </asx>
                """,
            base: "http://radio.example/lists/talk.wax",
            urls: ["http://wm.example/talk.mp3?a=1&b=2", "http://radio.example/lists/relative/news.mp3"],
            titles: ["Talk", nil]),
        StationListCase(
            name: "ASX: NUL bytes between tags and inside a ref",
            text: "<asx>\u{0}<entry>\u{0}<ref href=\"http://a.example/one\"/>\u{0}"
                + "<ref href=\"http://a.example/t\u{0}wo\"/></entry>\u{0}</asx>",
            base: "http://a.example/list.asx",
            urls: ["http://a.example/one"], titles: [nil]),
        StationListCase(
            name: "M3U: #PLAYLIST names the entries without #EXTINF",
            text: """
                #EXTM3U
                #PLAYLIST:Jazz Stations
                #EXTINF:-1,Smooth Jazz
                http://jazz.example/smooth
                http://jazz.example/bebop
                """,
            base: "http://jazz.example/list.m3u",
            urls: ["http://jazz.example/smooth", "http://jazz.example/bebop"],
            titles: ["Smooth Jazz", "Jazz Stations"]),
        StationListCase(
            name: "PLS with Title1 and the counts ignored",
            text: """
                [playlist]
                NumberOfEntries=2
                File1=http://pls.example/one
                Title1=One FM
                File2=two.mp3
                Length2=-1
                Version=2
                """,
            base: "http://pls.example/radio.pls",
            urls: ["http://pls.example/one", "http://pls.example/two.mp3"],
            titles: ["One FM", nil]),
    ]

    @Test(arguments: lists)
    func aStationListGivesItsEntriesInOrderWithTheirTitles(_ list: StationListCase) throws {
        let items = PlaylistParser.parse(list.text, base: try #require(URL(string: list.base)))
        #expect(items.map(\.url.absoluteString) == list.urls)
        #expect(items.map(\.title) == list.titles)
        let mirrors = items.map { $0.mirrors.map(\.absoluteString) }
        #expect(mirrors == (list.mirrors.isEmpty ? Array(repeating: [], count: items.count) : list.mirrors))
    }

    /// One station's servers as directories write them, and lists of tracks that only look alike.
    static let mirrorLists: [StationListCase] = [
        StationListCase(
            name: "SomaFM PLS: numbered mirrors of one station",
            text: """
                [playlist]
                numberofentries=3
                File1=https://ice1.somafm.com/groovesalad-128-mp3
                Title1=SomaFM: Groove Salad (#1): A nicely chilled plate of ambient beats
                Length1=-1
                File2=https://ice2.somafm.com/groovesalad-128-mp3
                Title2=SomaFM: Groove Salad (#2): A nicely chilled plate of ambient beats
                File3=https://ice4.somafm.com/groovesalad-128-mp3
                Title3=SomaFM: Groove Salad (#3): A nicely chilled plate of ambient beats
                Version=2
                """,
            base: "https://somafm.com/groovesalad.pls", urls: ["https://ice1.somafm.com/groovesalad-128-mp3"],
            titles: ["SomaFM: Groove Salad: A nicely chilled plate of ambient beats"],
            mirrors: [["https://ice2.somafm.com/groovesalad-128-mp3", "https://ice4.somafm.com/groovesalad-128-mp3"]]),
        StationListCase(
            name: "SHOUTcast PLS: listener counts in the markers",
            text: """
                [playlist]
                File1=http://198.51.100.7:8000/
                Title1=(#1 - 12/500) Jazz Radio
                File2=http://198.51.100.9:8010/
                Title2=(#2 - 407/500) Jazz Radio
                """,
            base: "http://yp.example/tunein.pls", urls: ["http://198.51.100.7:8000/"], titles: ["Jazz Radio"],
            mirrors: [["http://198.51.100.9:8010/"]]),
        StationListCase(
            name: "untitled M3U: one stream path on two servers",
            text: "http://a.example:8000/live.mp3\nhttp://b.example/live.mp3\n",
            base: "http://radio.example/live.m3u", urls: ["http://a.example:8000/live.mp3"], titles: [nil],
            mirrors: [["http://b.example/live.mp3"]]),
        StationListCase(
            name: "podcast M3U: episodes with titles of their own stay tracks",
            text: """
                #EXTM3U
                #EXTINF:1800,Episode 1
                https://cdn.example/ep1.mp3
                #EXTINF:1750,Episode 2
                https://cdn.example/ep2.mp3
                """,
            base: "https://cdn.example/feed.m3u", urls: ["https://cdn.example/ep1.mp3", "https://cdn.example/ep2.mp3"],
            titles: ["Episode 1", "Episode 2"]),
        StationListCase(
            name: "untitled M3U of remote songs stays tracks",
            text: "http://music.example/a.mp3\nhttp://music.example/b.mp3\n",
            base: "http://music.example/mix.m3u", urls: ["http://music.example/a.mp3", "http://music.example/b.mp3"],
            titles: [nil, nil]),
        StationListCase(
            name: "one title on local files stays tracks",
            text: "#EXTM3U\n#PLAYLIST:Mix\n/music/a.flac\n/music/b.flac\n",
            base: "file:///music/mix.m3u", urls: ["file:///music/a.flac", "file:///music/b.flac"],
            titles: ["Mix", "Mix"]),
        StationListCase(
            name: "M3U named by #PLAYLIST only: remote entries of one list are its mirrors",
            text: "#EXTM3U\n#PLAYLIST:Jazz Radio\nhttp://a.example/jazz\nhttp://b.example/jazz\n",
            base: "http://radio.example/jazz.m3u", urls: ["http://a.example/jazz"], titles: ["Jazz Radio"],
            mirrors: [["http://b.example/jazz"]]),
    ]

    @Test(arguments: mirrorLists)
    func oneStationsServersAreOneEntryWithMirrors(_ list: StationListCase) throws {
        try aStationListGivesItsEntriesInOrderWithTheirTitles(list)
    }

    @Test(arguments: [
        ("SomaFM: Groove Salad (#1): Ambient", "SomaFM: Groove Salad: Ambient"),
        ("(#2 - 407/500) Jazz Radio", "Jazz Radio"),
        ("Radio (#hashtag) One", "Radio (#hashtag) One"),
        ("Cut (#3", "Cut (#3"),
        ("  Plain   Name ", "Plain Name"),
    ])
    func mirrorMarkersAreTakenOutOfTitles(_ title: String, _ stem: String) {
        #expect(StationMirrors.withoutMirrorMarkers(title) == stem)
    }

    static let hlsMedia = "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXT-X-VERSION:3\n#EXTINF:9.009,\nseg0.ts\n"
    static let hlsMaster = "#EXTM3U\r\n  #EXT-X-STREAM-INF:BANDWIDTH=128000\r\nlow/index.m3u8\r\n"
    static let plainExtended = "#EXTM3U\n#EXTINF:-1,Station\nhttp://radio.example/live\n"

    @Test(arguments: [(hlsMedia, true), (hlsMaster, true), (plainExtended, false)])
    func hlsIsNotAStationList(_ text: String, _ isHLS: Bool) throws {
        #expect(PlaylistParser.isHLS(text) == isHLS)
        let items = PlaylistParser.parse(text, base: try #require(URL(string: "http://radio.example/live.m3u8")))
        #expect(items.isEmpty == isHLS)
    }

    @Test(arguments: [
        ("http://radio.example/a.xspf", true), ("http://radio.example/a.ASX?id=3", true),
        ("file:///lists/a.wax", true), ("http://radio.example/a.wvx", true), ("http://radio.example/a.m3u8", true),
        ("http://radio.example/a.mp3", false), ("http://radio.example/a.xml", false),
    ])
    func stationFilesAreKnownByTheirExtension(_ address: String, _ isPlaylist: Bool) throws {
        #expect(PlaylistParser.isPlaylist(try #require(URL(string: address))) == isPlaylist)
    }

    @Test(arguments: [
        (
            "\u{FEFF}<?xml version=\"1.0\"?>\n<!-- by hand -->\n<playlist version=\"1\" xmlns=\"http://xspf.org/ns/0/\">",
            true
        ),
        ("  <ASX version=\"3.0\"><entry>", true),
        ("<playlist version=\"1\"><trackList>", false),
        ("<!DOCTYPE html><html><body>Not found</body></html>", false),
        ("#EXTM3U\n", true),
        ("[playlist]\nFile1=a.mp3\n", true),
        ("ID3\u{3}\u{1}<asx>", false),
    ])
    func stationFilesAreRecognisedByTheirStart(_ text: String, _ looksLikePlaylist: Bool) {
        #expect(PlaylistParser.looksLikePlaylist(text) == looksLikePlaylist)
    }

    static let mebibyte = 1 << 20

    static let hostileInputs: [HostileInput] = [
        HostileInput(
            name: "an unterminated track", text: "<track><location>http://a", base: "http://h.example/a.xspf"),
        HostileInput(
            name: "a mebibyte of <", text: String(repeating: "<", count: mebibyte), base: "http://h.example/a.xspf"),
        HostileInput(
            name: "a mebibyte of unterminated tags", text: String(repeating: "<a", count: mebibyte / 2),
            base: "http://h.example/a.asx"),
        HostileInput(
            name: "a mebibyte of unterminated quotes", text: String(repeating: "<ref href=\"", count: mebibyte / 11),
            base: "http://h.example/a.asx"),
        HostileInput(
            name: "a mebibyte of end tags", text: "<asx>" + String(repeating: "</", count: mebibyte / 2),
            base: "http://h.example/a.asx"),
        HostileInput(
            name: "a mebibyte of comment and CDATA starts",
            text: String(repeating: "<!--<![CDATA[", count: mebibyte / 13), base: "http://h.example/a.xspf"),
        HostileInput(
            name: "a mebibyte of declarations", text: String(repeating: "<![", count: mebibyte / 3),
            base: "http://h.example/a.xspf"),
        HostileInput(
            name: "a mebibyte title of entities and bare ampersands",
            text: "<asx><entry><title>" + String(repeating: "&#x26;&amp&", count: mebibyte / 11)
                + "</title></entry></asx>",
            base: "http://h.example/a.asx"),
        HostileInput(
            name: "a track nested deeper than any station list",
            text: "<playlist xmlns=\"http://xspf.org/ns/0/\">" + String(repeating: "<a>", count: mebibyte / 3)
                + "<trackList><track><location>http://deep.example/x</location></track></trackList>",
            base: "http://h.example/a"),
        HostileInput(
            name: "NUL bytes everywhere",
            text: "<asx>" + String(repeating: "\u{0}<entry\u{0}><ref href=\"\u{0}\"/>", count: mebibyte / 24),
            base: "http://h.example/a.asx"),
    ]

    /// Each input is a mebibyte or so: a quadratic scan would take minutes, a crash fails the run.
    @Test(arguments: hostileInputs)
    func hostileInputGivesNoEntries(_ input: HostileInput) throws {
        let items = PlaylistParser.parse(input.text, base: try #require(URL(string: input.base)))
        #expect(items.isEmpty)
    }

    @Test func aRemoteStationFileIsFetchedAndRead() async throws {
        let resolver = TrackResolver { url in
            #expect(url.absoluteString == "http://radio.example/lists/night.xspf")
            return Data(Self.realisticXSPF.utf8)
        }
        let items = try await resolver.resolve("http://radio.example/lists/night.xspf")
        #expect(
            items.map(\.url.absoluteString) == [
                "https://ice1.example.net/nightjazz.mp3", "http://ice2.example.net:8000/ambient",
            ])
        #expect(items.map(\.title) == ["Night Jazz", "Late Night Radio"])
    }
}
