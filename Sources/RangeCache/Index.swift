import Basics
import FoundationEssentials
import Glibc
internal import SQLiteKit

/// One entry as the index stores it.
struct IndexRow {
    var id: Int64
    var namespace: String
    var key: String
    var fileName: String
    var metadata: EntryMetadata
    var created: Int64
    var lastAccess: Int64
    var allocated: Int64
    var ranges: RangeSet
}

/// The SQLite index: one row per entry, its cached ranges as a blob of
/// little-endian (start, end) pairs. WAL mode lets readers (the CLI) read
/// while the daemon writes; `synchronous=NORMAL` is enough because a commit
/// only ever claims bytes that were made durable before it. Every method reports SQLite's
/// failures as ``CacheError``s (``CacheError/init(_:)``).
struct Index {
    let database: SQLiteDatabase
    /// The schema version of the file (older ones are read by readers, never written).
    var version = schemaVersion

    /// The schema version this code writes (`PRAGMA user_version`).
    static let schemaVersion = 3

    /// The columns each version adds to the one before, for an index an older Spool wrote.
    private static let migrations: [Int: String] = [
        2: """
        ALTER TABLE entries ADD COLUMN fresh_until INTEGER;
        ALTER TABLE entries ADD COLUMN revalidation INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE entries ADD COLUMN selecting_headers TEXT;
        """,
        3: "ALTER TABLE entries ADD COLUMN sidecar_missing INTEGER NOT NULL DEFAULT 0;",
    ]

    private static let schema = """
        CREATE TABLE IF NOT EXISTS entries(
            id INTEGER PRIMARY KEY,
            namespace TEXT NOT NULL,
            key TEXT NOT NULL,
            url TEXT,
            file TEXT NOT NULL UNIQUE,
            length INTEGER,
            etag TEXT,
            etag_weak INTEGER NOT NULL DEFAULT 0,
            last_modified TEXT,
            content_type TEXT,
            accepts_ranges INTEGER,
            created INTEGER NOT NULL,
            last_access INTEGER NOT NULL,
            allocated INTEGER NOT NULL DEFAULT 0,
            ranges BLOB NOT NULL DEFAULT x'',
            fresh_until INTEGER,
            revalidation INTEGER NOT NULL DEFAULT 0,
            selecting_headers TEXT,
            sidecar_missing INTEGER NOT NULL DEFAULT 0,
            UNIQUE(namespace, key));
        """

    /// Opens (and for writers creates or checks) the index at `path`. Throws
    /// `.index` when the file is damaged or of an unknown version.
    static func open(path: String, readOnly: Bool, immutable: Bool = false) throws(CacheError) -> Index {
        let (database, version) = try mappingErrors { () throws(SQLiteError) in
            let database = try SQLiteDatabase(path: path, readOnly: readOnly, immutable: immutable)
            if !readOnly {
                _ = try database.text("PRAGMA journal_mode=WAL")
                try database.execute("PRAGMA synchronous=NORMAL")
                try database.takeOverCheckpoints()
            }
            var version = Int(try database.text("PRAGMA user_version") ?? "0") ?? 0  // also fails on garbage
            if version == 0, !readOnly {
                try database.transaction { () throws(SQLiteError) in
                    try database.execute(schema)
                    try database.execute("PRAGMA user_version=\(schemaVersion)")
                }
                version = schemaVersion
            } else if !readOnly, version > 0, version < schemaVersion {
                let from = version
                try database.transaction { () throws(SQLiteError) in
                    for next in (from + 1)...schemaVersion {
                        if let migration = migrations[next] { try database.execute(migration) }
                    }
                    try database.execute("PRAGMA user_version=\(schemaVersion)")
                }
                version = schemaVersion
            }
            return (database, version)
        }
        // Version 0 is (read-only) an index that has no schema yet; a reader of an older index
        // reads the columns it has.
        if version < 0 || version > schemaVersion {
            throw CacheError.index("unknown schema version \(version)")
        }
        return Index(database: database, version: version)
    }

