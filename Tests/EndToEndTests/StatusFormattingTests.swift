import DBusKit
import Foundation
import Testing

@testable import spool

/// The Player and Spool1 properties of a daemon playing one track, as `spool status` reads them.
private func properties(
    title: String? = "Song", artists: [String] = ["Band"], album: String? = "Record", url: String = "http://h/a.mp3",
    status: String = "Playing", position: Double = 65, length: Double? = 200, volume: Double = 0.4, rate: Double = 1.25,
    loop: String = "Track", shuffle: Bool = false, ranges: [(Int64, Int64)] = [(0, 500)], contentLength: Int64 = 1000,
    buffering: Bool = false, download: String = "downloading"
) -> (player: [String: DBusValue], spool: [String: DBusValue]) {
    var metadata: [(String, DBusValue)] = [
        ("mpris:trackid", .objectPath("/org/spool/track/7")), ("xesam:url", .string(url)),
    ]
    if let title { metadata.append(("xesam:title", .string(title))) }
    if !artists.isEmpty { metadata.append(("xesam:artist", .stringArray(artists))) }
    if let album { metadata.append(("xesam:album", .string(album))) }
    if let length { metadata.append(("mpris:length", .int64(Int64(length * 1e6)))) }
    let player: [String: DBusValue] = [
        "PlaybackStatus": .string(status), "Metadata": .stringVariantDict(metadata),
        "Position": .int64(Int64(position * 1e6)), "Volume": .double(volume), "Rate": .double(rate),
        "LoopStatus": .string(loop), "Shuffle": .boolean(shuffle),
    ]
    let spool: [String: DBusValue] = [
        "CachedRanges": .array(elementSignature: "(xx)", ranges.map { .structure([.int64($0.0), .int64($0.1)]) }),
        "ContentLength": .int64(contentLength), "Buffering": .boolean(buffering), "DownloadState": .string(download),
        "LastError": .string(""), "Metered": .boolean(false), "Interrupted": .boolean(false),
    ]
    return (player, spool)
}

private func snapshot(_ given: (player: [String: DBusValue], spool: [String: DBusValue])) -> StatusSnapshot {
    StatusSnapshot(player: given.player, spool: given.spool)
}

@Suite("Status formatting: lines, JSON and templates")
struct StatusFormattingTests {
    @Test(arguments: [
        ("{{title}} – {{artist}}", "Song – Band"),
        ("{{status}} {{position}}/{{length}} -{{remaining}}", "Playing 1:05/3:20 -2:15"),
        ("{{track}} [{{album}}]", "Song – Band [Record]"),
        ("{{volume}}% x{{rate}} {{loop}} {{shuffle}}", "40% x1.25 track off"),
        ("{{cached}} {{download}} {{buffering}}", "50% downloading false"),
        ("{{ lc(status) }} {{uc(artist)}} {{duration(position)}}", "playing BAND 1:05"),
        ("{{xesam:title}} {{mpris:trackid}} {{playerName}}", "Song /org/spool/track/7 spool"),
        ("no placeholders {single} }}", "no placeholders {single} }}"),
    ])
    func templatesFillEveryDocumentedName(template: String, expected: String) throws {
        #expect(try StatusTemplate(template).render(snapshot(properties())) == expected)
    }

    @Test func markupEscapeMakesATitleSafeForPango() throws {
        let rendered = try StatusTemplate("{{markup_escape(title)}}").render(
            snapshot(properties(title: "Rock & <Roll>")))
        #expect(rendered == "Rock &amp; &lt;Roll&gt;")
    }

    @Test(arguments: [
        ("{{tittle}}", "unknown placeholder '{{tittle}}' in the format; did you mean 'title'?"),
        ("{{ zzzzqq }}", "unknown placeholder '{{zzzzqq}}' in the format; 'spool status --help' lists the names"),
        ("{{upper(title)}}", "unknown function 'upper' in the format; use lc, uc, markup_escape, duration"),
        ("{{title", "a '{{' in the format has no matching '}}'"),
    ])
    func aWrongTemplateIsOneLineNamingTheMistake(template: String, message: String) {
        #expect(throws: StatusTemplate.Problem.self) { try StatusTemplate(template) }
        do {
            _ = try StatusTemplate(template)
        } catch {
            #expect(error.description == message)
            #expect(!error.description.contains("\n"))
        }
    }

