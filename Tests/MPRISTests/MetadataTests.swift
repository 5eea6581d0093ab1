import DBusKit
import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

@testable import MPRIS

/// Whether `path` is a valid D-Bus object path (the bus refuses a message with any other).
func isObjectPath(_ path: String) -> Bool {
    guard path.hasPrefix("/") else { return false }
    if path == "/" { return true }
    let elements = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
    return elements.allSatisfy { element in
        !element.isEmpty
            && element.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_")
            }
    }
}

/// Every string inside `value` (keys, variants, arrays), depth first.
func strings(in value: DBusValue) -> [String] {
    switch value {
    case .string(let text), .objectPath(let text): [text]
    case .array(_, let values), .structure(let values): values.flatMap(strings(in:))
    case .dictionary(_, _, let entries): entries.flatMap { strings(in: $0.key) + strings(in: $0.value) }
    case .variant(let inner): strings(in: inner)
    default: []
    }
}

@Suite("MPRIS metadata and Player properties, as values")
struct MetadataTests {
    let entry = QueueEntry(id: TrackID(7), url: URL(string: "http://127.0.0.1:1/music/a%20b.mp3")!, title: nil)

    @Test func aPlayingTrackHasTheXesamAndMprisKeysWithTheirTypes() throws {
        var tags = TrackTags()
        tags.title = "Song"
        tags.artists = ["One", "Two"]
        tags.album = "LP"
        tags.albumArtists = ["Band"]
        tags.genres = ["Jazz"]
        tags.trackNumber = 3
        tags.discNumber = 2
        tags.comment = "fine"
        tags.date = "1999-01-02"
        tags.artURL = URL(fileURLWithPath: "/tmp/art.png")
        let value = MPRISService.metadata(NowPlaying(entry: entry, tags: tags, duration: .milliseconds(61_500)))
        #expect(value.signature == "a{sv}")
        let metadata = try #require(value.stringVariantDictValue)
        #expect(metadata["mpris:trackid"] == .objectPath("/org/spool/Track/7"))
        #expect(metadata["mpris:length"] == .int64(61_500_000), "microseconds")
        #expect(metadata["xesam:url"] == .string("http://127.0.0.1:1/music/a%20b.mp3"))
        #expect(metadata["xesam:title"] == .string("Song"))
        #expect(metadata["xesam:artist"] == .stringArray(["One", "Two"]))
        #expect(metadata["xesam:album"] == .string("LP"))
        #expect(metadata["xesam:albumArtist"] == .stringArray(["Band"]))
        #expect(metadata["xesam:genre"] == .stringArray(["Jazz"]))
        #expect(metadata["xesam:trackNumber"] == .int32(3))
        #expect(metadata["xesam:discNumber"] == .int32(2))
        #expect(metadata["xesam:comment"] == .stringArray(["fine"]), "xesam:comment is a list of strings")
        #expect(metadata["xesam:contentCreated"] == .string("1999-01-02"))
        #expect(metadata["mpris:artUrl"] == .string("file:///tmp/art.png"))
    }

