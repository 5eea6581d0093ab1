import EngineAPI
import Foundation
import PlayerCore
import TestDoubles
import Testing

/// Text from files made fit to show and to send over D-Bus.
@Suite("Cleaning tag text")
struct TagTextTests {
    @Test func controlCharactersGoAndLineBreaksBecomeOneSpace() {
        let escaped = "Esc\u{1B}[2J\u{7}Bell\r\nNew\u{7F}Del\u{85}Nel\u{9B}Csi\tTab\u{0}"
        #expect(TagText.clean(escaped) == "Esc[2JBell NewDel NelCsi Tab")
        #expect(TagText.clean("  padded \u{2028} lines  ") == "padded lines")
        #expect(TagText.clean("\u{1}\u{2}\r\n \t") == nil)
        #expect(TagText.clean("") == nil)
        // Replacement characters (from invalid UTF-8), format characters and emoji stay.
        #expect(TagText.clean("Bad \u{FFFD} \u{200D}👩‍👩‍👧") == "Bad \u{FFFD} \u{200D}👩‍👩‍👧")
    }

    @Test func longTextIsCutOnACharacterBoundaryWithAnEllipsis() throws {
        let max = TagText.maximumLength
        let exact = String(repeating: "a", count: max)
        #expect(TagText.clean(exact) == exact)
        #expect(TagText.clean(exact + "\n") == exact)
        let long = String(repeating: "a", count: max + 1)
        #expect(TagText.clean(long) == String(repeating: "a", count: max - 1) + "…")
        // e + combining acute is two scalars, one character: never split between them.
        let accented = try #require(TagText.clean(String(repeating: "e\u{301}", count: max)))
        #expect(accented.unicodeScalars.count <= max)
        #expect(accented.hasSuffix("e\u{301}…"), "\(accented.unicodeScalars.suffix(4).map(\.value))")
        // A flag is two regional indicators: never one alone.
        let flags = try #require(TagText.clean("x" + String(repeating: "🇫🇷", count: max)))
        #expect(flags.unicodeScalars.count <= max && flags.dropLast().allSatisfy { $0 == "x" || $0 == "🇫🇷" })
        // One character of a mebibyte of combining marks is cut between scalars, as nothing else can be.
        let cluster = try #require(TagText.clean("a" + String(repeating: "\u{301}", count: 1 << 20)))
        #expect(cluster.unicodeScalars.count == max && cluster.hasSuffix("…"))
    }

    @Test func listsDropEmptyValuesAndRepeatsAndKeepTheFirstFew() {
        let many = (1...10_000).map { "Artist \($0)" }
        #expect(TagText.clean(many) == Array(many.prefix(TagText.maximumCount)))
        #expect(TagText.clean(["", "A", "\u{1B}", "A", " A "]) == ["A"])
    }

    @Test func sanitizedTagsDropAbsurdNumbers() {
        var tags = TrackTags()
        tags.title = "\u{1B}]0;owned\u{7}Title"
        tags.artists = ["", "One", "One"]
        tags.trackNumber = 4_294_967_295
        tags.discNumber = 0
        tags.bitrate = -1
        tags.date = "\r\n"
        let clean = tags.sanitized()
        #expect(clean.title == "]0;ownedTitle")
        #expect(clean.artists == ["One"])
        #expect(clean.trackNumber == nil && clean.discNumber == nil && clean.bitrate == nil && clean.date == nil)
        tags.trackNumber = 12
        tags.discNumber = 2
        #expect(tags.sanitized().trackNumber == 12 && tags.sanitized().discNumber == 2)
    }

    @Test func tagsFromTheEngineAndFromASavedSessionArriveCleaned() async {
        var raw = TrackTags()
        raw.title = "\u{1B}[2JSaved"
        raw.trackNumber = 0
        let memory = TransientMemory()
        memory.save(
            SavedSession(
                entries: [.init(url: URL(fileURLWithPath: "/music/a.mp3"), title: nil)], currentIndex: 0,
                position: .zero, loop: .none, shuffle: false, rate: 1, volume: 1, currentTags: raw))
        let engine = FakeEngine()
        let player = Player(engine: engine, memory: memory, retryDelay: .zero) { $0.absoluteString }
        await player.restoreSession()
        #expect(await player.state.nowPlaying?.tags.title == "[2JSaved")
        #expect(await player.state.nowPlaying?.tags.trackNumber == nil)

        await player.play()
        let id = await player.state.nowPlaying!.entry.id
        raw.title = "Played\u{0}\u{7}"
        engine.send(.described(id, raw, duration: nil))
        for _ in 0..<10_000 where await player.state.nowPlaying?.tags.title != "Played" { await Task.yield() }
        #expect(await player.state.nowPlaying?.tags.title == "Played")
        await player.shutdown()
    }

    @Test func theTitleShownFromAFileNameOrPlaylistIsCleaned() {
        let folder = URL(fileURLWithPath: "/music")
        let named = QueueEntry(id: TrackID(1), url: folder.appendingPathComponent("a\u{1B}[31m\nb.mp3"))
        #expect(NowPlaying(entry: named, tags: TrackTags(), duration: nil).displayTitle == "a[31m b.mp3")
        let listed = QueueEntry(id: TrackID(2), url: folder.appendingPathComponent("c.mp3"), title: "Nul\u{0}Title")
        #expect(NowPlaying(entry: listed, tags: TrackTags(), duration: nil).displayTitle == "NulTitle")
        let blank = QueueEntry(id: TrackID(3), url: folder.appendingPathComponent("d.mp3"), title: "\u{1B}")
        #expect(NowPlaying(entry: blank, tags: TrackTags(), duration: nil).displayTitle == "d.mp3")
    }
}