    /// Deletes the index at `path` (with its WAL files) and creates an empty one.
    static func recreate(path: String) throws(CacheError) -> Index {
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) }
        try RangeCache.createPrivateFile(path)
        return try open(path: path, readOnly: false)
    }

    /// Checks every page of the database (`PRAGMA quick_check`); throws `.index` when damaged.
    func check() throws(CacheError) {
        let answer =
            try mappingErrors { () throws(SQLiteError) in try database.text("PRAGMA quick_check") } ?? "no answer"
        guard answer == "ok" else { throw CacheError.index("integrity check: \(answer)") }
    }

    /// Writes rows as they are (ids included), in one transaction: rebuilding an index from memory.
    func insert(_ rows: [IndexRow]) throws(CacheError) {
        try inTransaction { () throws(SQLiteError) in
            for row in rows {
                try database.run(
                    """
                    INSERT INTO entries(id, namespace, key, file, url, length, etag, etag_weak, last_modified,
                        content_type, accepts_ranges, fresh_until, revalidation, selecting_headers,
                        sidecar_missing, created, last_access, allocated, ranges)
                    VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    [.integer(row.id), .text(row.namespace), .text(row.key), .text(row.fileName)]
                        + Index.values(row.metadata)
                        + [
                            .integer(row.created), .integer(row.lastAccess), .integer(row.allocated),
                            .blob(row.ranges.encoded),
                        ])
            }
        }
    }

    /// Every row; rows that do not decode are returned by id in `damaged`.
    func load() throws(CacheError) -> (rows: [IndexRow], damaged: [Int64]) {
        var rows: [IndexRow] = []
        var damaged: [Int64] = []
        let freshnessColumns = version >= 2 ? "fresh_until, revalidation, selecting_headers" : "NULL, 0, NULL"
        let sidecarColumn = version >= 3 ? "sidecar_missing" : "0"
        let sql = """
            SELECT id, namespace, key, url, file, length, etag, etag_weak, last_modified,
                   content_type, accepts_ranges, created, last_access, allocated, ranges,
                   \(freshnessColumns), \(sidecarColumn) FROM entries
            """
        do throws(SQLiteError) {
            try database.run(sql) { row in
                let id = row.integer(0) ?? -1
                guard let namespace = row.text(1), let key = row.text(2), let file = row.text(4),
                    let ranges = row.withBlob(14, { RangeSet(encoded: $0) })
                else {
                    damaged.append(id)
                    return
                }
                // The tag is stored without its W/, weakness in a column of its own.
                let weak = (row.integer(7) ?? 0) != 0
                let validator = ResourceVersion(
                    etag: row.text(6).map { weak ? "W/" + $0 : $0 }, lastModified: row.text(8), length: row.integer(5))
                var metadata = EntryMetadata(
                    validator: validator, contentType: row.text(9), acceptsRanges: row.integer(10).map { $0 != 0 },
                    freshness: Index.freshness(freshUntil: row.integer(15), revalidation: row.integer(16) ?? 0),
                    selectingHeaders: row.text(17), sidecarMissing: (row.integer(18) ?? 0) != 0)
                metadata.urlText = row.text(3)
                rows.append(
                    IndexRow(
                        id: id, namespace: namespace, key: key, fileName: file, metadata: metadata,
                        created: row.integer(11) ?? 0, lastAccess: row.integer(12) ?? 0,
                        allocated: row.integer(13) ?? 0, ranges: ranges))
            }
        } catch {
            // A read-only failure: a reader opened an index that has no schema yet, nothing cached.
            guard CacheError(error) == .readOnly else { throw CacheError(error) }
        }
        return (rows, damaged)
    }

    /// Inserts a new, empty entry and returns its id.
    func insert(namespace: String, key: String, fileName: String, now: Int64) throws(CacheError) -> Int64 {
        try mappingErrors { () throws(SQLiteError) in
            try database.run(
                "INSERT INTO entries(namespace, key, file, created, last_access) VALUES(?, ?, ?, ?, ?)",
                [.text(namespace), .text(key), .text(fileName), .integer(now), .integer(now)])
            return database.lastInsertedRowID
        }
    }

    /// Records the entry's durable ranges, disk usage and last access.
    func updateRanges(id: Int64, ranges: RangeSet, allocated: Int64, lastAccess: Int64) throws(CacheError) {
        try mappingErrors { () throws(SQLiteError) in
            try database.run(
                "UPDATE entries SET ranges = ?, allocated = ?, last_access = ? WHERE id = ?",
                [.blob(ranges.encoded), .integer(allocated), .integer(lastAccess), .integer(id)])
        }
    }

    /// Records the entry's last access.
    func updateAccess(id: Int64, lastAccess: Int64) throws(CacheError) {
        try mappingErrors { () throws(SQLiteError) in
            try database.run("UPDATE entries SET last_access = ? WHERE id = ?", [.integer(lastAccess), .integer(id)])
        }
    }

    /// Records the last access of several entries, in one transaction.
    func updateAccess(_ accesses: [(id: Int64, lastAccess: Int64)]) throws(CacheError) {
        try inTransaction { () throws(SQLiteError) in
            for access in accesses {
                try database.run(
                    "UPDATE entries SET last_access = ? WHERE id = ?",
                    [.integer(access.lastAccess), .integer(access.id)])
            }
        }
    }

    /// Empties the entry: no ranges, a new data file name, and `metadata`.
    func reset(id: Int64, fileName: String, metadata: EntryMetadata) throws(CacheError) {
        try mappingErrors { () throws(SQLiteError) in
            try database.run(
                """
                UPDATE entries SET file = ?, ranges = x'', allocated = 0, url = ?, length = ?, etag = ?, etag_weak = ?,
                    last_modified = ?, content_type = ?, accepts_ranges = ?, fresh_until = ?, revalidation = ?,
                    selecting_headers = ?, sidecar_missing = ? WHERE id = ?
                """,
                [.text(fileName)] + Index.values(metadata) + [.integer(id)])
        }
    }

    /// Records metadata that does not change the entry's version.
    func updateMetadata(id: Int64, metadata: EntryMetadata) throws(CacheError) {
        try mappingErrors { () throws(SQLiteError) in
            try database.run(
                """
                UPDATE entries SET url = ?, length = ?, etag = ?, etag_weak = ?, last_modified = ?, content_type = ?,
                    accepts_ranges = ?, fresh_until = ?, revalidation = ?, selecting_headers = ?, sidecar_missing = ?
                    WHERE id = ?
                """,
                Index.values(metadata) + [.integer(id)])
        }
    }

    /// The metadata columns in order: url, length, etag, etag_weak, last_modified, content_type,
    /// accepts_ranges, fresh_until, revalidation, selecting_headers, sidecar_missing.
    private static func values(_ metadata: EntryMetadata) -> [SQLiteValue] {
        let validator = metadata.validator
        let freshness = metadata.freshness
        let freshUntil = freshness.freshUntil.map { Int64(($0.timeIntervalSince1970 * 1000).rounded(.down)) }
        let revalidation = (freshness.revalidatesEveryUse ? 1 : 0) | (freshness.mustRevalidate ? 2 : 0)
        return [
            .optional(metadata.urlText), .optional(validator.length),
            .optional(validator.etag.map { validator.hasWeakETag ? String($0.dropFirst(2)) : $0 }),
            .integer(validator.hasWeakETag ? 1 : 0), .optional(validator.lastModified),
            .optional(metadata.contentType), .optional(metadata.acceptsRanges.map { $0 ? 1 : 0 }),
            .optional(freshUntil), .integer(Int64(revalidation)), .optional(metadata.selectingHeaders),
            .integer(metadata.sidecarMissing ? 1 : 0),
        ]
    }

    /// The freshness the columns record: `fresh_until` in milliseconds since 1970, and the
    /// revalidation bits (1: every use, 2: once stale).
    private static func freshness(freshUntil: Int64?, revalidation: Int64) -> Freshness {
        Freshness(
            freshUntil: freshUntil.map { Date(timeIntervalSince1970: Double($0) / 1000) },
            revalidatesEveryUse: revalidation & 1 != 0, mustRevalidate: revalidation & 2 != 0)
    }

    /// Deletes entries.
    func delete(ids: [Int64]) throws(CacheError) {
        guard !ids.isEmpty else { return }
        try inTransaction { () throws(SQLiteError) in
            for id in ids { try database.run("DELETE FROM entries WHERE id = ?", [.integer(id)]) }
        }
    }

    /// Runs `body` in a transaction (rolled back when it throws).
    private func inTransaction(_ body: () throws(SQLiteError) -> Void) throws(CacheError) {
        try mappingErrors { () throws(SQLiteError) in try database.transaction(body) }
    }

    /// Copies the write-ahead log of the index at `path` into it, through a connection of its
    /// own; see ``SQLiteDatabase/checkpoint(path:)``.
    static func checkpoint(path: String) throws(CacheError) {
        try mappingErrors { () throws(SQLiteError) in _ = try SQLiteDatabase.checkpoint(path: path) }
    }
}

/// Runs SQLite work, its failure reported as the cache's error.
private func mappingErrors<T>(_ body: () throws(SQLiteError) -> T) throws(CacheError) -> T {
    do throws(SQLiteError) {
        return try body()
    } catch {
        throw CacheError(error)
    }
}
