import Foundation
import SpoolLog
import Synchronization
internal import CCurl
internal import CCurlShim

/// Runs HTTP range transfers with libcurl. One thread owns the multi handle and
/// every easy handle; other threads hand it commands through a queue and wake it
/// with `curl_multi_wakeup`, so starting or cancelling a transfer takes effect
/// within a poll wake-up (well under a millisecond), whatever the server is doing.
///
/// Events of a transfer are delivered on the fetcher's thread, in order; handlers
/// must return quickly (store the bytes, wake a waiter) and never block.
public final class Fetcher: Sendable {
    private let worker: FetcherWorker

    /// Creates a fetcher and starts its thread. `userAgent` names Spool and its version.
    public init(userAgent: String) {
        CurlGlobal.initialize()
        worker = FetcherWorker(userAgent: userAgent)
        // The thread holds only the worker, so releasing the fetcher stops it.
        let worker = self.worker
        let thread = Thread { worker.run() }
        thread.name = "spool.fetcher"
        thread.start()
    }

    /// Starts fetching `request`; `events` receives the transfer's events, tagged
    /// with its id, on the fetcher's thread.
    @discardableResult
    public func start(
        _ request: RangeRequest, events: @escaping @Sendable (TransferID, TransferEvent) -> Void
    ) -> TransferID {
        worker.start(request, events: events)
    }

    /// Cancels a transfer; no event of it is delivered after the fetcher thread handles this.
    public func cancel(_ id: TransferID) {
        worker.post(.cancel(id))
    }

    /// Cancels every transfer, stops the thread and frees libcurl's handles. Idempotent.
    public func shutdown() {
        worker.shutdown()
    }

    deinit { worker.shutdown() }
}

/// The state shared between callers and the fetcher thread, and the thread's loop.
final class FetcherWorker: Sendable {
    enum Command {
        case start(TransferID, RangeRequest, @Sendable (TransferID, TransferEvent) -> Void)
        case cancel(TransferID)
    }

    private struct Shared {
        var commands: [Command] = []
        var nextID: UInt64 = 1
        var stopping = false
    }

    private let shared = Mutex(Shared())
    private let multi = MultiHandle()
    private let log = Logger(label: "fetcher")
    private let userAgent: String
    private let stopped = DispatchSemaphore(value: 0)

    init(userAgent: String) {
        self.userAgent = userAgent
    }

    func start(_ request: RangeRequest, events: @escaping @Sendable (TransferID, TransferEvent) -> Void) -> TransferID {
        let id = shared.withLock { state -> TransferID in
            let id = TransferID(raw: state.nextID)
            state.nextID += 1
            state.commands.append(.start(id, request, events))
            return id
        }
        multi.wakeUp()
        return id
    }

    func post(_ command: Command) {
        shared.withLock { $0.commands.append(command) }
        multi.wakeUp()
    }

    func shutdown() {
        let first = shared.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        multi.wakeUp()
        stopped.wait()
    }

    /// The fetcher thread's loop: apply commands, drive transfers, sleep in curl_multi_poll.
    func run() {
        var transfers: [TransferID: Transfer] = [:]
        while true {
            let (commands, stopping) = shared.withLock { state in
                defer { state.commands.removeAll() }
                return (state.commands, state.stopping)
            }
            if stopping { break }
            for command in commands {
                switch command {
                case .start(let id, let request, let events):
                    let transfer = Transfer(id: id, request: request, userAgent: userAgent, events: events)
                    transfers[id] = transfer
                    multi.add(transfer.easy)
                    log.debug("transfer \(id) GET \(loggable(request.url)) bytes=\(request.rangeValue)")
                case .cancel(let id):
                    if let transfer = transfers.removeValue(forKey: id) {
                        multi.remove(transfer.easy)
                        log.debug("transfer \(id) cancelled")
                    }
                }
            }
            multi.perform()
            while let (easy, code) = multi.nextCompleted() {
                guard let (id, transfer) = transfers.first(where: { $0.value.easy == easy }) else { continue }
                transfers.removeValue(forKey: id)
                multi.remove(easy)
                transfer.complete(code: code)
            }
            multi.poll(timeoutMilliseconds: 1000)
        }
        for transfer in transfers.values { multi.remove(transfer.easy) }
        transfers.removeAll()
        multi.close()
        stopped.signal()
    }
}

/// `curl_global_init`, once per process.
enum CurlGlobal {
    private static let done: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        signal(SIGPIPE, SIG_IGN)
        return true
    }()

    static func initialize() { _ = done }
}

/// The multi handle. Only the fetcher thread calls anything but `wakeUp`, which
/// libcurl documents as safe from any thread.
final class MultiHandle: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer
    private let closed = Atomic<Bool>(false)

    init() {
        handle = curl_multi_init()!
    }

    func wakeUp() {
        if !closed.load(ordering: .acquiring) { curl_multi_wakeup(handle) }
    }

    func add(_ easy: UnsafeMutableRawPointer) { curl_multi_add_handle(handle, easy) }
    func remove(_ easy: UnsafeMutableRawPointer) { curl_multi_remove_handle(handle, easy) }

    func perform() {
        var running: Int32 = 0
        curl_multi_perform(handle, &running)
    }

    func nextCompleted() -> (UnsafeMutableRawPointer, CURLcode)? {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(handle, &remaining) {
            if message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle {
                return (easy, message.pointee.data.result)
            }
        }
        return nil
    }

    func poll(timeoutMilliseconds: Int32) {
        var ready: Int32 = 0
        curl_multi_poll(handle, nil, 0, timeoutMilliseconds, &ready)
    }

    func close() {
        closed.store(true, ordering: .releasing)
        curl_multi_cleanup(handle)
    }
}

