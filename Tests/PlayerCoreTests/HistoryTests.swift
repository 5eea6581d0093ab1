import ByteSourceAPI
import Dispatch
import EngineAPI
import Foundation
import PlayerCore
import Synchronization
import TestDoubles
import Testing

/// A store whose history writes wait until the test lets them through, like a slow disk.
final class HeldHistoryStore: PlaybackMemory {
    let inner = TransientMemory()
    let gate = DispatchSemaphore(value: 0)
    let writeStarted = DispatchSemaphore(value: 0)

    func position(forKey key: String) -> SavedPosition? { inner.position(forKey: key) }
    func save(_ position: SavedPosition) { inner.save(position) }
    func forgetPosition(forKey key: String) { inner.forgetPosition(forKey: key) }
    func session() -> SavedSession? { inner.session() }
    func save(_ session: SavedSession) { inner.save(session) }
    func recordHeard(_ song: HeardSong) {
        writeStarted.signal()
        gate.wait()
        inner.recordHeard(song)
    }
    func heardSongs(limit: Int) -> [HeardSong] { inner.heardSongs(limit: limit) }
}

/// The songs heard on internet radio: the machine asks for each new one to be recorded, the
/// shell dates it, and the memories keep the newest.
@Suite("The history of songs heard")
struct HistoryTests {
    static let stream = URL(string: "http://radio.example/jazz.mp3")!

    /// What one `recordHeard` effect asks to keep.
    struct Recorded: Equatable, Sendable {
        var station: String
        var artist: String?
        var title: String
        var url: URL = HistoryTests.stream
    }

    /// A title as a station sends it, split as "Artist - Title" where it splits.
    static func title(_ text: String, link: String? = nil) -> StreamTitle {
        guard let dash = text.range(of: " - ") else {
            return StreamTitle(text: text, artist: nil, title: text, link: link)
        }
        return StreamTitle(
            text: text, artist: String(text[..<dash.lowerBound]), title: String(text[dash.upperBound...]), link: link)
    }

    /// The songs a step asks to record.
    static func recorded(_ step: PlaybackStep) -> [Recorded] {
        step.effects.compactMap { effect in
            guard case .recordHeard(let station, let artist, let title, let url) = effect else { return nil }
            return Recorded(station: station, artist: artist, title: title, url: url)
        }
    }

