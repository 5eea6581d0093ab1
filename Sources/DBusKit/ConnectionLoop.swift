import Basics
internal import CDBus
import Dispatch
import Glibc

/// The connection thread's side: the only code that touches the libdbus
/// connection after start-up. It sleeps in poll() on the connection's socket
/// and the wake pipe, runs posted jobs, reads and writes without
/// blocking, and dispatches every received message itself.
final class ConnectionLoop {
    private struct PendingCall {
        let deadline: ContinuousClock.Instant
        let completion: CallCompletion
    }

    private struct Subscription {
        let rule: MatchRule
        let continuation: AsyncStream<DBusSignalMessage>.Continuation
    }

    /// The most values the arguments of a received method call may hold (a queue of a
    /// quarter of a million URIs): any caller can send a call, and each value costs tens
    /// of bytes once read, so a bigger one is refused with `LimitsExceeded` unread.
    static let maximumCallValues = 1 << 18

    let core: ConnectionCore
    private let connection: OpaquePointer
    private var pending: [UInt32: PendingCall] = [:]
    private var subscriptions: [UInt64: Subscription] = [:]
    private var logger: Logger { core.logger }
    /// User handlers and property sets, run in the order each sender's calls arrived.
    private let inboxes = CallInboxes()

    init(core: ConnectionCore, connection: OpaquePointer) {
        self.core = core
        self.connection = connection
    }

    // MARK: The loop

    /// Runs until close() or until the bus goes away, then fails what is pending and releases the connection.
    func run() {
        core.shared.withLock { $0.owner = pthread_self() }
        var closing = false
        while true {
            closing = runJobs()
            dispatchIncoming()
            if closing || dbus_connection_get_is_connected(connection) == 0 { break }
            expireCalls()
            guard waitForIO() else { break }
        }
        flushOutgoing()
        finish(lost: !closing)
    }

    /// Runs the posted jobs; returns whether close() was asked for. A function of its
    /// own so that the jobs (and what they capture, a file descriptor in a reply, say)
    /// are released before the thread sleeps in poll(), not when it next wakes.
    private func runJobs() -> Bool {
        let (jobs, closing) = core.shared.withLock { state in
            defer { state.jobs.removeAll() }
            return (state.jobs, state.closing)
        }
        for job in jobs { job(self) }
        return closing
    }

    /// Sleeps until the socket or the wake fd is ready or the next call times out,
    /// then reads and writes what it can. False when the socket is gone.
    private func waitForIO() -> Bool {
        var socket: Int32 = -1
        guard dbus_connection_get_unix_fd(connection, &socket) != 0 else { return false }
        let wantsWrite = dbus_connection_has_messages_to_send(connection) != 0
        var fds = [
            pollfd(fd: socket, events: Int16(POLLIN) | (wantsWrite ? Int16(POLLOUT) : 0), revents: 0),
            pollfd(fd: core.wakeReadFD, events: Int16(POLLIN), revents: 0),
        ]
        let ready = poll(&fds, 2, pollTimeout())
        guard ready >= 0 || errno == EINTR else {
            logger.error("poll failed: errno \(errno)")
            return false
        }
        if fds[1].revents != 0 {
            var drain = [UInt8](repeating: 0, count: 64)
            while Glibc.read(core.wakeReadFD, &drain, drain.count) > 0 {}
        }
        if fds[0].revents != 0 {
            _ = dbus_connection_read_write(connection, 0)
        }
        return true
    }

