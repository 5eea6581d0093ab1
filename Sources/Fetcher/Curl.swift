internal import CCurl
internal import CCurlShim
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// `curl_global_init`, once per process (SIGPIPE ignored as well: libcurl writes to sockets).
enum CurlGlobal {
    private static let done: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        signal(SIGPIPE, SIG_IGN)
        return true
    }()

    static func initialize() { _ = done }
}

/// Seconds on the monotonic clock, for deadlines on the fetcher thread.
func monotonicSeconds() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

/// The multi handle. Only the fetcher thread calls anything but `wakeUp`, which
/// libcurl documents as safe from any thread. Its connection cache keeps connections
/// open between transfers, so a range hop to the same origin needs no new handshake.
final class MultiHandle: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer
    /// Whether the handle is cleaned up. Held across a wake-up, so `close` waits for one in
    /// progress on another thread instead of freeing the handle under it.
    private let closed = Mutex<Bool>(false)

    init() {
        handle = curl_multi_init()!
    }

    /// `curl_multi_wakeup`: ends a `poll` in progress (or the next one) at once. It only
    /// writes to libcurl's wake-up socket, so holding the lock across it costs nothing.
    func wakeUp() {
        closed.withLock { closed in
            if !closed { curl_multi_wakeup(handle) }
        }
    }

    func add(_ easy: EasyHandle) { curl_multi_add_handle(handle, easy.raw) }
    func remove(_ easy: EasyHandle) { curl_multi_remove_handle(handle, easy.raw) }

    func perform() {
        var running: Int32 = 0
        curl_multi_perform(handle, &running)
    }

    /// The next finished easy handle and its result, from `curl_multi_info_read`.
    func nextCompleted() -> (UnsafeMutableRawPointer, Int)? {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(handle, &remaining) {
            if message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle {
                return (easy, Int(message.pointee.data.result.rawValue))
            }
        }
        return nil
    }

    /// Sleeps in `curl_multi_poll` until socket activity, a wake-up or the timeout.
    func poll(timeoutMilliseconds: Int32) {
        var ready: Int32 = 0
        curl_multi_poll(handle, nil, 0, timeoutMilliseconds, &ready)
    }

    func close() {
        closed.withLock { $0 = true }
        curl_multi_cleanup(handle)
    }
}

/// A share handle for the DNS cache and TLS sessions of every easy handle. Used from the
/// fetcher thread only, so it needs no lock callbacks.
final class ShareHandle {
    let raw: UnsafeMutableRawPointer

    init() {
        raw = curl_share_init()!
        spool_curl_share_setopt_long(raw, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_DNS.rawValue))
        spool_curl_share_setopt_long(raw, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue))
    }

    deinit { curl_share_cleanup(raw) }
}

/// One easy handle configured for one attempt of a transfer; freed (with its header list and
/// error buffer) when released, which happens only after it left the multi handle.
final class EasyHandle {
    let raw: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>