/// One easy handle and what it has seen; lives on the fetcher thread only.
final class Transfer {
    let id: TransferID
    let request: RangeRequest
    let easy: UnsafeMutableRawPointer
    private let sink: @Sendable (TransferID, TransferEvent) -> Void
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var head: ResponseHead?
    private var failure: FetchError?
    private var nextOffset: Int64 = 0
    private var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)

    init(
        id: TransferID, request: RangeRequest, userAgent: String,
        events: @escaping @Sendable (TransferID, TransferEvent) -> Void
    ) {
        self.id = id
        self.request = request
        self.sink = events
        easy = curl_easy_init()!
        configure(userAgent: userAgent)
    }

    private func configure(userAgent: String) {
        spool_curl_setopt_pointer(easy, CURLOPT_URL, request.url.absoluteString)
        spool_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        spool_curl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 1)
        spool_curl_setopt_long(easy, CURLOPT_MAXREDIRS, 5)
        spool_curl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT, 15)
        // A stall (no byte for 15 s) ends the transfer so the caller can reconnect.
        spool_curl_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1)
        spool_curl_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, 15)
        spool_curl_setopt_pointer(easy, CURLOPT_USERAGENT, userAgent)
        spool_curl_setopt_pointer(easy, CURLOPT_RANGE, request.rangeValue)
        headerList = curl_slist_append(nil, "Accept-Encoding: identity")
        spool_curl_setopt_pointer(easy, CURLOPT_HTTPHEADER, headerList)
        errorBuffer.withUnsafeMutableBufferPointer {
            _ = spool_curl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, $0.baseAddress)
        }
        // The transfer outlives its easy handle's callbacks: the fetcher removes
        // the handle before releasing the transfer, so an unretained pointer is safe.
        let context = Unmanaged.passUnretained(self).toOpaque()
        spool_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
        spool_curl_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, Transfer.onBody)
    }

    /// libcurl's write callback: the first call reads the response head, every call forwards bytes.
    static let onBody: spool_curl_data_cb = { data, size, count, context in
        guard let context, let data else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        return transfer.receive(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
    }

    private func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if head == nil {
            guard let accepted = readHead() else { return false }
            head = accepted
            nextOffset = accepted.bodyStart
            events(.response(accepted))
        }
        guard !bytes.isEmpty else { return true }
        var chunk = Data(bytes)
        // Never deliver past what was asked, even if the server sends more.
        if let end = request.end, nextOffset + Int64(chunk.count) > end {
            chunk = chunk.prefix(Int(max(0, end - nextOffset)))
        }
        if !chunk.isEmpty {
            events(.data(chunk, offset: nextOffset))
            nextOffset += Int64(chunk.count)
        }
        return true
    }

    /// Reads and checks the response head; nil (with `failure` set) when the body must not be used.
    private func readHead() -> ResponseHead? {
        var status = 0
        spool_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var result = ResponseHead(status: status)
        result.etag = header("ETag")
        result.lastModified = header("Last-Modified")
        result.contentType = header("Content-Type")
        result.contentLength = header("Content-Length").flatMap { Int64($0) }
        switch status {
        case 206:
            guard let value = header("Content-Range"), let range = parseContentRange(value),
                range.first == request.start, request.end.map({ range.last < $0 }) ?? true
            else {
                failure = .badContentRange(header("Content-Range") ?? "<missing>")
                return nil
            }
            result.bodyStart = range.first
            result.totalLength = range.total
        case 200:
            result.bodyStart = 0
            result.totalLength = result.contentLength
            // An origin that ignores Range sends the body from 0, wherever we asked
            // to start: it is delivered at its true offset and the caller decides.
        default:
            failure = .httpStatus(status)
            return nil
        }
        return result
    }

    private func header(_ name: String) -> String? {
        var found: UnsafeMutablePointer<curl_header>?
        guard curl_easy_header(easy, name, 0, UInt32(CURLH_HEADER), -1, &found) == CURLHE_OK,
            let value = found?.pointee.value
        else { return nil }
        return String(cString: value)
    }

    /// Called once libcurl reports the transfer done; emits the final event.
    func complete(code: CURLcode) {
        if head == nil, failure == nil {
            // A body-less response (304, 416, an empty 200) never reached the write callback.
            var status = 0
            spool_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            if code == CURLE_OK, status == 200 || status == 206, let accepted = readHead() {
                head = accepted
                events(.response(accepted))
            } else if code == CURLE_OK {
                failure = .httpStatus(status)
            }
        }
        if let failure {
            events(.failed(failure))
        } else if code != CURLE_OK {
            let message = errorBuffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            let text = message.isEmpty ? String(cString: curl_easy_strerror(code)) : message
            events(.failed(.transport(code: Int(code.rawValue), message: text)))
        } else {
            events(.finished)
        }
    }

    private func events(_ event: TransferEvent) { sink(id, event) }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
    }
}