    @Test func onlyATemplateShowingThePositionChangesEverySecond() throws {
        #expect(try StatusTemplate("{{title}} {{position}}").showsPosition)
        #expect(try StatusTemplate("{{remaining}}").showsPosition)
        #expect(try !StatusTemplate("{{title}} {{length}}").showsPosition)
        // Following, a line is new when its key changes: JSON ignores the position unless its text shows it.
        var later = snapshot(properties())
        later.position += 1
        let json = StatusOutput.json(nil)
        #expect(json.line(snapshot(properties())).key == json.line(later).key)
        #expect(json.line(snapshot(properties())).text != json.line(later).text)
        let timed = StatusOutput.json(try StatusTemplate("{{position}}"))
        #expect(timed.line(snapshot(properties())).key != timed.line(later).key)
        let paused = StatusOutput.template(try StatusTemplate("{{status}}"))
        #expect(paused.line(snapshot(properties())).key == paused.line(later).key)
    }

    @Test func jsonIsOneObjectWithEveryKeySortedAndWaybarsThree() throws {
        let text = snapshot(properties(title: "Ünïcode \"quoted\"")).json(text: nil)
        #expect(!text.contains("\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["title"] as? String == "Ünïcode \"quoted\"")
        #expect(object["artist"] as? String == "Band")
        #expect(object["album"] as? String == "Record")
        #expect(object["url"] as? String == "http://h/a.mp3")
        #expect(object["track_id"] as? String == "/org/spool/track/7")
        #expect(object["status"] as? String == "Playing")
        #expect(object["position"] as? Double == 65)
        #expect(object["length"] as? Double == 200)
        #expect(object["volume"] as? Int == 40)
        #expect(object["rate"] as? Double == 1.25)
        #expect(object["loop"] as? String == "track")
        #expect(object["shuffle"] as? Bool == false)
        #expect(object["buffering"] as? Bool == false)
        #expect(object["cached"] as? Double == 0.5)
        #expect(object["cached_bytes"] as? Int == 500)
        #expect(object["content_length"] as? Int == 1000)
        #expect(object["download"] as? String == "downloading")
        #expect(object["text"] as? String == "Ünïcode \"quoted\" – Band")
        #expect(object["tooltip"] as? String == "Playing: Ünïcode \"quoted\" – Band")
        #expect(object["class"] as? String == "playing")
        #expect(object.keys.contains("metered") && object.keys.contains("interrupted") && object.keys.contains("error"))
        // Keys in a stable (sorted) order, so two runs print the same bytes.
        let keys = text.split(separator: ",").compactMap { $0.split(separator: ":").first }
            .map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "{\"")) }
        #expect(keys.first == "album" && keys.last == "volume", "\(keys)")
    }

    @Test func jsonWithATemplatePutsItInText() throws {
        let template = try StatusTemplate("{{status}}: {{title}}")
        let text = snapshot(properties()).json(text: template.render(snapshot(properties())))
        #expect(text.contains("\"text\":\"Playing: Song\""), "\(text)")
    }

    @Test func jsonOfNothingQueuedHasNullsNotMissingKeys() throws {
        let text = StatusSnapshot(player: ["PlaybackStatus": .string("Stopped")], spool: [:]).json(text: nil)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["title"] is NSNull && object["length"] is NSNull && object["cached"] is NSNull)
        #expect(object["text"] as? String == "" && object["class"] as? String == "stopped")
    }

    @Test func statusShowsVolumeRateLoopAndShuffleAndTitleThenArtist() {
        let given = properties()
        let lines = statusLines(player: given.player, spool: given.spool)
        #expect(lines[0] == "Playing: Song – Band")
        #expect(lines[1] == "1:05 / 3:20 [##########=====---------------] cached 50%")
        #expect(lines[2] == "volume 40% · rate 1.25× · loop track · shuffle off")
        #expect(lines.dropFirst(3) == ["download: downloading"])
    }

    @Test(arguments: [40, 30, 28])
    func aNarrowTerminalShortensTheTitleNeverTheNumbers(width: Int) {
        let given = properties(title: "A Very Long Title That Goes On And On", position: 3723, length: 7384)
        let lines = statusLines(player: given.player, spool: given.spool, width: width)
        #expect(lines[0].count <= width, "\(lines[0])")
        #expect(lines[0].hasPrefix("Playing: A ") && lines[0].contains("…"), "\(lines[0])")
        #expect(lines[1].count <= width, "\(lines[1])")
        #expect(lines[1].hasPrefix("1:02:03 / 2:03:04") && lines[1].hasSuffix(" cached 50%"), "\(lines[1])")
        // The settings wrap between items rather than lose one.
        let settings = lines.dropFirst(2).dropLast()
        #expect(settings.allSatisfy { $0.count <= width }, "\(lines)")
        #expect(settings.joined(separator: " · ") == "volume 40% · rate 1.25× · loop track · shuffle off")
    }

    @Test func fittingCutsTheTitleFirstThenTheArtist() {
        #expect(fitted(title: "Song", artist: "Band", width: nil) == "Song – Band")
        #expect(fitted(title: "Long Song Title", artist: "Band", width: 16) == "Long Son… – Band")
        #expect(fitted(title: "Song", artist: "A Band With A Long Name", width: 10) == "Song – A …")
    }

    @Test func aStreamOfUnknownLengthShowsHowMuchHasDownloaded() throws {
        let given = properties(length: nil, ranges: [(0, 3 << 20)], contentLength: -1)
        let lines = statusLines(player: given.player, spool: given.spool)
        #expect(lines[1] == "1:05 / ? [------------------------------] downloaded 3.0 MiB", "\(lines[1])")
        #expect(try StatusTemplate("{{cached}}").render(snapshot(given)) == "3.0 MiB")
    }
}

