import FoundationEssentials
internal import CSQLite
import Synchronization

/// One SQLite connection, used by one thread at a time (the cache's lock).
/// Every call goes through ``check(_:_:)``, which turns a result code into a
/// ``CacheError``.
final class Database {
    private var handle: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    /// Pages in the write-ahead log after this connection's last commit (see ``walPages``).
    private let walSize = WALSize()

    /// Opens the database at `path`, read-write (creating it) or read-only;
    /// `immutable` promises SQLite that no one changes the file (read-only media).
    init(path: String, readOnly: Bool, immutable: Bool = false) throws(CacheError) {
        var flags = readOnly
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
            throw CacheError.index("\(path): \(message) (\(code))")
        }
        sqlite3_busy_timeout(handle, 2000)
    }

    deinit { close() }

    /// Pages in the write-ahead log after this connection's last commit, once
    /// ``takeOverCheckpoints()`` was called; 0 before.
    var walPages: Int { walSize.pages.load(ordering: .relaxed) }

    /// Stops SQLite from checkpointing inside this connection's commits (a checkpoint syncs
    /// the disk, and commits run under the cache's lock) and counts the log's pages instead:
    /// the owner checkpoints elsewhere, through ``checkpoint(path:)``, when ``walPages`` grows.
    func takeOverCheckpoints() throws(CacheError) {
        try execute("PRAGMA wal_autocheckpoint=0")
        sqlite3_wal_hook(handle, WALSize.hook, Unmanaged.passUnretained(walSize).toOpaque())
    }

    /// Copies the write-ahead log of the database at `path` into it and syncs it, through a
    /// connection of its own (PASSIVE: writers go on meanwhile). Returns the log pages left
    /// behind (0 when the whole log was copied and the next commit starts it over).
    @discardableResult
    static func checkpoint(path: String) throws(CacheError) -> Int {
        let database = try Database(path: path, readOnly: false)
        defer { database.close() }
        var remaining = 0
        try database.run("PRAGMA wal_checkpoint(PASSIVE)") { row in
            remaining = Int((row.integer(1) ?? 0) - (row.integer(2) ?? 0))
        }
        return remaining
    }

    /// Finalises every statement and closes the connection.
    func close() {
        for statement in statements.values { sqlite3_finalize(statement) }
        statements = [:]
        sqlite3_close_v2(handle)
        handle = nil
    }

    /// Throws unless `code` is one of the success codes.
    @discardableResult
    private func check(_ code: Int32, _ what: @autoclosure () -> String) throws(CacheError) -> Int32 {
        guard code == SQLITE_OK || code == SQLITE_ROW || code == SQLITE_DONE else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed"
            switch code & 0xff {
            case SQLITE_READONLY: throw CacheError.readOnly
            case SQLITE_FULL: throw CacheError.diskFull
            case SQLITE_PERM, SQLITE_CANTOPEN: throw CacheError.permissionDenied("\(what()): \(message)")
            default: throw CacheError.index("\(what()): \(message) (\(code))")
            }
        }
        return code
    }

    /// Runs SQL without results (several statements allowed).
    func execute(_ sql: String) throws(CacheError) {
        try check(sqlite3_exec(handle, sql, nil, nil, nil), sql)
    }

    /// Runs one statement, binding `values` to its `?` parameters in order and
    /// calling `row` for each result row.
    func run(_ sql: String, _ values: [SQLValue] = [], row: (Row) throws(CacheError) -> Void = { _ in }) throws(CacheError) {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, value) in values.enumerated() {
            let position = Int32(index + 1)
            let code: Int32
            switch value {
            case .null: code = sqlite3_bind_null(statement, position)
            case .integer(let number): code = sqlite3_bind_int64(statement, position, number)
            case .text(let text): code = sqlite3_bind_text(statement, position, text, -1, Database.transient)
            case .blob(let bytes):
                code = bytes.withUnsafeBytes { raw in
                    sqlite3_bind_blob(statement, position, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count), Database.transient)
                }
            }
            try check(code, "bind \(sql)")
        }
        while true {
            let code = try check(sqlite3_step(statement), sql)
            if code == SQLITE_DONE { return }
            try row(Row(statement: statement))
        }
    }

    /// The rowid of the last inserted row.
    var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// The first column of the first row of `sql`, as text.
    func text(_ sql: String) throws(CacheError) -> String? {
        var result: String?
        try run(sql) { row in if result == nil { result = row.text(0) } }
        return result
    }

    /// Runs `body` inside a transaction, rolled back when it throws.
    func transaction(_ body: () throws(CacheError) -> Void) throws(CacheError) {
        try execute("BEGIN IMMEDIATE")
        do throws(CacheError) {
            try body()
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func prepared(_ sql: String) throws(CacheError) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v2(handle, sql, -1, &statement, nil), sql)
        guard let statement else { throw CacheError.index("empty statement: \(sql)") }
        statements[sql] = statement
        return statement
    }

    /// SQLite's SQLITE_TRANSIENT: copy the bound bytes now.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}

/// The size of a connection's write-ahead log, as its WAL hook reports it after each commit.
private final class WALSize: Sendable {
    let pages = Atomic<Int>(0)

    /// The hook: `context` is the connection's ``WALSize``, unretained (the connection owns it
    /// and outlives its hook).
    static let hook: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 = {
        context, _, _, pages in
        if let context { Unmanaged<WALSize>.fromOpaque(context).takeUnretainedValue().pages.store(Int(pages), ordering: .relaxed) }
        return SQLITE_OK
    }
}

/// A value bound to a statement parameter.
enum SQLValue {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])

    /// `.text` or `.null`.
    static func optional(_ text: String?) -> SQLValue { text.map { .text($0) } ?? .null }
    /// `.integer` or `.null`.
    static func optional(_ number: Int64?) -> SQLValue { number.map { .integer($0) } ?? .null }
}

/// One result row, valid only inside the `row` closure of ``Database/run(_:_:row:)``.
struct Row {
    fileprivate let statement: OpaquePointer

    /// Column `index` as an integer, nil when NULL.
    func integer(_ index: Int32) -> Int64? {
        sqlite3_column_type(statement, index) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, index)
    }

    /// Column `index` as text, nil when NULL.
    func text(_ index: Int32) -> String? {
        guard let pointer = sqlite3_column_text(statement, index) else { return nil }
        return String(cString: pointer)
    }

    /// Column `index` as raw bytes, passed to `body` (empty for NULL).
    func withBlob<T>(_ index: Int32, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        let pointer = sqlite3_column_blob(statement, index)
        let count = Int(sqlite3_column_bytes(statement, index))
        return body(UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : count))
    }
}
