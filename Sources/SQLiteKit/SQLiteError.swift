internal import CSQLite

/// A failed SQLite call: SQLite's result code and message, and what was being done.
/// Each module that stores data in SQLite maps this to its own error in one place, so
/// callers above it never see SQLite's codes.
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What failed: opening the connection, or running a statement on it.
    public enum Operation: Sendable, Equatable {
        /// `sqlite3_open_v2` failed; the database was not opened.
        case open
        /// A statement on an open connection failed (prepare, bind, step or exec).
        case statement
    }

    /// The kinds of failure a caller may want to treat apart from "the database failed".
    public enum Kind: Sendable, Equatable {
        /// The database or its file system is read-only (`SQLITE_READONLY`).
        case readOnly
        /// The disk is full (`SQLITE_FULL`).
        case diskFull
        /// A file could not be opened or was refused (`SQLITE_PERM`, `SQLITE_CANTOPEN`).
        case permissionDenied
        /// Anything else: a damaged file, a busy database, a bad statement.
        case other
    }

    /// SQLite's result code as the failing call returned it.
    public let code: Int32
    /// SQLite's message for the failure (`sqlite3_errmsg`).
    public let message: String
    /// The SQL that failed, or the path of a database that did not open.
    public let context: String
    /// Whether opening or a statement failed.
    public let operation: Operation

    /// Creates an error; `context` names the SQL or the path.
    public init(code: Int32, message: String, context: String, operation: Operation) {
        self.code = code
        self.message = message
        self.context = context
        self.operation = operation
    }

    /// The kind, from the primary result code (the low byte of an extended code).
    public var kind: Kind {
        switch code & 0xff {
        case SQLITE_READONLY: .readOnly
        case SQLITE_FULL: .diskFull
        case SQLITE_PERM, SQLITE_CANTOPEN: .permissionDenied
        default: .other
        }
    }

    /// `context: message (code)`, the form logs have always shown.
    public var description: String { "\(context): \(message) (\(code))" }
}