@Suite("Status of a live stream")
struct LiveStatusTests {
    private func live(status: String = "Playing", song: String? = "Miles Davis - So What", aired: Int64? = nil)
        -> (player: [String: DBusValue], spool: [String: DBusValue])
    {
        var given = properties(
            title: "So What", artists: ["Miles Davis"], album: "Jazz FM", status: status, length: nil)
        var fields: [(String, DBusValue)] = [("station", .string("Jazz FM")), ("genre", .string("Jazz"))]
        if let song { fields.append(("song", .string(song))) }
        // Aired at `aired` µs when the position was 60 s.
        if let aired { fields += [("aired", .int64(aired)), ("airedPosition", .int64(60_000_000))] }
        given.spool["Live"] = .stringVariantDict(fields)
        return given
    }

    @Test func saysLiveWithTheStationAndTheSongAndNoLength() {
        let lines = statusLines(player: live().player, spool: live().spool)
        #expect(lines.first == "Live: Jazz FM – Miles Davis - So What")
        #expect(lines.dropFirst().first == "listening 1:05")
        #expect(!lines.joined().contains("cached"), "nothing of a live stream is cached")
    }

    @Test func aPausedStationWithoutASongSaysSo() {
        let given = live(status: "Paused", song: nil)
        #expect(statusLines(player: given.player, spool: given.spool).first == "Live (paused): Jazz FM")
    }

    /// A station that dates its audio: the time on air of what is heard now (5 s past the
    /// dated moment, at 1:05 against 1:00), in local time.
    @Test func aDatedStationSaysWhenWhatIsHeardWentOnAir() {
        let given = live(aired: 1_800_000_000_000_000)
        let heard = Calendar.current.dateComponents(in: .current, from: Date(timeIntervalSince1970: 1_800_000_005))
        let clock = String(format: "%02d:%02d:%02d", heard.hour ?? -1, heard.minute ?? -1, heard.second ?? -1)
        #expect(
            statusLines(player: given.player, spool: given.spool).dropFirst().first
                == "listening 1:05 · on air at \(clock)")
        #expect(snapshot(given).jsonFields(text: nil)["on_air"] == .integer(1_800_000_005))
        #expect(snapshot(live()).jsonFields(text: nil)["on_air"] == .null)
    }

    @Test func theJSONCarriesTheStationAndTheSong() throws {
        let fields = snapshot(live()).jsonFields(text: nil)
        #expect(fields["live"] == .bool(true))
        #expect(fields["station"] == .string("Jazz FM"))
        #expect(fields["song"] == .string("Miles Davis - So What"))
        #expect(snapshot(properties()).jsonFields(text: nil)["live"] == .bool(false))
    }
}

@Suite("Status of a presentation with variants")
struct VariantStatusTests {
    private func given(bitrate: Int32, number: Int32, count: Int32)
        -> (player: [String: DBusValue], spool: [String: DBusValue])
    {
        var given = properties(url: "http://h/master.m3u8", length: 40)
        given.spool["Variant"] = .stringVariantDict([
            ("bitrate", .int32(bitrate)), ("number", .int32(number)), ("count", .int32(count)),
        ])
        return given
    }

    @Test func theVariantPlayedIsShownWithItsPlaceAndBitRate() {
        let shown = given(bitrate: 256, number: 2, count: 3)
        #expect(statusLines(player: shown.player, spool: shown.spool).contains("variant: 2 of 3, 256 kbit/s"))
        #expect(snapshot(shown).jsonFields(text: nil)["variant_bitrate"] == .integer(256))
    }

    @Test func aPresentationWithOneVariantOrNoneShowsNoLine() {
        let one = given(bitrate: 128, number: 1, count: 1)
        #expect(!statusLines(player: one.player, spool: one.spool).joined().contains("variant"))
        let none = properties()
        #expect(!statusLines(player: none.player, spool: none.spool).joined().contains("variant"))
        #expect(snapshot(none).jsonFields(text: nil)["variant_bitrate"] == .null)
    }
}
