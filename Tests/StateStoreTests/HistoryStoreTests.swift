import Foundation
import Glibc
import PlayerCore
import StateStore
import TestSupport
import Testing

/// Runs SQL on a database file through the system's SQLite library, loaded by name: the file an
/// older Spool left is written without the store (this target reaches SQLite only through it).
enum SystemSQLite {
    private typealias Open = @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    private typealias Execute =
        @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, OpaquePointer?, OpaquePointer?, OpaquePointer?) -> Int32
    private typealias Close = @convention(c) (OpaquePointer?) -> Int32

    /// Opens (or creates) the database at `path` and runs `sql`, several statements allowed.
    static func execute(_ sql: String, inDatabaseAt path: String) throws {
        guard let library = dlopen("libsqlite3.so.0", RTLD_NOW) else {
            throw RigError("cannot load libsqlite3: \(dlerror().map { String(cString: $0) } ?? "?")")
        }
        defer { dlclose(library) }
        func function<T>(_ name: String, as type: T.Type) throws -> T {
            guard let address = dlsym(library, name) else { throw RigError("libsqlite3 has no \(name)") }
            return unsafeBitCast(address, to: type)
        }
        let open = try function("sqlite3_open", as: Open.self)
        let execute = try function("sqlite3_exec", as: Execute.self)
        let close = try function("sqlite3_close", as: Close.self)
        var database: OpaquePointer?
        guard open(path, &database) == 0 else { throw RigError("cannot open \(path)") }
        defer { _ = close(database) }
        guard execute(database, sql, nil, nil, nil) == 0 else { throw RigError("SQLite refused: \(sql)") }
    }
}

@Suite("The songs heard, in the state store")
struct HistoryStoreTests {
    static let stream = URL(string: "http://radio.example/jazz.mp3")!

    /// Song `number`, heard three minutes after the one before; the even ones name an artist.
    static func song(_ number: Int) -> HeardSong {
        HeardSong(
            when: Date(timeIntervalSince1970: 1_796_000_000 + Double(number) * 180), station: "Jazz FM",
            artist: number.isMultiple(of: 2) ? "Artist \(number)" : nil, title: "Song \(number)", url: stream)
    }

    @Test func theNewestThousandAreKeptNewestFirstAcrossReopening() throws {
        let dir = try TemporaryDirectory()
        do {
            let store = try SQLiteStateStore(directory: dir.url)
            for number in 1...1_010 { store.recordHeard(Self.song(number)) }
        }
        let store = try SQLiteStateStore(directory: dir.url)
        let kept = store.heardSongs(limit: 5_000)
        #expect(kept.count == 1_000)
        #expect(kept.first == Self.song(1_010) && kept.last == Self.song(11), "the oldest ten are gone")
        // Compared as one verdict: a failed comparison of a thousand songs prints them all.
        #expect(kept.elementsEqual((11...1_010).reversed().map(Self.song)), "newest first, none missing")
        #expect(store.heardSongs(limit: 3) == [1_010, 1_009, 1_008].map(Self.song))
        #expect(store.heardSongs(limit: 0).isEmpty)
    }

    @Test func aDatabaseOfAnOlderVersionGainsTheHistoryAndKeepsWhatItHeld() throws {
        let dir = try TemporaryDirectory()
        // The tables as the version before the history created them, with one position saved.
        try SystemSQLite.execute(
            """
            PRAGMA journal_mode=WAL;
            CREATE TABLE positions (key TEXT PRIMARY KEY, position_us INTEGER NOT NULL,
              duration_us INTEGER, rate REAL NOT NULL, finished INTEGER NOT NULL, updated REAL NOT NULL);
            CREATE TABLE session (id INTEGER PRIMARY KEY CHECK (id = 1), json BLOB NOT NULL, updated REAL NOT NULL);
            INSERT INTO positions VALUES ('k', 90000000, NULL, 1.0, 0, 0);
            """,
            inDatabaseAt: dir.file("state.sqlite").path)
        do {
            let store = try SQLiteStateStore(directory: dir.url)
            #expect(store.heardSongs(limit: 10).isEmpty)
            store.recordHeard(Self.song(1))
            store.recordHeard(Self.song(2))
        }
        let store = try SQLiteStateStore(directory: dir.url)
        #expect(store.heardSongs(limit: 10) == [Self.song(2), Self.song(1)])
        #expect(store.position(forKey: "k")?.position == .seconds(90), "the old file was kept, not started afresh")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(!names.contains { $0.contains("damaged") }, "\(names)")
    }
}