    @Test func aTrackWithoutTagsIsNamedByItsFileAndHasNoEmptyKeys() throws {
        let metadata = try #require(
            MPRISService.metadata(NowPlaying(entry: entry, tags: TrackTags(), duration: nil)).stringVariantDictValue)
        #expect(metadata["xesam:title"] == .string("a b.mp3"), "the file name, decoded")
        #expect(
            Set(metadata.keys) == ["mpris:trackid", "xesam:url", "xesam:title"], "no length, artist or album unknown")
        let queued = try #require(
            MPRISService.metadata(QueueEntry(id: TrackID(8), url: entry.url, title: "From the playlist"))
                .stringVariantDictValue)
        #expect(queued["xesam:title"] == .string("From the playlist"))
        #expect(queued["mpris:trackid"] == .objectPath("/org/spool/Track/8"))
    }

    @Test func noTrackIsOnlyTheNoTrackID() {
        #expect(
            MPRISService.metadata(nil) == .stringVariantDict([("mpris:trackid", .objectPath(MPRISService.noTrack))]))
    }

    @Test func trackIDsAreValidObjectPathsForEveryNumber() {
        for raw: UInt64 in [0, 1, 42, UInt64(Int64.max), .max] {
            let path = MPRISService.trackPath(TrackID(raw))
            #expect(isObjectPath(path), "\(path)")
            #expect(path == "/org/spool/Track/\(raw)")
        }
        #expect(isObjectPath(MPRISService.noTrack))
    }

    @Test func hostileTagsFromTheEngineReachTheMetadataFitForTheBus() async throws {
        let engine = FakeEngine()
        let player = Player(engine: engine, retryDelay: .zero)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.open(URL(fileURLWithPath: "/music/\u{1B}[2Jname\u{7}.mp3"))
        let id = try #require(await player.state.nowPlaying?.entry.id)
        var hostile = TrackTags()
        hostile.title = "Ti\u{0}tle\u{1B}]0;owned\u{7}"
        hostile.artists = ["\u{0}", "A\u{8}rtist", "", "A\u{8}rtist"]
        hostile.album = "\u{202E}\u{0}LP\r\n"
        hostile.comment = String(repeating: "\u{1}", count: 10)
        hostile.trackNumber = 4_294_967_295
        engine.send(.described(id, hostile, duration: nil))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.tags.title != nil })
        let value = MPRISService.metadata(await player.state.nowPlaying)
        let texts = strings(in: value)
        #expect(!texts.isEmpty)
        for text in texts {
            #expect(!text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(text.debugDescription)")
            #expect(String(validating: Array(text.utf8), as: UTF8.self) == text)
        }
        let metadata = try #require(value.stringVariantDictValue)
        #expect(metadata["xesam:title"] == .string("Title]0;owned"))
        #expect(metadata["xesam:artist"] == .stringArray(["Artist"]))
        #expect(metadata["xesam:trackNumber"] == nil, "an absurd track number is dropped")
        #expect(metadata["xesam:comment"] == nil, "a comment of control characters only is none")
        #expect(isObjectPath(try #require(metadata["mpris:trackid"]?.objectPathValue)))
    }

    @Test func aFileNameWithControlCharactersIsCleanedToo() throws {
        let named = QueueEntry(id: TrackID(1), url: URL(fileURLWithPath: "/music/\u{1B}[2Jname\u{0}.mp3"))
        let title = try #require(MPRISService.metadata(named).stringVariantDictValue?["xesam:title"]?.stringValue)
        #expect(title == "[2Jname.mp3")
    }

    @Test func microsecondsSaturateAtTheEndsOfInt64() {
        #expect(Duration.milliseconds(1500).microseconds == 1_500_000)
        #expect(Duration.seconds(Int64.max).microseconds == .max)
        #expect(Duration.seconds(Int64.min).microseconds == .min)
        #expect(Duration.microseconds(Int64.max).microseconds == .max)
    }
}

@Suite("Player properties for each playback state")
struct PlayerPropertiesTests {
    let entry = QueueEntry(id: TrackID(3), url: URL(string: "http://127.0.0.1:1/a.mp3")!)

    @Test func stoppedWithAnEmptyQueueCanDoNothing() {
        let properties = MPRISService.playerProperties(PlayerSnapshot())
        #expect(properties["PlaybackStatus"] == .string("Stopped"))
        #expect(properties["CanPlay"] == .boolean(false))
        #expect(properties["CanPause"] == .boolean(false))
        #expect(properties["CanSeek"] == .boolean(false))
        #expect(properties["CanGoNext"] == .boolean(false))
        #expect(properties["Metadata"] == MPRISService.metadata(nil))
        #expect(properties["LoopStatus"] == .string("None"))
        #expect(properties["Shuffle"] == .boolean(false))
        #expect(properties["Position"] == nil, "Position is never signalled")
    }

