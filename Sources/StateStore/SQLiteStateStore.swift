import Basics
import FoundationEssentials
import Glibc
import PlayerCore
internal import SQLiteKit
import Synchronization

/// Resume positions, the saved session and the songs heard on internet radio in a small SQLite
/// database under `$XDG_STATE_HOME/spool` (not the cache: clearing the cache keeps them).
/// WAL mode, so a kill -9 loses nothing that was committed; each save is one
/// short transaction. Failures are logged and swallowed: a lost position is
/// better than stopped music.
public final class SQLiteStateStore: PlaybackMemory {
    /// The connection; the lock keeps statements from interleaving.
    private let database: Mutex<SQLiteDatabase>
    private let log = Logger(label: "state")
    /// The database file.
    public let url: URL

    /// Opens (or creates) `state.sqlite` in `directory`. A damaged database is
    /// moved aside and a fresh one started, with a warning.
    public init(directory: URL) throws {
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        url = directory.appendingPathComponent("state.sqlite")
        do throws(SQLiteError) {
            var database = try Self.open(url)
            if !Self.isHealthy(database) {
                database.close()
                let aside = url.appendingPathExtension("damaged-\(Int(Date().timeIntervalSince1970))")
                log.warning("the state database was damaged; moved it to \(aside.lastPathComponent) and started afresh")
                try? FileManager.default.moveItem(at: url, to: aside)
                for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
                database = try Self.open(url)
            }
            self.database = Mutex(database)
        } catch {
            throw StateStoreError(error)
        }
    }

    /// Opens the database private to the user, in WAL mode, with its tables. Only a failure
    /// to open at all throws: a damaged file is found by ``isHealthy(_:)`` afterwards.
    private static func open(_ url: URL) throws(SQLiteError) -> SQLiteDatabase {
        let database = try SQLiteDatabase(path: url.path)
        chmod(url.path, 0o600)
        for statement in [
            "PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL",
            """
            CREATE TABLE IF NOT EXISTS positions (key TEXT PRIMARY KEY, position_us INTEGER NOT NULL,
              duration_us INTEGER, rate REAL NOT NULL, finished INTEGER NOT NULL, updated REAL NOT NULL)
            """,
            "CREATE TABLE IF NOT EXISTS session (id INTEGER PRIMARY KEY CHECK (id = 1), json BLOB NOT NULL, updated REAL NOT NULL)",
            // Created with the others at every open: a database of an older version gains it.
            """
            CREATE TABLE IF NOT EXISTS history (id INTEGER PRIMARY KEY, heard REAL NOT NULL, station TEXT NOT NULL,
              artist TEXT, title TEXT NOT NULL, url TEXT NOT NULL)
            """,
        ] {
            try? database.execute(statement)
        }
        return database
    }

    /// Whether every page checks out and the tables are there and readable.
    private static func isHealthy(_ database: SQLiteDatabase) -> Bool {
        guard (try? database.text("PRAGMA quick_check")) == "ok" else { return false }
        return (try? database.execute("SELECT count(*) FROM positions; SELECT count(*) FROM session")) != nil
    }

    // MARK: PlaybackMemory

    /// The saved position of the track with this key.
    public func position(forKey key: String) -> SavedPosition? {
        query(
            "SELECT position_us, duration_us, rate, finished FROM positions WHERE key = ?", [.text(key)]
        ) { row in
            SavedPosition(
                key: key, position: .microseconds(row.integer(0) ?? 0),
                duration: row.integer(1).map { .microseconds($0) },
                rate: row.real(2) ?? 0, finished: (row.integer(3) ?? 0) != 0)
        }
    }

