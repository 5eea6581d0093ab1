import FoundationEssentials
import Glibc
internal import SQLiteKit

/// Why the cache could not do what it was asked. Write failures are values the
/// caller can survive: it keeps streaming from memory, and reads of what the
/// cache already holds keep working.
public enum CacheError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another process (pid, when it wrote it) holds the cache directory for writing.
    case inUseByAnotherProcess(directory: String, pid: Int32?)
    /// The file system is full (ENOSPC or EDQUOT); an eviction pass has run.
    case diskFull
    /// The file system or the cache was opened read-only (EROFS, or `.readOnly` mode).
    case readOnly
    /// The cache lacks permission to a file or directory (EACCES, EPERM).
    case permissionDenied(String)
    /// The cache directory or a data file vanished (ENOENT).
    case missing(String)
    /// The index database failed (SQLite's message).
    case index(String)
    /// Any other system error: the failing operation and errno.
    case io(operation: String, errno: Int32)
    /// The entry was removed (evicted, cleared, dropped) while a handle still referred to it.
    case entryRemoved
    /// The cache was closed.
    case closed

    /// A one-line explanation for logs and users.
    public var description: String {
        switch self {
        case .inUseByAnotherProcess(let directory, let pid):
            "the cache directory \(directory) is in use by another spool daemon"
                + (pid.map { " (pid \($0))" } ?? "") + "; stop it or use another cache directory"
        case .diskFull: "the disk is full"
        case .readOnly: "the cache is read-only"
        case .permissionDenied(let what): "permission denied: \(what)"
        case .missing(let what): "missing: \(what)"
        case .index(let message): "cache index error: \(message)"
        case .io(let operation, let code): "\(operation) failed: \(String(cString: strerror(code)))"
        case .entryRemoved: "the cache entry was removed"
        case .closed: "the cache is closed"
        }
    }

    /// The error for a failed system call, classified by errno.
    static func system(_ operation: String, errno code: Int32) -> CacheError {
        switch code {
        case ENOSPC, EDQUOT: .diskFull
        case EROFS: .readOnly
        case EACCES, EPERM: .permissionDenied(operation)
        case ENOENT: .missing(operation)
        default: .io(operation: operation, errno: code)
        }
    }
}

/// Runs a system call that returns -1 and sets errno on failure, retrying on
/// EINTR; the one funnel through which the cache's POSIX calls report errors.
@discardableResult
func systemCall<T: BinaryInteger>(_ operation: @autoclosure () -> String, _ call: () -> T) throws(CacheError) -> T {
    while true {
        let result = call()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        throw CacheError.system(operation(), errno: code)
    }
}

extension CacheError {
    /// The cache's error for a failed SQLite call, the one place the index's failures are
    /// classified: a full or read-only disk and a refused file keep their kinds (the cache
    /// goes on from memory); anything else, and an index that does not open at all, is
    /// ``index(_:)``, which makes the cache rebuild a damaged index.
    init(_ error: SQLiteError) {
        guard error.operation == .statement else {
            self = .index(error.description)
            return
        }
        switch error.kind {
        case .readOnly: self = .readOnly
        case .diskFull: self = .diskFull
        case .permissionDenied: self = .permissionDenied("\(error.context): \(error.message)")
        case .other: self = .index(error.description)
        }
    }
}