    /// A machine playing the live stream ``stream``, which its playlist calls "Jazz File", from a
    /// station whose origin calls it `station` (nil: names none).
    static func listening(station: String?) -> MachineRig {
        var rig = MachineRig()
        rig.apply(.open([TrackItem(url: stream, title: "Jazz File")]))
        let id = rig.id(0)
        rig.apply(.engine(.seekable(id, false)))
        rig.apply(.engine(.liveStream(id, LiveStation(name: station, genre: "Jazz"))))
        rig.apply(.engine(.trackStarted(id)))
        return rig
    }

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        /// The station's name from its origin.
        var station: String? = "Jazz FM"
        /// The titles heard, in order.
        let heard: [StreamTitle]
        /// What is recorded, in order.
        let recorded: [Recorded]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(
            name: "each new song once, as it is heard",
            heard: [title("Miles Davis - So What"), title("Nina Simone - Sinnerman")],
            recorded: [
                Recorded(station: "Jazz FM", artist: "Miles Davis", title: "So What"),
                Recorded(station: "Jazz FM", artist: "Nina Simone", title: "Sinnerman"),
            ]),
        Row(
            name: "a station repeating its title is not a new song",
            heard: [title("Miles Davis - So What"), title("Miles Davis - So What"), title("Miles Davis - So What")],
            recorded: [Recorded(station: "Jazz FM", artist: "Miles Davis", title: "So What")]),
        Row(
            name: "a new link with the same text is the same song",
            heard: [
                title("Miles Davis - So What"), title("Miles Davis - So What", link: "http://jazz.example/so-what"),
            ],
            recorded: [Recorded(station: "Jazz FM", artist: "Miles Davis", title: "So What")]),
        Row(
            name: "an empty title names no song",
            heard: [title(""), title("Miles Davis - So What"), title("")],
            recorded: [Recorded(station: "Jazz FM", artist: "Miles Davis", title: "So What")]),
        Row(
            name: "a song named again after a stretch without one is heard again",
            heard: [title("Miles Davis - So What"), title(""), title("Miles Davis - So What")],
            recorded: Array(repeating: Recorded(station: "Jazz FM", artist: "Miles Davis", title: "So What"), count: 2)),
        Row(
            name: "a title without an artist", heard: [title("Station jingle")],
            recorded: [Recorded(station: "Jazz FM", artist: nil, title: "Station jingle")]),
        Row(
            name: "control characters go; a title of nothing else names no song",
            heard: [
                StreamTitle(text: "\u{7}", artist: nil, title: "\u{7}"),
                StreamTitle(text: "Miles\nDavis - So\tWhat", artist: "Miles\nDavis", title: "So\tWhat"),
            ],
            recorded: [Recorded(station: "Jazz FM", artist: "Miles Davis", title: "So What")]),
        Row(
            name: "a station whose origin names none is the one its playlist named", station: nil,
            heard: [title("Miles Davis - So What")],
            recorded: [Recorded(station: "Jazz File", artist: "Miles Davis", title: "So What")]),
    ]

    @Test(arguments: rows)
    func theMachineAsksToRecordEachNewSongOnce(_ row: Row) {
        var rig = Self.listening(station: row.station)
        let id = rig.id(0)
        let recorded = row.heard.flatMap { Self.recorded(rig.apply(.engine(.streamTitle(id, $0)))) }
        #expect(recorded == row.recorded)
    }

    /// A dated live stream (HLS with `EXT-X-PROGRAM-DATE-TIME`): each segment heard restates
    /// when its audio aired; Live changes only when that moves (segments lost, a rejoin), not
    /// with every segment.
    @Test func theAirTimeFollowsTheDatedSegmentsAndMovesOnlyOnAJump() {
        var rig = Self.listening(station: "Jazz FM")
        let id = rig.id(0)
        let date = Date(timeIntervalSince1970: 1_800_000_000)
        rig.apply(.engine(.programDate(id, date, heardAt: .seconds(4))))
        let first = LiveAiring(date: date, position: .seconds(4))
        #expect(rig.machine.snapshot.nowPlaying?.live?.aired == first)
        #expect(first.date(at: .seconds(5.5)) == date + 1.5)
        // The next segment, 2 s on, says what the pairing already does (heard 50 ms late).
        rig.apply(.engine(.programDate(id, date + 2, heardAt: .seconds(6.05))))
        #expect(rig.machine.snapshot.nowPlaying?.live?.aired == first)
        // 30 s of segments lost: the next one aired 32 s later but is heard 2 s later.
        rig.apply(.engine(.programDate(id, date + 32, heardAt: .seconds(6))))
        #expect(rig.machine.snapshot.nowPlaying?.live?.aired == LiveAiring(date: date + 32, position: .seconds(6)))
    }

    @Test func aFilesTagsAreNoSongHeard() {
        var rig = MachineRig()
        var steps: [PlaybackStep] = []
        steps.append(rig.apply(.open(MachineRig.urls.map { TrackItem(url: $0) })))
        let id = rig.id(0)
        steps.append(rig.apply(.engine(.described(id, MachineRig.tags("So What"), duration: MachineRig.length))))
        steps.append(rig.apply(.engine(.trackStarted(id))))
        steps.append(rig.apply(.engine(.described(id, MachineRig.tags("Sinnerman"), duration: MachineRig.length))))
        // A title for a track that is no live stream shows nowhere, and is not recorded either.
        steps.append(rig.apply(.engine(.streamTitle(id, Self.title("Miles Davis - So What")))))
        #expect(rig.machine.snapshot.nowPlaying?.tags.title == "Sinnerman", "the file's tags were taken")
        #expect(steps.flatMap(Self.recorded).isEmpty)
    }

    @Test func thePlayerDatesEachSongAsItsTitleIsHeardAndRemembersIt() async throws {
        let engine = FakeEngine(trackLength: nil)
        let player = Player(engine: engine, memory: TransientMemory(), retryDelay: .zero)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.add([(Self.stream, "Jazz File")], play: true)
        let id = try #require(await player.state.queue.first?.id)
        engine.send(.liveStream(id, LiveStation(name: "Jazz FM")))
        engine.send(.trackStarted(id))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.live != nil })
        let before = Date()
        engine.send(.streamTitle(id, Self.title("Miles Davis - So What")))
        engine.send(.streamTitle(id, Self.title("Miles Davis - So What")))
        engine.send(.streamTitle(id, Self.title("Station jingle")))
        #expect(
            await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.live?.song?.title == "Station jingle" }
        )
        _ = await player.state  // the step that published the title carried out all its effects
        let after = Date()
        let songs = await player.heardSongs(limit: 10)
        #expect(songs.map(\.title) == ["Station jingle", "So What"])
        #expect(songs.map(\.artist) == [nil, "Miles Davis"])
        #expect(songs.allSatisfy { $0.station == "Jazz FM" && $0.url == Self.stream })
        #expect(songs.allSatisfy { $0.when >= before && $0.when <= after }, "\(songs.map(\.when)), \(before)–\(after)")
        #expect(songs[0].when >= songs[1].when)
    }

    @Test func aMemoryWithoutADiskKeepsTheNewestThousand() {
        let memory = TransientMemory()
        for number in 1...1_005 {
            memory.recordHeard(
                HeardSong(
                    when: Date(timeIntervalSince1970: Double(number)), station: "Jazz FM", artist: nil,
                    title: "Song \(number)", url: Self.stream))
        }
        let kept = memory.heardSongs(limit: 5_000)
        #expect(kept.count == HeardSong.historyLimit)
        #expect(kept.first?.title == "Song 1005" && kept.last?.title == "Song 6")
        #expect(memory.heardSongs(limit: 2).map(\.title) == ["Song 1005", "Song 1004"])
        #expect(memory.heardSongs(limit: 0).isEmpty)
    }

    @Test func writtenBehindASongIsRecordedWithoutWaitingAndReadOnceStored() async {
        let store = HeldHistoryStore()
        let memory = WriteBehindMemory(store)
        let song = HeardSong(
            when: Date(timeIntervalSince1970: 1_796_000_000), station: "Jazz FM", artist: "Miles Davis",
            title: "So What", url: Self.stream)
        memory.recordHeard(song)  // returns while the store holds the write
        store.writeStarted.wait()
        let read = Task.detached { memory.heardSongs(limit: 10) }
        try? await Task.sleep(for: .milliseconds(50))
        store.gate.signal()
        #expect(await read.value == [song], "the read came after the write asked before it")
    }
}