    /// Saves (replaces) a track's position.
    public func save(_ position: SavedPosition) {
        execute(
            "INSERT OR REPLACE INTO positions VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(position.key), .integer(position.position.wholeMicroseconds),
                position.duration.map { .integer($0.wholeMicroseconds) } ?? .null, .real(position.rate),
                .integer(position.finished ? 1 : 0), .real(Date().timeIntervalSince1970),
            ])
    }

    /// Forgets a track's position.
    public func forgetPosition(forKey key: String) {
        execute("DELETE FROM positions WHERE key = ?", [.text(key)])
    }

    /// The saved session; nil when none was saved or it cannot be read (a newer format, damage).
    public func session() -> SavedSession? {
        let json: Data? = query("SELECT json FROM session WHERE id = 1", []) { row in row.withBlob(0) { Data($0) } }
        guard let json else { return nil }
        do {
            return try JSONDecoder().decode(SavedSession.self, from: json)
        } catch {
            log.warning("ignoring an unreadable saved session: \(error)")
            return nil
        }
    }

    /// Saves (replaces) the session.
    public func save(_ session: SavedSession) {
        guard let json = try? JSONEncoder().encode(session) else { return }
        execute(
            "INSERT OR REPLACE INTO session VALUES (1, ?, ?)",
            [.blob([UInt8](json)), .real(Date().timeIntervalSince1970)])
    }

    /// Adds a song heard and forgets what is older than the newest ``HeardSong/historyLimit``.
    public func recordHeard(_ song: HeardSong) {
        database.withLock { database in
            do throws(SQLiteError) {
                try database.transaction { () throws(SQLiteError) in
                    try database.run(
                        "INSERT INTO history (heard, station, artist, title, url) VALUES (?, ?, ?, ?, ?)",
                        [
                            .real(song.when.timeIntervalSince1970), .text(song.station), .optional(song.artist),
                            .text(song.title), .text(song.url.absoluteString),
                        ])
                    // Only the oldest rows are ever deleted, so the newest ids follow one another: the
                    // bound is one range of the primary key, and it never keeps more than the limit.
                    try database.run(
                        "DELETE FROM history WHERE id <= ?",
                        [.integer(database.lastInsertedRowID - Int64(HeardSong.historyLimit))])
                }
            } catch {
                log.warning("state database write failed: \(StateStoreError(error))")
            }
        }
    }

    /// The songs heard, newest first, at most `limit`.
    public func heardSongs(limit: Int) -> [HeardSong] {
        guard limit > 0 else { return [] }
        return database.withLock { database in
            var songs: [HeardSong] = []
            do throws(SQLiteError) {
                try database.run(
                    "SELECT heard, station, artist, title, url FROM history ORDER BY id DESC LIMIT ?",
                    [.integer(Int64(limit))]
                ) { row in
                    guard let heard = row.real(0), let station = row.text(1), let title = row.text(3),
                        let url = row.text(4).flatMap({ URL(string: $0) })
                    else { return }
                    songs.append(
                        HeardSong(
                            when: Date(timeIntervalSince1970: heard), station: station, artist: row.text(2),
                            title: title, url: url))
                }
            } catch {
                log.warning("state database read failed: \(StateStoreError(error))")
            }
            return songs
        }
    }

    // MARK: SQLite

    /// Runs a statement that returns no rows; a failure is logged.
    private func execute(_ sql: String, _ values: [SQLiteValue]) {
        database.withLock { database in
            do throws(SQLiteError) {
                try database.run(sql, values)
            } catch {
                log.warning("state database write failed: \(StateStoreError(error))")
            }
        }
    }

    /// The first row of a query, read by `read`; nil when there is none or the query failed
    /// (logged).
    private func query<T: Sendable>(_ sql: String, _ values: [SQLiteValue], _ read: @Sendable (SQLiteRow) -> T) -> T? {
        database.withLock { database in
            do throws(SQLiteError) {
                return try database.firstRow(sql, values, read)
            } catch {
                log.warning("state database read failed: \(StateStoreError(error))")
                return nil
            }
        }
    }
}

/// Why the state store could not be opened.
public struct StateStoreError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String
    init(_ description: String) { self.description = description }

    /// The store's error for a failed SQLite call: the one place they are put in words.
    init(_ error: SQLiteError) {
        switch error.operation {
        case .open: self.init("cannot open \(error.context): \(error.message)")
        case .statement: self.init("\(error.context): \(error.message)")
        }
    }
}

extension Duration {
    /// Whole microseconds, as the database stores time.
    var wholeMicroseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
