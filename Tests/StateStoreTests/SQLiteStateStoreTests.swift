import Foundation
import PlayerCore
import StateStore
import TestDoubles
import TestSupport
import Testing

@Suite("SQLite state store")
struct SQLiteStateStoreTests {
    let session = SavedSession(
        entries: [
            .init(url: URL(string: "http://127.0.0.1/a.mp3")!, title: "A"),
            .init(url: URL(fileURLWithPath: "/b.flac"), title: nil),
        ],
        currentIndex: 1, position: .milliseconds(4321), loop: .playlist, shuffle: true, rate: 1.25, volume: 0.5)

    @Test func positionsAndTheSessionSurviveReopening() throws {
        let dir = try TemporaryDirectory()
        do {
            let store = try SQLiteStateStore(directory: dir.url)
            store.save(
                SavedPosition(key: "k", position: .seconds(90), duration: .seconds(600), rate: 1.5, finished: false))
            store.save(SavedPosition(key: "gone", position: .seconds(9), duration: nil, rate: 1, finished: false))
            store.forgetPosition(forKey: "gone")
            store.save(session)
        }
        let store = try SQLiteStateStore(directory: dir.url)
        #expect(
            store.position(forKey: "k")
                == SavedPosition(key: "k", position: .seconds(90), duration: .seconds(600), rate: 1.5, finished: false))
        #expect(store.position(forKey: "gone") == nil)
        #expect(store.session() == session)
    }

    @Test func filesArePrivate() throws {
        let dir = try TemporaryDirectory()
        let store = try SQLiteStateStore(directory: dir.url.appendingPathComponent("spool"))
        store.save(session)
        let attributes = try FileManager.default.attributesOfItem(atPath: store.url.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let directory = try FileManager.default.attributesOfItem(atPath: dir.url.appendingPathComponent("spool").path)
        #expect((directory[.posixPermissions] as? Int) == 0o700)
    }

    @Test func aGarbageDatabaseIsMovedAsideAndTheStoreStillWorks() throws {
        let dir = try TemporaryDirectory()
        try Data(repeating: 0x5A, count: 8192).write(to: dir.file("state.sqlite"))
        let store = try SQLiteStateStore(directory: dir.url)
        #expect(store.session() == nil)
        store.save(session)
        #expect(store.session() == session)
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(names.contains { $0.hasPrefix("state.sqlite.damaged-") })
    }

    @Test func aSessionOfANewerFormatIsIgnored() async throws {
        let dir = try TemporaryDirectory()
        let store = try SQLiteStateStore(directory: dir.url)
        var newer = session
        newer.version = 99
        store.save(newer)
        let player = Player(engine: FakeEngine(), memory: store)
        await player.restoreSession()
        #expect(await player.state.queue.isEmpty)
    }
}
