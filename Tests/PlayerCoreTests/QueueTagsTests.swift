import EngineAPI
import Foundation
import PlayerCore
import Synchronization
import TestDoubles
import Testing

/// A tag reader that answers from a table and records what it was asked, and how many reads
/// ran at once. Local files hold all their bytes; an http URL once `complete` says so.
final class FakeTagReader: QueueTagReader {
    private let state = Mutex<(read: [URL], running: Int, mostRunning: Int)>(([], 0, 0))
    private let complete = Mutex<Set<URL>>([])
    private let answers: [URL: ReadTags]

    init(_ answers: [URL: ReadTags]) { self.answers = answers }

    func setComplete(_ url: URL) { _ = complete.withLock { $0.insert(url) } }

    func holdsAllBytes(of url: URL) -> Bool { url.isFileURL || complete.withLock { $0.contains(url) } }

    var read: [URL] { state.withLock { $0.read } }
    var mostRunning: Int { state.withLock { $0.mostRunning } }

    func read(_ url: URL) async -> ReadTags? {
        state.withLock {
            $0.read.append(url)
            $0.running += 1
            $0.mostRunning = max($0.mostRunning, $0.running)
        }
        // Other work of the player gets its turn while the read "runs": a suspension of a few
        // milliseconds, resumed once (twenty yields each waited their turn on a busy executor).
        try? await Task.sleep(for: .milliseconds(5))
        state.withLock { $0.running -= 1 }
        return answers[url]
    }
}

private func tags(_ title: String?, _ artists: [String] = [], album: String? = nil) -> TrackTags {
    var tags = TrackTags()
    tags.title = title
    tags.artists = artists
    tags.album = album
    return tags
}

private let entry = QueueEntry(id: TrackID(7), url: URL(fileURLWithPath: "/music/a.flac"))

@Suite("Queue tags: what the queue shows and what is read ahead")
struct QueueTagPolicyTests {
    @Test func theFirstLocalUnknownUntriedEntryIsReadNext() {
        // (candidates as (id, local, known, tried), a read running, the entry read next)
        let rows: [(candidates: [(UInt64, Bool, Bool, Bool)], reading: Bool, next: UInt64?)] = [
            ([(1, true, false, false), (2, true, false, false)], false, 1),
            ([(1, true, true, false), (2, true, false, false)], false, 2),  // known already
            ([(1, true, false, true), (2, true, false, false)], false, 2),  // tried: never again
            ([(1, false, false, false), (2, true, false, false)], false, 2),  // not here: skipped, not waited for
            ([(1, false, false, false)], false, nil),
            ([(1, true, false, false)], true, nil),  // one read at a time
            ([], false, nil),
        ]
        for row in rows {
            let candidates = row.candidates.map {
                QueueTagCandidate(id: TrackID($0.0), local: $0.1, known: $0.2, tried: $0.3)
            }
            #expect(QueueTagPolicy.next(candidates, reading: row.reading) == row.next.map(TrackID.init), "\(row)")
        }
    }

    @Test func aReadFillsOnlyWhatIsNotKnownAndIsCleaned() {
        var known = entry
        known.tags = tags("Heard", album: nil)
        known.duration = .seconds(61)
        let rows:
            [(
                before: QueueEntry, found: ReadTags, title: String?, artists: [String], album: String?,
                duration: Duration?
            )] = [
                (
                    entry, ReadTags(tags: tags("Read", ["A"], album: "L"), duration: .seconds(60)), "Read", ["A"], "L",
                    .seconds(60)
                ),
                (
                    known, ReadTags(tags: tags("Read", ["A"], album: "L"), duration: .seconds(60)), "Heard", ["A"], "L",
                    .seconds(61)
                ),
                (
                    entry, ReadTags(tags: tags("\u{1B}[2JTitle\u{0}\nnext"), duration: .zero), "[2JTitle next", [], nil,
                    nil
                ),
                (entry, ReadTags(tags: tags(nil, (1...40).map { "A\($0)" })), nil, ["A1", "A2", "A3", "A4"], nil, nil),
                (
                    entry, ReadTags(tags: tags(String(repeating: "x", count: 100_000))),
                    String(repeating: "x", count: 1023) + "…", [], nil, nil
                ),
            ]
        for row in rows {
            let after = QueueTagPolicy.read(row.found, into: row.before)
            #expect(after.tags?.title == row.title, "\(row.found)")
            #expect((after.tags?.artists ?? []) == row.artists)
            #expect(after.tags?.album == row.album)
            #expect(after.duration == row.duration)
            #expect(after.id == row.before.id && after.url == row.before.url && after.title == row.before.title)
        }
    }

    @Test func aReadThatFindsNothingLeavesTheEntryAsItWas() {
        #expect(QueueTagPolicy.read(ReadTags(tags: TrackTags(), duration: nil), into: entry) == entry)
        #expect(QueueTagPolicy.read(ReadTags(tags: tags("  \u{7}  ")), into: entry) == entry)
    }

