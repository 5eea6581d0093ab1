import Foundation
import SQLiteKit
import TestSupport
import Testing

@Suite("SQLite database")
struct SQLiteDatabaseTests {
    @Test func everyKindOfValueComesBackAsItWasBound() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.file("values.sqlite").path)
        try database.execute("CREATE TABLE t(i INTEGER, r REAL, s TEXT, b BLOB, n INTEGER)")
        try database.run(
            "INSERT INTO t VALUES(?, ?, ?, ?, ?)", [.integer(-7), .real(1.25), .text("ä"), .blob([0, 1, 255]), .null])
        try database.run(
            "INSERT INTO t VALUES(?, ?, ?, ?, ?)", [.null, .null, .null, .blob([]), .optional(nil as Int64?)])
        var rows: [[String]] = []
        try database.run("SELECT i, r, s, b, n FROM t ORDER BY rowid") { row in
            rows.append([
                "\(row.integer(0).map(String.init) ?? "nil")", "\(row.real(1).map { "\($0)" } ?? "nil")",
                row.text(2) ?? "nil",
                row.withBlob(3) { Array($0).map(String.init).joined(separator: ",") },
                "\(row.integer(4).map(String.init) ?? "nil")",
            ])
        }
        #expect(rows == [["-7", "1.25", "ä", "0,1,255", "nil"], ["nil", "nil", "nil", "", "nil"]])
        #expect(database.lastInsertedRowID == 2)
    }

    @Test func aTransactionThatThrowsLeavesNothingBehind() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.file("t.sqlite").path)
        try database.execute("CREATE TABLE t(x INTEGER UNIQUE)")
        #expect(throws: SQLiteError.self) {
            try database.transaction { () throws(SQLiteError) in
                try database.run("INSERT INTO t VALUES(1)")
                try database.run("INSERT INTO t VALUES(1)")
            }
        }
        #expect(try database.text("SELECT count(*) FROM t") == "0")
    }

    @Test func aFailedStatementNamesItsSQLAndCode() throws {
        let directory = try TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.file("t.sqlite").path)
        do throws(SQLiteError) {
            try database.run("SELECT * FROM missing")
            Issue.record("no error")
        } catch {
            #expect(error.operation == .statement)
            #expect(error.context == "SELECT * FROM missing")
            #expect(error.message.contains("no such table"))
            #expect(error.kind == .other)
            #expect(error.description == "SELECT * FROM missing: \(error.message) (1)")
        }
    }

    @Test func aWriteThroughAReadOnlyConnectionFailsAsReadOnly() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("t.sqlite").path
        try SQLiteDatabase(path: path).execute("CREATE TABLE t(x INTEGER)")
        let reader = try SQLiteDatabase(path: path, readOnly: true)
        #expect(throws: SQLiteError.self) { try reader.run("INSERT INTO t VALUES(1)") }
        do throws(SQLiteError) {
            try reader.run("INSERT INTO t VALUES(1)")
        } catch {
            #expect(error.kind == .readOnly)
        }
    }

    @Test func aDatabaseThatCannotBeOpenedFailsAsAnOpenFailure() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("no/such/folder.sqlite").path
        do throws(SQLiteError) {
            _ = try SQLiteDatabase(path: path)
            Issue.record("opened")
        } catch {
            #expect(error.operation == .open)
            #expect(error.context == path)
            #expect(error.kind == .permissionDenied)  // SQLITE_CANTOPEN
        }
    }

    @Test func theOwnerCheckpointsTheLogItTookOver() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("wal.sqlite").path
        let database = try SQLiteDatabase(path: path)
        #expect(try database.text("PRAGMA journal_mode=WAL") == "wal")
        try database.takeOverCheckpoints()
        try database.execute("CREATE TABLE t(x BLOB)")
        for _ in 0..<20 { try database.run("INSERT INTO t VALUES(?)", [.blob([UInt8](repeating: 7, count: 8192))]) }
        #expect(database.walPages > 20)
        #expect(try SQLiteDatabase.checkpoint(path: path) == 0)
    }
}