    /// Configures a GET of `url` for the bytes `range` (curl's `a-b` form; nil sends no Range)
    /// with `headers`.
    /// `context` is handed to `onBody`, unretained: the owner outlives the handle.
    init(
        url: URL, range: String?, headers: [String], configuration: FetcherConfiguration, share: ShareHandle,
        context: UnsafeMutableRawPointer, onBody: spool_curl_data_cb
    ) {
        raw = curl_easy_init()!
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        set(CURLOPT_URL, url.absoluteString)
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_PROTOCOLS_STR, "http,https")
        set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        set(CURLOPT_FOLLOWLOCATION, 1)
        set(CURLOPT_MAXREDIRS, configuration.maxRedirects)
        // The fetcher's own stall check covers connecting too; this is only a backstop.
        set(CURLOPT_CONNECTTIMEOUT, 60)
        // TLS verification stays on whatever the environment says; proxies come from the
        // usual environment variables (libcurl's default: CURLOPT_PROXY is never set).
        set(CURLOPT_SSL_VERIFYPEER, 1)
        set(CURLOPT_SSL_VERIFYHOST, 2)
        // Waiting for a connection that may multiplex pays only where HTTP/2 can be negotiated
        // (https, through ALPN). Over plain http libcurl 7.88 holds a request made before the
        // origin's first answer until the transfer on that connection ends, so a probe or a seek
        // made just after opening would wait for the whole first download.
        set(CURLOPT_PIPEWAIT, url.scheme?.lowercased() == "https" ? 1 : 0)
        // Larger reads than the 16 KiB default: fewer callbacks and copies at high rates (the curl CLI uses 100 KiB).
        set(CURLOPT_BUFFERSIZE, 128 * 1024)
        set(CURLOPT_USERAGENT, configuration.userAgent)
        if let range { set(CURLOPT_RANGE, range) }
        for header in ["Accept-Encoding: \(FetcherConfiguration.acceptEncoding)"] + headers {
            headerList = curl_slist_append(headerList, header)
        }
        spool_curl_setopt_pointer(raw, CURLOPT_HTTPHEADER, headerList)
        spool_curl_setopt_pointer(raw, CURLOPT_SHARE, share.raw)
        spool_curl_setopt_pointer(raw, CURLOPT_ERRORBUFFER, errorBuffer)
        spool_curl_setopt_pointer(raw, CURLOPT_WRITEDATA, context)
        spool_curl_setopt_data_callback(raw, CURLOPT_WRITEFUNCTION, onBody)
    }

    private func set(_ option: CURLoption, _ value: Int) { spool_curl_setopt_long(raw, option, value) }
    private func set(_ option: CURLoption, _ value: String) { spool_curl_setopt_pointer(raw, option, value) }

    /// The final response's status (after redirects); 0 before a status line arrived.
    var status: Int {
        var status = 0
        spool_curl_getinfo_long(raw, CURLINFO_RESPONSE_CODE, &status)
        return status
    }

    /// A header of the final response (`curl_easy_header`), nil when absent. A header sent on
    /// several field lines (`Cache-Control`, `Vary`) comes back as one list, joined by commas.
    func header(_ name: String) -> String? {
        var found: UnsafeMutablePointer<curl_header>?
        guard curl_easy_header(raw, name, 0, UInt32(CURLH_HEADER), -1, &found) == CURLHE_OK, let first = found
        else { return nil }
        var values = [String(cString: first.pointee.value)]
        for index in 1..<max(1, first.pointee.amount) {
            var line: UnsafeMutablePointer<curl_header>?
            guard curl_easy_header(raw, name, index, UInt32(CURLH_HEADER), -1, &line) == CURLHE_OK, let line
            else { break }
            values.append(String(cString: line.pointee.value))
        }
        return values.joined(separator: ", ")
    }

    /// The response head as it stands.
    var head: HeadFields { HeadFields(status: status, header: { [self] in header($0) }) }

    /// Pauses or resumes receiving (`curl_easy_pause`); the connection stays open.
    func setPaused(_ paused: Bool) {
        curl_easy_pause(raw, paused ? CURLPAUSE_RECV : 0)
    }

    /// libcurl's message for a failed transfer: the error buffer, else `curl_easy_strerror`.
    func errorMessage(code: Int) -> String {
        let message = String(cString: errorBuffer)
        return message.isEmpty ? String(cString: curl_easy_strerror(CURLcode(UInt32(code)))) : message
    }

    deinit {
        curl_easy_cleanup(raw)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }
}

/// libcurl result codes the fetcher looks at.
enum CurlCode {
    static let ok = 0
    /// The server closed the connection before the body's declared length (CURLE_PARTIAL_FILE).
    static let partialFile = 18
    /// libcurl could not allocate; before the head is read, a header line over its limit.
    static let outOfMemory = 27
    /// More redirects than CURLOPT_MAXREDIRS allows.
    static let tooManyRedirects = 47
    /// Transport failures worth another attempt: name resolution, connect, HTTP/2 framing,
    /// a body cut short, timeouts, TLS handshake, empty reply, send and receive errors.
    static let retryable: Set<Int> = [5, 6, 7, 16, 18, 28, 35, 52, 55, 56, 92]
}