    @Test func tagsHeardWhilePlayingReplaceWhatWasReadButKeepTheRest() {
        var read = entry
        read.tags = tags("Read", ["A"], album: "Album")
        read.duration = .seconds(60)
        var played = tags("Played")
        played.lyrics = String(repeating: "la ", count: 1000)
        played.genres = ["Rock"]
        let heard = QueueTagPolicy.heard(played, duration: .seconds(62), in: read)
        #expect(heard.tags?.title == "Played")
        #expect(heard.tags?.artists == ["A"] && heard.tags?.album == "Album")
        #expect(heard.tags?.lyrics == nil && heard.tags?.genres == [], "a queue entry keeps only what a queue shows")
        #expect(heard.duration == .seconds(62))
        #expect(QueueTagPolicy.heard(TrackTags(), duration: nil, in: read) == read)
        #expect(QueueTagPolicy.heard(TrackTags(), duration: .seconds(-1), in: entry) == entry)
    }
}

@Suite("Player: tags of queued tracks")
struct PlayerQueueTagsTests {
    let first = URL(string: "http://127.0.0.1:1/first.mp3")!
    let second = URL(fileURLWithPath: "/music/second.flac")

    @Test func aPlayedTrackKeepsItsTagsInTheQueueAfterAnotherPlays() async {
        let (engine, player, recorder, id) = await openedPlayer(first)
        await player.add([second])
        engine.send(.described(id, tags("First", ["Band"]), duration: .seconds(3)))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.nowPlaying?.duration == .seconds(3) })
        await player.next()
        let state = await player.state
        #expect(state.nowPlaying?.entry.url == second)
        #expect(state.queue.first?.tags?.title == "First" && state.queue.first?.tags?.artists == ["Band"])
        #expect(state.queue.first?.duration == .seconds(3))
    }

    @Test func queuedLocalAndCachedTracksAreReadOneAtATimeInPlayOrder() async {
        let cached = URL(string: "http://127.0.0.1:1/cached.mp3")!
        let partial = URL(string: "http://127.0.0.1:1/partial.mp3")!
        let broken = URL(fileURLWithPath: "/music/broken.mp3")
        let last = URL(fileURLWithPath: "/music/last.ogg")
        let reader = FakeTagReader([
            second: ReadTags(tags: tags("Second", ["B"]), duration: .seconds(4)),
            cached: ReadTags(tags: tags("Cached")),
            last: ReadTags(tags: tags("Last\u{1B}]0;x")),
        ])
        reader.setComplete(cached)
        let engine = FakeEngine()
        let player = Player(engine: engine, tagReader: reader)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.add([second, cached, partial, broken, last])  // nothing plays
        #expect(
            await recorder.waitUntil { _ in reader.read.count == 4 && recorder.snapshots.last?.queue.last?.tags != nil }
        )
        #expect(reader.read == [second, cached, broken, last], "the partial download is not read")
        #expect(reader.mostRunning == 1)
        let state = await player.state
        #expect(state.queue.map { $0.tags?.title } == ["Second", "Cached", nil, nil, "Last]0;x"])
        #expect(state.queue.first?.duration == .seconds(4))
        #expect(state.nowPlaying?.tags.title == "Second", "the current entry, not loaded, shows them too")
        #expect(state.nowPlaying?.displayTitle == "Second")
        // Once the download completes, the next look at the queue reads it.
        reader.setComplete(partial)
        await player.play()
        engine.send(.trackStarted(state.queue[0].id))
        #expect(await recorder.waitUntil { _ in reader.read.count == 5 })
        #expect(reader.read.last == partial)
    }

    @Test func readTagsComeBackWithTheSessionAndAreNotReadAgain() async {
        let queued = URL(fileURLWithPath: "/music/queued.flac")
        let memory = TransientMemory()
        do {
            let reader = FakeTagReader([
                second: ReadTags(tags: tags("Second", ["B"]), duration: .seconds(4)),
                queued: ReadTags(tags: tags("Queued")),
            ])
            let player = Player(engine: FakeEngine(), memory: memory, tagReader: reader)
            let recorder = UpdateRecorder()
            await player.observe { recorder.record($0) }
            await player.add([second, queued])
            #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.queue.last?.tags?.title == "Queued" })
            await player.saveNow()
        }
        let reader = FakeTagReader([:])
        let player = Player(engine: FakeEngine(), memory: memory, tagReader: reader)
        await player.restoreSession()
        let state = await player.state
        #expect(state.queue.map { $0.tags?.title } == ["Second", "Queued"])
        #expect(state.queue.first?.duration == .seconds(4) && state.queue.first?.tags?.artists == ["B"])
        // A read the player started would have reached the reader by now (it does without the saved tags).
        for _ in 0..<50 { await Task.yield() }
        await player.setVolume(0.5)
        #expect(reader.read.isEmpty, "nothing is probed again after a restart")
    }

    @Test func noReadStartsBeforeTheLoadedTrackIsHeard() async {
        let queued = URL(fileURLWithPath: "/music/queued.flac")
        let reader = FakeTagReader([queued: ReadTags(tags: tags("Queued"))])
        let engine = FakeEngine()
        let player = Player(engine: engine, tagReader: reader)
        let recorder = UpdateRecorder()
        await player.observe { recorder.record($0) }
        await player.open(first)
        await player.add([queued])
        let id = await player.state.nowPlaying!.entry.id
        // A read the player started would have reached the reader by now (it does without the rule).
        for _ in 0..<50 { await Task.yield() }
        await player.setVolume(0.5)
        #expect(reader.read.isEmpty, "a read would share the two cores with the start")
        engine.send(.trackStarted(id))
        #expect(await recorder.waitUntil { _ in recorder.snapshots.last?.queue.last?.tags?.title == "Queued" })
        #expect(reader.read == [queued])
    }
}
