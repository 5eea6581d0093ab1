import Glibc
import Synchronization

/// A Unix file descriptor carried by a D-Bus message (type `h`), and its one
/// owner: it is closed exactly once, by `close()` or when the last reference
/// goes away.
///
/// Sending one does not give it up: libdbus duplicates the descriptor into the
/// message. Receiving one gives the receiver a duplicate of its own (libdbus
/// `dup()`s it out of the message), wrapped in a new `DBusFileDescriptor`.
/// Holding it keeps whatever the sender attached to it alive (a logind
/// inhibitor lock, for example); dropping or closing it releases that.
public final class DBusFileDescriptor: Sendable, Equatable, CustomStringConvertible {
    /// The descriptor, or -1 once closed. Under a lock so that a close from one
    /// thread never races a use (or a second close) on another.
    private let descriptor: Mutex<Int32>

    /// Takes ownership of `descriptor`: the new object will close it.
    public init(taking descriptor: Int32) {
        precondition(descriptor >= 0, "not a file descriptor: \(descriptor)")
        self.descriptor = Mutex(descriptor)
    }

    /// Owns a close-on-exec duplicate of `descriptor`; the caller keeps its own.
    /// Throws `Failed` when `dup` fails (no descriptors left, or a closed one).
    public convenience init(duplicating descriptor: Int32) throws {
        let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else {
            throw DBusError.failed("cannot duplicate file descriptor \(descriptor): errno \(errno)")
        }
        self.init(taking: copy)
    }

    deinit { close() }

    /// Closes the descriptor now; later calls do nothing.
    public func close() {
        let open = descriptor.withLock { fd in
            defer { fd = -1 }
            return fd
        }
        if open >= 0 { _ = Glibc.close(open) }
    }

    /// Whether the descriptor is still open (not yet closed through this object).
    public var isOpen: Bool { descriptor.withLock { $0 >= 0 } }

    /// Runs `body` with the raw descriptor (or -1 when closed), which stays open
    /// until `body` returns. `body` must not close it nor keep it.
    public func withUnsafeDescriptor<R>(_ body: (Int32) throws -> R) rethrows -> R {
        try descriptor.withLock { try body($0) }
    }

    /// Identity: two values are equal only if they are the same owner (a
    /// received descriptor is a new duplicate, never equal to the one sent).
    public static func == (lhs: DBusFileDescriptor, rhs: DBusFileDescriptor) -> Bool { lhs === rhs }

    /// `fd N`, or `fd (closed)`.
    public var description: String {
        let fd = descriptor.withLock { $0 }
        return fd >= 0 ? "fd \(fd)" : "fd (closed)"
    }
}
