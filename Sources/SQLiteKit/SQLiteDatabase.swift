internal import CSQLite
import Synchronization

/// One SQLite connection, used by one thread at a time (its owner serialises the calls,
/// typically under a lock). Every C call goes through one check that turns a result code
/// into a ``SQLiteError``; prepared statements are kept and reused for the connection's life.
public final class SQLiteDatabase {
    private var handle: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    /// Pages in the write-ahead log after this connection's last commit (see ``walPages``).
    private let walSize = WALSize()

    /// How long a statement waits for another connection's lock before it fails as busy.
    static let busyTimeoutMilliseconds: Int32 = 2000

    /// Opens the database at `path`, read-write (creating it) or read-only; `immutable`
    /// promises SQLite that no one changes the file (read-only media). Waits up to two
    /// seconds for other connections' locks. (`sqlite3_open_v2`)
    public init(path: String, readOnly: Bool = false, immutable: Bool = false) throws(SQLiteError) {
        var flags =
            readOnly
            ? SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
            : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        var name = path
        if immutable {
            flags |= SQLITE_OPEN_URI
            let escaped = path.replacing("%", with: "%25")
                .replacing("?", with: "%3f").replacing("#", with: "%23")
            name = "file:\(escaped)?immutable=1"
        }
        let code = sqlite3_open_v2(name, &handle, flags, nil)
        if code != SQLITE_OK {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(handle)
            handle = nil
            throw SQLiteError(code: code, message: message, context: path, operation: .open)
        }
        sqlite3_busy_timeout(handle, Self.busyTimeoutMilliseconds)
    }

    deinit { close() }

    /// Pages in the write-ahead log after this connection's last commit, once
    /// ``takeOverCheckpoints()`` was called; 0 before.
    public var walPages: Int { walSize.pages.load(ordering: .relaxed) }

    /// Stops SQLite from checkpointing inside this connection's commits (a checkpoint syncs
    /// the disk, and the owner may commit under a lock others wait for) and counts the log's
    /// pages instead: the owner checkpoints elsewhere, through ``checkpoint(path:)``, when
    /// ``walPages`` grows. (`sqlite3_wal_hook`)
    public func takeOverCheckpoints() throws(SQLiteError) {
        try execute("PRAGMA wal_autocheckpoint=0")
        sqlite3_wal_hook(handle, WALSize.hook, Unmanaged.passUnretained(walSize).toOpaque())
    }

    /// Copies the write-ahead log of the database at `path` into it and syncs it, through a
    /// connection of its own (PASSIVE: writers go on meanwhile). Returns the log pages left
    /// behind (0 when the whole log was copied and the next commit starts it over).
    @discardableResult
    public static func checkpoint(path: String) throws(SQLiteError) -> Int {
        let database = try SQLiteDatabase(path: path, readOnly: false)
        defer { database.close() }
        var remaining = 0
        try database.run("PRAGMA wal_checkpoint(PASSIVE)") { row in
            remaining = Int((row.integer(1) ?? 0) - (row.integer(2) ?? 0))
        }
        return remaining
    }

    /// Finalises every statement and closes the connection; later calls fail. (`sqlite3_close_v2`)
    public func close() {
        for statement in statements.values { sqlite3_finalize(statement) }
        statements = [:]
        sqlite3_close_v2(handle)
        handle = nil
    }

    /// Throws unless `code` is one of the success codes; `sql` names what failed.
    @discardableResult
    private func check(_ code: Int32, _ sql: @autoclosure () -> String) throws(SQLiteError) -> Int32 {
        guard code == SQLITE_OK || code == SQLITE_ROW || code == SQLITE_DONE else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed"
            throw SQLiteError(code: code, message: message, context: sql(), operation: .statement)
        }
        return code
    }

    /// Runs SQL without results; several statements separated by `;` are allowed, and rows
    /// a statement returns (`PRAGMA journal_mode=WAL`) are ignored. (`sqlite3_exec`)
    public func execute(_ sql: String) throws(SQLiteError) {
        try check(sqlite3_exec(handle, sql, nil, nil, nil), sql)
    }

    /// Runs one statement, binding `values` to its `?` parameters in order and calling
    /// `row` for each result row.
    public func run(_ sql: String, _ values: [SQLiteValue] = [], row: (SQLiteRow) -> Void = { _ in })
        throws(SQLiteError)
    {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, value) in values.enumerated() {
            try check(bind(value, to: statement, at: Int32(index + 1)), "bind \(sql)")
        }
        while true {
            let code = try check(sqlite3_step(statement), sql)
            if code == SQLITE_DONE { return }
            row(SQLiteRow(statement: statement))
        }
    }

    /// The first row of `sql`, read by `read`; nil when there is no row.
    public func firstRow<T>(_ sql: String, _ values: [SQLiteValue] = [], _ read: (SQLiteRow) -> T) throws(SQLiteError)
        -> T?
    {
        var result: T?
        try run(sql, values) { row in if result == nil { result = read(row) } }
        return result
    }

    /// The first column of the first row of `sql`, as text.
    public func text(_ sql: String) throws(SQLiteError) -> String? {
        try firstRow(sql) { $0.text(0) } ?? nil
    }

    /// The rowid of the last inserted row. (`sqlite3_last_insert_rowid`)
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Runs `body` inside a transaction (`BEGIN IMMEDIATE`: the write lock is taken at the
    /// start, so the commit cannot fail as busy), rolled back when it throws.
    public func transaction(_ body: () throws(SQLiteError) -> Void) throws(SQLiteError) {
        try execute("BEGIN IMMEDIATE")
        do throws(SQLiteError) {
            try body()
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func prepared(_ sql: String) throws(SQLiteError) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v2(handle, sql, -1, &statement, nil), sql)
        guard let statement else {
            throw SQLiteError(code: SQLITE_MISUSE, message: "empty statement", context: sql, operation: .statement)
        }
        statements[sql] = statement
        return statement
    }

    private func bind(_ value: SQLiteValue, to statement: OpaquePointer, at position: Int32) -> Int32 {
        switch value {
        case .null: sqlite3_bind_null(statement, position)
        case .integer(let number): sqlite3_bind_int64(statement, position, number)
        case .real(let number): sqlite3_bind_double(statement, position, number)
        case .text(let text): sqlite3_bind_text(statement, position, text, -1, Self.transient)
        case .blob(let bytes):
            bytes.withUnsafeBytes { raw in
                // A zero-length blob needs a non-null pointer, or SQLite binds NULL.
                sqlite3_bind_blob(
                    statement, position, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count),
                    Self.transient)
            }
        }
    }

    /// SQLite's SQLITE_TRANSIENT: copy the bound bytes now.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}

/// The size of a connection's write-ahead log, as its WAL hook reports it after each commit.
private final class WALSize: Sendable {
    let pages = Atomic<Int>(0)

    /// The hook: `context` is the connection's ``WALSize``, unretained (the connection owns it
    /// and outlives its hook).
    static let hook: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 =
        {
            context, _, _, pages in
            if let context {
                Unmanaged<WALSize>.fromOpaque(context).takeUnretainedValue().pages.store(Int(pages), ordering: .relaxed)
            }
            return SQLITE_OK
        }
}
