internal import CSQLite

/// A value bound to a statement parameter.
public enum SQLiteValue: Sendable, Equatable {
    /// SQL NULL.
    case null
    /// A 64-bit integer.
    case integer(Int64)
    /// A double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Raw bytes.
    case blob([UInt8])

    /// `.text`, or `.null` for nil.
    public static func optional(_ text: String?) -> SQLiteValue { text.map { .text($0) } ?? .null }
    /// `.integer`, or `.null` for nil.
    public static func optional(_ number: Int64?) -> SQLiteValue { number.map { .integer($0) } ?? .null }
}

/// One result row, valid only inside the `row` closure of ``SQLiteDatabase/run(_:_:row:)``
/// (SQLite reuses the statement for the next row).
public struct SQLiteRow {
    let statement: OpaquePointer

    /// Column `index` as an integer, nil when NULL. (`sqlite3_column_int64`)
    public func integer(_ index: Int32) -> Int64? {
        isNull(index) ? nil : sqlite3_column_int64(statement, index)
    }

    /// Column `index` as a double, nil when NULL. (`sqlite3_column_double`)
    public func real(_ index: Int32) -> Double? {
        isNull(index) ? nil : sqlite3_column_double(statement, index)
    }

    /// Column `index` as text, nil when NULL. (`sqlite3_column_text`)
    public func text(_ index: Int32) -> String? {
        guard let pointer = sqlite3_column_text(statement, index) else { return nil }
        return String(cString: pointer)
    }

    /// Column `index` as raw bytes, passed to `body` (empty for NULL). (`sqlite3_column_blob`)
    public func withBlob<T>(_ index: Int32, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        let pointer = sqlite3_column_blob(statement, index)
        let count = Int(sqlite3_column_bytes(statement, index))
        return body(UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : count))
    }

    private func isNull(_ index: Int32) -> Bool { sqlite3_column_type(statement, index) == SQLITE_NULL }
}