    private func pollTimeout() -> Int32 {
        guard let next = pending.values.map(\.deadline).min() else { return -1 }
        let remaining = ContinuousClock.now.duration(to: next)
        let milliseconds =
            remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(0, milliseconds + 1))
    }

    /// Writes what is still queued, for at most a second, before the connection is closed.
    private func flushOutgoing() {
        let deadline = ContinuousClock.now + .seconds(1)
        var socket: Int32 = -1
        while dbus_connection_get_is_connected(connection) != 0,
            dbus_connection_has_messages_to_send(connection) != 0,
            dbus_connection_get_unix_fd(connection, &socket) != 0,
            ContinuousClock.now < deadline
        {
            var fd = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
            _ = poll(&fd, 1, 100)
            _ = dbus_connection_read_write(connection, 0)
        }
    }

    private func finish(lost: Bool) {
        let (leftover, onLost) = core.shared.withLock { state in
            state.finished = true
            state.owner = nil
            state.lost = lost
            state.objects = [:]
            defer {
                state.jobs.removeAll()
                state.onLost = nil
            }
            return (state.jobs, lost ? state.onLost : nil)
        }
        for job in leftover { job(nil) }
        let calls = pending.values
        pending.removeAll()
        for call in calls { call.completion(.failure(.disconnected("the D-Bus connection was closed"))) }
        let streams = subscriptions.values
        subscriptions.removeAll()
        for stream in streams { stream.continuation.finish() }
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
        logger.debug("connection \(core.uniqueName) finished")
        core.finished.leave()
        // Off this thread: what the owner does about it (a shutdown) may call into the connection.
        if let onLost { DispatchQueue.global().async(execute: onLost) }
    }

    // MARK: Sending

    /// Sends `message` (consuming it); returns its serial, or nil when the connection refused it.
    @discardableResult
    func send(_ message: OutgoingMessage) -> UInt32? {
        defer { message.discard() }
        var serial: UInt32 = 0
        guard dbus_connection_send(connection, message.pointer, &serial) != 0 else { return nil }
        return serial
    }

    /// Sends a method call and remembers it until its reply or its deadline.
    func sendCall(_ message: OutgoingMessage, timeout: Duration, completion: @escaping CallCompletion) {
        guard let serial = send(message) else {
            return completion(.failure(.disconnected("the D-Bus connection refused the message")))
        }
        pending[serial] = PendingCall(deadline: .now + timeout, completion: completion)
    }

    private func sendResponse(_ message: OutgoingMessage?) {
        guard let message else { return }
        core.repliesSent.add(1, ordering: .relaxed)  // before the caller can see the reply
        send(message)
    }

    private func reply(to address: ReplyAddress, _ result: CallResult) {
        guard address.wantsReply else { return }
        switch result {
        case .success(let values):
            do {
                try core.checkCanSend(values)
                sendResponse(try OutgoingMessage.reply(to: address, values))
            } catch let error as DBusError where error.name == DBusError.notSupported("").name {
                sendResponse(OutgoingMessage.error(to: address, error))
            } catch {
                logger.error("cannot marshal a reply: \(error)")
                sendResponse(OutgoingMessage.error(to: address, .failed("the reply could not be marshalled")))
            }
        case .failure(let error):
            sendResponse(OutgoingMessage.error(to: address, error))
        }
    }

    private func expireCalls() {
        let now = ContinuousClock.now
        for (serial, call) in pending where call.deadline <= now {
            pending[serial] = nil
            call.completion(.failure(.noReply("no reply within the timeout")))
        }
    }

    // MARK: Signal subscriptions

    /// Starts routing signals that match `rule` to `continuation`.
    func subscribe(_ id: UInt64, rule: MatchRule, continuation: AsyncStream<DBusSignalMessage>.Continuation) {
        subscriptions[id] = Subscription(rule: rule, continuation: continuation)
    }

    /// Stops routing to subscription `id`.
    func unsubscribe(_ id: UInt64) {
        subscriptions[id] = nil
    }

    // MARK: Receiving

    private func dispatchIncoming() {
        while let message = dbus_connection_pop_message(connection) {
            defer { dbus_message_unref(message) }
            let header = IncomingHeader(message)
            switch header.type {
            case DBUS_MESSAGE_TYPE_METHOD_CALL: handleCall(message, header)
            case DBUS_MESSAGE_TYPE_METHOD_RETURN, DBUS_MESSAGE_TYPE_ERROR: handleReply(message, header)
            case DBUS_MESSAGE_TYPE_SIGNAL: handleSignal(message, header)
            default: logger.debug("ignoring message of type \(header.type)")
            }
        }
    }

    private func handleReply(_ message: OpaquePointer, _ header: IncomingHeader) {
        guard let call = pending.removeValue(forKey: header.replySerial) else {
            logger.trace("reply to unknown serial \(header.replySerial)")
            return
        }
        let values = Result { try Marshal.read(message) }.mapError { $0 as? DBusError ?? .failed("\($0)") }
        if let errorName = header.errorName {
            let text = (try? values.get())?.first?.stringValue ?? ""
            call.completion(.failure(DBusError(name: errorName, message: text)))
        } else {
            call.completion(values)
        }
    }

    private func handleSignal(_ message: OpaquePointer, _ header: IncomingHeader) {
        guard let path = header.path, let interface = header.interface, let member = header.member else { return }
        if interface == "org.freedesktop.DBus.Local", member == "Disconnected" {
            logger.notice("the D-Bus bus went away")
            return
        }
        // The bus delivers unicast signals whatever the match rules say: any client can send
        // this connection a body of megabytes. Only a subscriber that wants the signal pays for
        // reading it.
        let unicast = header.destination != nil
        let candidates = subscriptions.values.filter {
            $0.rule.matchesHeader(
                sender: header.sender, path: path, interface: interface, member: member, unicast: unicast)
        }
        guard !candidates.isEmpty else { return }
        core.signalBodiesRead.add(1, ordering: .relaxed)
        guard let arguments = try? Marshal.read(message) else { return }
        let signal = DBusSignalMessage(
            sender: header.sender, path: path, interface: interface, member: member, arguments: arguments)
        for subscription in candidates where subscription.rule.matches(signal) {
            subscription.continuation.yield(signal)
        }
    }

    private func handleCall(_ message: OpaquePointer, _ header: IncomingHeader) {
        let address = header.replyAddress
        do {
            let path = header.path ?? "/"
            let node = core.node(at: path)
            let (interface, method) = try ObjectDispatch.resolve(header, path: path, node: node)
            let arguments = try Marshal.read(message, limit: Self.maximumCallValues)
            let inbox = inboxes.inbox(for: header.sender)
            if interface == StandardInterfaces.properties, method.name == "Set" {
                let set = try ObjectDispatch.propertySetter(arguments, in: node.interfaces ?? [])
                run(method, in: inbox, replyingTo: address) {
                    try await set()
                    return []
                }
            } else if let interface {
                reply(to: address, .success(try ObjectDispatch.standard(interface, method, arguments, path, node)))
            } else {
                run(method, in: inbox, replyingTo: address) { try await method.handler(arguments) }
            }
        } catch {
            reply(to: address, .failure(error as? DBusError ?? .failed("\(error)")))
        }
    }

    /// Runs `handler` (a user method's, or a property's setter) in `inbox`, after every call
    /// its sender made before, and posts its reply back to this thread.
    private func run(
        _ method: DBusMethod, in inbox: CallInbox, replyingTo address: ReplyAddress,
        _ handler: @escaping @Sendable () async throws -> [DBusValue]
    ) {
        let core = self.core
        inbox.enqueue {
            let result: CallResult
            do {
                let values = try await handler()
                let signature = DBusValue.signature(of: values)
                if signature == method.outSignature {
                    result = .success(values)
                } else {
                    core.logger.error("\(method.name) returned '\(signature)', declared '\(method.outSignature)'")
                    result = .failure(.failed("\(method.name) produced results of the wrong type"))
                }
            } catch let error as DBusError {
                result = .failure(error)
            } catch {
                result = .failure(.failed("\(error)"))
            }
            core.post { loop in loop?.reply(to: address, result) }
        }
    }
}
