import Basics
import Dispatch
import Glibc
import Synchronization

/// The outcome of a method call: its results or the error reply.
typealias CallResult = Result<[DBusValue], DBusError>
/// Receives the outcome of a method call, on the connection thread.
typealias CallCompletion = @Sendable (CallResult) -> Void

/// What every thread shares about one connection: the queue of jobs for the
/// connection thread, the exported objects, and the wake pipe. The
/// connection thread and the method tasks hold this, never the public
/// `DBusConnection`, so that dropping the last user reference closes it.
final class ConnectionCore: Sendable {
    /// Work for the connection thread. It receives the loop, or nil when the
    /// connection has finished (the job must then fail or discard its work).
    typealias Job = @Sendable (ConnectionLoop?) -> Void

    struct Shared {
        var jobs: [Job] = []
        var objects: [String: [DBusInterface]] = [:]
        var closing = false
        var finished = false
        /// Whether the connection ended without `close()`: the bus went away or dropped it.
        var lost = false
        /// Told once when the connection is lost (see `DBusConnection.whenLost`).
        var onLost: (@Sendable () -> Void)?
        /// The connection thread while it runs; nil once it has ended, since the system reuses
        /// an ended thread's id for a new thread, which must not pass for the connection's.
        var owner: pthread_t?
        var nextSubscription: UInt64 = 0
    }

    let shared = Mutex(Shared())
    let uniqueName: String
    let logger: Logger
    /// Whether the connection negotiated Unix file descriptor passing (fixed once authenticated).
    let canPassFileDescriptors: Bool
    /// The read end of the wake pipe, polled by the connection thread.
    let wakeReadFD: Int32
    /// The write end of the wake pipe: a byte written here interrupts poll().
    let wakeWriteFD: Int32
    /// Left when the connection thread has ended.
    let finished = DispatchGroup()
    /// How many method returns and error replies this connection sent (for tests).
    let repliesSent = Atomic<Int>(0)
    /// How many received signal bodies this connection unmarshalled (for tests).
    let signalBodiesRead = Atomic<Int>(0)

    init(uniqueName: String, canPassFileDescriptors: Bool, logger: Logger) throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw DBusError.failed("pipe failed: errno \(errno)") }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeReadFD = fds[0]
        wakeWriteFD = fds[1]
        self.uniqueName = uniqueName
        self.canPassFileDescriptors = canPassFileDescriptors
        self.logger = logger
    }

    deinit {
        Glibc.close(wakeReadFD)
        Glibc.close(wakeWriteFD)
    }

    /// Throws `NotSupported` when `values` carry a file descriptor this connection cannot pass
    /// (libdbus would refuse the message, with a warning that can abort the process).
    func checkCanSend(_ values: [DBusValue]) throws {
        guard !canPassFileDescriptors, values.contains(where: \.containsFileDescriptor) else { return }
        throw DBusError.notSupported("this D-Bus connection cannot pass Unix file descriptors")
    }

    /// Queues `job` for the connection thread, or runs it at once with nil when the thread has ended.
    func post(_ job: @escaping Job) {
        let queued = shared.withLock { state in
            guard !state.finished else { return false }
            state.jobs.append(job)
            return true
        }
        if queued { wake() } else { job(nil) }
    }

    /// Interrupts the connection thread's poll().
    func wake() {
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWriteFD, &byte, 1)  // a full pipe already wakes it
    }

    /// Whether the caller is the connection thread.
    var isConnectionThread: Bool {
        shared.withLock { state in state.owner.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Sends `message` as a method call; `completion` gets the reply, an error, or a timeout.
    func startCall(_ message: OutgoingMessage, timeout: Duration, completion: @escaping CallCompletion) {
        post { loop in
            guard let loop else {
                message.discard()
                completion(.failure(.disconnected("the D-Bus connection is closed")))
                return
            }
            loop.sendCall(message, timeout: timeout, completion: completion)
        }
    }

    /// Sends `message` without waiting for anything.
    func send(_ message: OutgoingMessage) {
        post { loop in
            guard let loop else { return message.discard() }
            loop.send(message)
        }
    }

    /// The interfaces exported at `path` (nil when none) and the names of its direct children.
    func node(at path: String) -> (interfaces: [DBusInterface]?, children: [String]) {
        shared.withLock { state in
            let prefix = path == "/" ? "/" : path + "/"
            var children = Set<String>()
            for key in state.objects.keys where key.hasPrefix(prefix) && key != path {
                children.insert(String(key.dropFirst(prefix.count).prefix { $0 != "/" }))
            }
            return (state.objects[path], children.sorted())
        }
    }
}
