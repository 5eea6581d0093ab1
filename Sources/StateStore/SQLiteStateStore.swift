import FoundationEssentials
import Glibc
import PlayerCore
import SpoolLog
import Synchronization
internal import CSQLite

/// Resume positions and the saved session in a small SQLite database under
/// `$XDG_STATE_HOME/spool` (not the cache: clearing the cache keeps them).
/// WAL mode, so a kill -9 loses nothing that was committed; each save is one
/// short transaction. Failures are logged and swallowed: a lost position is
/// better than stopped music.
public final class SQLiteStateStore: PlaybackMemory {
    /// The connection; every use holds `lock`, so statements never interleave.
    nonisolated(unsafe) private let handle: OpaquePointer?
    private let lock = Mutex(())
    private let log = Logger(label: "state")
    /// The database file.
    public let url: URL

    /// Opens (or creates) `state.sqlite` in `directory`. A damaged database is
    /// moved aside and a fresh one started, with a warning.
    public init(directory: URL) throws {
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        url = directory.appendingPathComponent("state.sqlite")
        let log = self.log
        var handle = try Self.open(url)
        if !Self.isHealthy(handle) {
            sqlite3_close(handle)
            let aside = url.appendingPathExtension("damaged-\(Int(Date().timeIntervalSince1970))")
            log.warning("the state database was damaged; moved it to \(aside.lastPathComponent) and started afresh")
            try? FileManager.default.moveItem(at: url, to: aside)
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
            handle = try Self.open(url)
        }
        self.handle = handle
    }

    deinit {
        sqlite3_close(handle)
    }

    private static func open(_ url: URL) throws -> OpaquePointer? {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX
        guard sqlite3_open_v2(url.path, &handle, flags, nil) == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw StateStoreError("cannot open \(url.path): \(message)")
        }
        chmod(url.path, 0o600)
        sqlite3_busy_timeout(handle, 2000)
        for statement in [
            "PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL",
            """
            CREATE TABLE IF NOT EXISTS positions (key TEXT PRIMARY KEY, position_us INTEGER NOT NULL,
              duration_us INTEGER, rate REAL NOT NULL, finished INTEGER NOT NULL, updated REAL NOT NULL)
            """,
            "CREATE TABLE IF NOT EXISTS session (id INTEGER PRIMARY KEY CHECK (id = 1), json BLOB NOT NULL, updated REAL NOT NULL)",
        ] {
            _ = sqlite3_exec(handle, statement, nil, nil, nil)
        }
        return handle
    }

    private static func isHealthy(_ handle: OpaquePointer?) -> Bool {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, "PRAGMA quick_check", -1, &statement, nil) == SQLITE_OK else { return false }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return false }
        guard String(cString: text) == "ok" else { return false }
        // The tables must be there and readable.
        return sqlite3_exec(handle, "SELECT count(*) FROM positions; SELECT count(*) FROM session", nil, nil, nil) == SQLITE_OK
    }

    // MARK: PlaybackMemory

    /// The saved position of the track with this key.
    public func position(forKey key: String) -> SavedPosition? {
        query(
            "SELECT position_us, duration_us, rate, finished FROM positions WHERE key = ?", [.text(key)]
        ) { row in
            SavedPosition(
                key: key, position: .microseconds(sqlite3_column_int64(row, 0)),
                duration: sqlite3_column_type(row, 1) == SQLITE_NULL ? nil : .microseconds(sqlite3_column_int64(row, 1)),
                rate: sqlite3_column_double(row, 2), finished: sqlite3_column_int(row, 3) != 0)
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
        let json: Data? = query("SELECT json FROM session WHERE id = 1", []) { row in
            guard let bytes = sqlite3_column_blob(row, 0) else { return Data() }
            return Data(bytes: bytes, count: Int(sqlite3_column_bytes(row, 0)))
        }
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
        execute("INSERT OR REPLACE INTO session VALUES (1, ?, ?)", [.blob(json), .real(Date().timeIntervalSince1970)])
    }

    // MARK: SQLite

    private enum Value {
        case text(String), integer(Int64), real(Double), blob(Data), null
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private func prepare(_ handle: OpaquePointer?, _ sql: String, _ values: [Value]) -> OpaquePointer? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else {
            log.warning("state database: \(String(cString: sqlite3_errmsg(handle)))")
            return nil
        }
        for (index, value) in values.enumerated() {
            let position = Int32(index + 1)
            switch value {
            case .text(let text): sqlite3_bind_text(statement, position, text, -1, Self.transient)
            case .integer(let number): sqlite3_bind_int64(statement, position, number)
            case .real(let number): sqlite3_bind_double(statement, position, number)
            case .blob(let data):
                _ = data.withUnsafeBytes { sqlite3_bind_blob(statement, position, $0.baseAddress, Int32(data.count), Self.transient) }
            case .null: sqlite3_bind_null(statement, position)
            }
        }
        return statement
    }

    private func execute(_ sql: String, _ values: [Value]) {
        lock.withLock { _ in
            guard let statement = prepare(handle, sql, values) else { return }
            defer { sqlite3_finalize(statement) }
            if sqlite3_step(statement) != SQLITE_DONE {
                log.warning("state database write failed: \(String(cString: sqlite3_errmsg(handle)))")
            }
        }
    }

    private func query<T>(_ sql: String, _ values: [Value], _ read: (OpaquePointer?) -> T) -> T? {
        lock.withLock { _ in
            guard let statement = prepare(handle, sql, values) else { return nil }
            defer { sqlite3_finalize(statement) }
            return sqlite3_step(statement) == SQLITE_ROW ? read(statement) : nil
        }
    }
}

/// Why the state store could not be opened.
public struct StateStoreError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String
    init(_ description: String) { self.description = description }
}

extension Duration {
    /// Whole microseconds, as the database stores time.
    var wholeMicroseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