    @Test func playingAndPausedTracksCanPauseAndSeekOnlyWithALength() {
        var snapshot = PlayerSnapshot()
        snapshot.queue = [entry]
        snapshot.status = .playing
        snapshot.nowPlaying = NowPlaying(entry: entry, tags: TrackTags(), duration: .seconds(10), seekable: true)
        var properties = MPRISService.playerProperties(snapshot)
        #expect(properties["PlaybackStatus"] == .string("Playing"))
        #expect(properties["CanPlay"] == .boolean(true))
        #expect(properties["CanPause"] == .boolean(true))
        #expect(properties["CanSeek"] == .boolean(true))
        snapshot.status = .paused
        snapshot.nowPlaying?.duration = nil
        properties = MPRISService.playerProperties(snapshot)
        #expect(properties["PlaybackStatus"] == .string("Paused"))
        #expect(properties["CanSeek"] == .boolean(false), "no length: a client could not place the seek")
        snapshot.nowPlaying?.duration = .seconds(10)
        snapshot.nowPlaying?.seekable = false
        #expect(MPRISService.playerProperties(snapshot)["CanSeek"] == .boolean(false))
    }

    @Test func stoppedWithTracksCanPlayButNotPause() {
        var snapshot = PlayerSnapshot()
        snapshot.queue = [entry]
        snapshot.loop = .playlist
        snapshot.shuffle = true
        snapshot.rate = 1.5
        snapshot.volume = 0.25
        let properties = MPRISService.playerProperties(snapshot)
        #expect(properties["CanPlay"] == .boolean(true))
        #expect(properties["CanPause"] == .boolean(false))
        #expect(properties["LoopStatus"] == .string("Playlist"))
        #expect(properties["Shuffle"] == .boolean(true))
        #expect(properties["Rate"] == .double(1.5))
        #expect(properties["Volume"] == .double(0.25))
    }
}

@Suite("TrackList signals for a change of the queue")
struct TrackListSignalTests {
    func entry(_ id: UInt64) -> QueueEntry {
        QueueEntry(id: TrackID(id), url: URL(string: "http://127.0.0.1:1/\(id).mp3")!)
    }
    func snapshot(_ ids: [UInt64], playing: UInt64? = nil, title: String? = nil) -> PlayerSnapshot {
        var snapshot = PlayerSnapshot()
        snapshot.queue = ids.map(entry)
        if let playing {
            var tags = TrackTags()
            tags.title = title
            snapshot.nowPlaying = NowPlaying(entry: entry(playing), tags: tags, duration: nil)
        }
        return snapshot
    }

    @Test func anAddedTrackIsAnnouncedAfterItsPredecessor() {
        let signals = MPRISService.trackListSignals(from: snapshot([1, 2]), to: snapshot([1, 3, 2]))
        #expect(signals.map(\.0) == ["TrackAdded"])
        #expect(signals.first?.1.last == .objectPath(MPRISService.trackPath(TrackID(1))))
        let atStart = MPRISService.trackListSignals(from: snapshot([1]), to: snapshot([4, 1]))
        #expect(atStart.first?.1.last == .objectPath(MPRISService.noTrack))
    }

    @Test func aRemovedTrackIsAnnouncedByItsID() {
        let signals = MPRISService.trackListSignals(from: snapshot([1, 2, 3]), to: snapshot([1, 3]))
        #expect(signals.map(\.0) == ["TrackRemoved"])
        #expect(signals.first?.1 == [.objectPath(MPRISService.trackPath(TrackID(2)))])
    }

    @Test func aReorderedOrNewQueueIsReplacedWhole() {
        let moved = MPRISService.trackListSignals(from: snapshot([1, 2, 3]), to: snapshot([3, 1, 2], playing: 3))
        #expect(moved.map(\.0) == ["TrackListReplaced"])
        #expect(moved.first?.1.last == .objectPath(MPRISService.trackPath(TrackID(3))), "the current track")
        let new = MPRISService.trackListSignals(from: snapshot([1, 2]), to: snapshot([5, 6]))
        #expect(new.map(\.0) == ["TrackListReplaced"])
        #expect(new.first?.1.last == .objectPath(MPRISService.noTrack))
    }

    @Test func newTagsOfTheCurrentTrackChangeItsMetadataOnce() {
        let before = snapshot([1, 2], playing: 1)
        #expect(MPRISService.trackListSignals(from: before, to: before).isEmpty, "nothing changed, nothing sent")
        let signals = MPRISService.trackListSignals(from: before, to: snapshot([1, 2], playing: 1, title: "Song"))
        #expect(signals.map(\.0) == ["TrackMetadataChanged"])
        #expect(signals.first?.1.first == .objectPath(MPRISService.trackPath(TrackID(1))))
    }
}
