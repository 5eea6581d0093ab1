import DBusKit
import Foundation
import TestSupport
import Testing

// The real `spool daemon` against a radio station that cuts every metadata block into one-byte
// writes and pads each to the largest size (4,080 bytes): each title still reaches MPRIS once its
// audio is heard, in order, decoded (Latin-1 or UTF-8) and split into artist and title, and an
// empty title shows the station's name with no artist.

@Suite("Internet radio titles under the station's faults", .serialized)
struct RadioFaultEndToEndTests {
    /// What MPRIS shows of the song: `xesam:title`, `xesam:artist` and `xesam:album`.
    struct Shown: Equatable, CustomStringConvertible {
        var title: String?
        var artists: [String]
        var album: String?

        init(title: String?, artists: [String] = [], album: String?) {
            self.title = title
            self.artists = artists
            self.album = album
        }

        init(_ metadata: [String: DBusValue]) {
            self.init(
                title: metadata["xesam:title"]?.stringValue, artists: metadata["xesam:artist"]?.stringArrayValue ?? [],
                album: metadata["xesam:album"]?.stringValue)
        }

        var description: String { "\(artists) – \(title ?? "nil") (\(album ?? "no album"))" }
    }

    static let station = "Fault FM"
    /// "Café Tacvba - Eres" in Latin-1, as older stations send it (é is the single byte 0xE9).
    static let latin1Title = Data("Caf".utf8) + Data([0xE9]) + Data(" Tacvba - Eres".utf8)

    @Test func splitOversizeBlocksShowEachTitleInOrderDecodedAndSplit() async throws {
        let rate = Int64(RadioCase.byteRate)
        // A burst of 4 s keeps the audio flowing while a split block (about a second) comes in.
        let radio = try await RadioCase(
            settings: RadioSettings(
                icyName: Self.station, burstBytes: 4 * RadioCase.byteRate,
                titles: [
                    TitleChange(atAudioByte: 0, raw: Self.latin1Title), TitleChange(atAudioByte: 4 * rate, raw: Data()),
                    TitleChange(atAudioByte: 6 * rate, "Guns N' Roses - Sweet Child O' Mine"),
                ]),
            faults: RadioFaults(splitMetadataWrites: true, oversizeBlocks: true))
        let expected = [
            Shown(title: "Eres", artists: ["Café Tacvba"], album: Self.station),
            Shown(title: Self.station, album: Self.station),
            Shown(title: "Sweet Child O' Mine", artists: ["Guns N' Roses"], album: Self.station),
        ]
        // Every change of what MPRIS shows, as the daemon announces it, until the last title:
        // signals, not polls, so a starved test process misses no title shown for a moment.
        let signals = try await radio.connection.subscribe(
            matching:
                "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',arg0='org.mpris.MediaPlayer2.Player'"
        )
        let changes = Task {
            var seen: [Shown] = []
            for await message in signals {
                guard let metadata = changedProperties(message)["Metadata"]?.stringVariantDictValue else { continue }
                let shown = Shown(metadata)
                if shown != seen.last { seen.append(shown) }
                if shown == expected.last { break }
            }
            return seen
        }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(25))
            changes.cancel()
        }
        defer { watchdog.cancel() }
        let opened = try await radio.probe.open(radio.station.url)
        _ = try await radio.probe.awaitAdvancing(since: opened)
        let seen = await changes.value
        // Before the first title comes, the station's name (or the URL's file name) is shown.
        let fromFirstTitle = Array(seen.drop { $0 != expected[0] })
        #expect(fromFirstTitle == expected, "shown in turn: \(seen)\n\(radio.context())")
        let request = try #require(radio.station.requests().first { $0.target == "/stream.mp3" })
        #expect(request.icyMetaData == "1")
        #expect(request.titlesSent.count >= 3, "the station sent \(request.titlesSent.count) titles")
        #expect(request.writes > 3 * 255 * 16, "every block went out a byte per write: \(request.writes) writes")
    }
}
