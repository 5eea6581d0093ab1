// Measures the Fetcher against loopback origins it starts itself:
//   swift run -c release FetcherBench [--quick]
// - time to first byte from a cold origin with 50 ms first-byte latency (target ≤ 55 ms),
// - single-transfer throughput from nginx against the `curl` command line on the same
//   file in the same run (target ≥ 80 %),
// - cancel latency (cancel() → the fetcher thread has dropped the transfer), while data
//   flows and while the server is silent,
// - that a proxy named by `http_proxy` is used (libcurl's default, never disabled).
// Loopback only; every loop is bounded.
import Fetcher
import Foundation
import Synchronization
import TestSupport

@main
struct FetcherBench {
    static func main() throws {
        let quick = CommandLine.arguments.contains("--quick")
        print("FetcherBench (loopback; \(quick ? "quick" : "full") run)")
        try checkProxyFromEnvironment()
        try timeToFirstByte(samples: quick ? 5 : 20)
        try throughput(megabytes: quick ? 128 : 512, rounds: quick ? 1 : 3)
        try cancelLatency(samples: quick ? 5 : 20)
    }

    // MARK: measurements

    static func timeToFirstByte(samples: Int) throws {
        // A minimal origin that waits exactly 50 ms before its answer, so what is measured is the
        // fetcher (the fault origin adds a few ms of its own bookkeeping per request). A new
        // origin per sample: the running fetcher has no connection to it yet.
        let fetcher = Fetcher(userAgent: "Spool/bench")
        let curl = try executablePath("curl")
        var cold: [Double] = []
        var warm: [Double] = []
        var reference: [Double] = []
        var connections = 0
        for _ in 0..<samples {
            let origin = try MinimalOrigin(latency: 0.05)
            // Connect, request, 50 ms, first byte.
            cold.append(try firstByte(fetcher, RangeRequest(url: origin.url)))
            // A range hop on the kept connection (the same 50 ms).
            warm.append(try firstByte(fetcher, RangeRequest(url: origin.url, start: 4096)))
            connections += origin.accepted
            let result = try runCommand(
                curl, ["-s", "-o", "/dev/null", "-w", "%{time_starttransfer}", origin.url.absoluteString])
            reference.append(Double(result.stdout) ?? .nan)
        }
        fetcher.shutdown()
        report("time to first byte, cold origin with 50 ms latency", cold, unit: "ms", scale: 1000, target: "≤ 55 ms")
        report("  the same origins seen by the curl CLI (time_starttransfer)", reference, unit: "ms", scale: 1000)
        report("time to first byte, range hop on the kept connection", warm, unit: "ms", scale: 1000)
        print("  connections the fetcher opened for \(samples * 2) requests to \(samples) origins: \(connections)")
    }

    static func throughput(megabytes: Int, rounds: Int) throws {
        let directory = try TemporaryDirectory(prefix: "spool-bench")
        let file = directory.file("big.bin")
        let block = patternedBody(1 << 20)
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        let handle = try FileHandle(forWritingTo: file)
        for _ in 0..<megabytes { handle.write(block) }
        try handle.close()
        let nginx = try NginxServer(serving: directory.url)
        let url = nginx.url(for: "big.bin")
        let bytes = Double(megabytes << 20)
        let curl = try executablePath("curl")
        let fetcher = Fetcher(userAgent: "Spool/bench")
        var ours: [Double] = []
        var theirs: [Double] = []
        for _ in 0..<rounds {
            let started = Date()
            let result = try runCommand(curl, ["-s", "-o", "/dev/null", "-w", "%{size_download}", url.absoluteString])
            let curlSeconds = Date().timeIntervalSince(started)
            guard result.status == 0, Int(result.stdout) == megabytes << 20 else {
                throw RigError("curl failed: \(result.status) \(result.stdout) \(result.stderr)")
            }
            theirs.append(bytes / curlSeconds)
            ours.append(bytes / (try wholeTransfer(fetcher, RangeRequest(url: url), expecting: Int64(megabytes << 20))))
        }
        fetcher.shutdown()
        let ourMedian = median(ours)
        let theirMedian = median(theirs)
        print(
            String(
                format:
                    "  throughput, %d MiB from nginx: Fetcher %.0f MB/s, curl CLI %.0f MB/s (process start included): %.0f %% (target ≥ 80 %%)",
                megabytes, ourMedian / 1e6, theirMedian / 1e6, 100 * ourMedian / theirMedian))
    }

    static func cancelLatency(samples: Int) throws {
        let origin = try FaultOrigin()
        origin.serve(
            OriginResource(patternedBody(4 << 20)), at: "/flowing", faults: OriginFaults(bytesPerSecond: 4 << 20))
        origin.serve(
            OriginResource(patternedBody(1 << 20)), at: "/silent",
            faults: OriginFaults(stall: .init(afterBodyBytes: 4096)))
        let fetcher = Fetcher(userAgent: "Spool/bench")
        var flowing: [Double] = []
        var silent: [Double] = []
        for _ in 0..<samples {
            flowing.append(try cancelAfterFirstByte(fetcher, origin.url(for: "/flowing")))
            silent.append(try cancelAfterFirstByte(fetcher, origin.url(for: "/silent")))
        }
        fetcher.shutdown()
        report("cancel latency while data flows", flowing, unit: "ms", scale: 1000, target: "≤ 50 ms")
        report("cancel latency while the server is silent", silent, unit: "ms", scale: 1000, target: "≤ 50 ms")
    }

    /// Fetches through a proxy named by `http_proxy`: the origin then sees an absolute-form target.
    static func checkProxyFromEnvironment() throws {
        let proxy = try FaultOrigin()
        let target = "http://spool-proxy-check.invalid/a"
        proxy.serve(OriginResource(patternedBody(1000)), at: target)
        setenv("http_proxy", "http://127.0.0.1:\(proxy.port)", 1)
        defer { unsetenv("http_proxy") }
        let fetcher = Fetcher(userAgent: "Spool/bench")
        defer { fetcher.shutdown() }
        _ = try wholeTransfer(fetcher, RangeRequest(url: URL(string: target)!), expecting: 1000)
        let seen = try proxy.requests(atLeast: 1).first?.path
        guard seen == target else { throw RigError("the proxy saw \(String(describing: seen))") }
        print("  proxy from http_proxy: used (the proxy answered \(target))")
    }

    // MARK: helpers

    /// Seconds from `start` to the first data event; returns once the transfer has finished
    /// (so its connection stays in the cache).
    static func firstByte(_ fetcher: Fetcher, _ request: RangeRequest) throws -> Double {
        let gate = Gate()
        let end = Gate()
        let started = Date()
        fetcher.start(request) { _, event in
            switch event {
            case .data: gate.open(Date().timeIntervalSince(started))
            case .finished: end.open(0)
            case .failed(let error):
                gate.fail("\(error)")
                end.fail("\(error)")
            default: break
            }
        }
        _ = try end.wait()
        return try gate.wait()
    }

    /// Seconds to fetch the whole resource, checking the byte count.
    static func wholeTransfer(_ fetcher: Fetcher, _ request: RangeRequest, expecting count: Int64) throws -> Double {
        let gate = Gate()
        let received = Atomic<Int64>(0)
        let started = Date()
        fetcher.start(request) { _, event in
            switch event {
            case .data(let bytes, _): received.add(Int64(bytes.count), ordering: .relaxed)
            case .finished: gate.open(Date().timeIntervalSince(started))
            case .failed(let error): gate.fail("\(error)")
            default: break
            }
        }
        let seconds = try gate.wait(timeout: 120)
        let total = received.load(ordering: .relaxed)
        guard total == count else { throw RigError("received \(total) bytes, expected \(count)") }
        return seconds
    }

    /// Seconds from `cancel` to its completion on the fetcher thread, once bytes are arriving.
    static func cancelAfterFirstByte(_ fetcher: Fetcher, _ url: URL) throws -> Double {
        let firstByte = Gate()
        let id = fetcher.start(RangeRequest(url: url)) { _, event in
            if case .data = event { firstByte.open(0) }
        }
        _ = try firstByte.wait()
        let cancelled = Gate()
        let asked = Date()
        fetcher.cancel(id) { cancelled.open(Date().timeIntervalSince(asked)) }
        return try cancelled.wait()
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    static func report(_ name: String, _ values: [Double], unit: String, scale: Double, target: String? = nil) {
        let sorted = values.sorted().map { $0 * scale }
        let p90 = sorted[min(sorted.count - 1, sorted.count * 9 / 10)]
        let line = String(
            format: "  %@: median %.2f %@, p90 %.2f %@, max %.2f %@ (%d samples)",
            name, median(sorted), unit, p90, unit, sorted.last!, unit, sorted.count)
        print(line + (target.map { ", target \($0)" } ?? ""))
    }
}

/// A one-shot result handed from the fetcher thread to the bench's thread.
final class Gate: Sendable {
    private let value = Mutex<Result<Double, RigError>?>(nil)
    private let signal = DispatchSemaphore(value: 0)

    func open(_ seconds: Double) { set(.success(seconds)) }
    func fail(_ why: String) { set(.failure(RigError(why))) }

    private func set(_ result: Result<Double, RigError>) {
        let first = value.withLock { value in
            defer { if value == nil { value = result } }
            return value == nil
        }
        if first { signal.signal() }
    }

    func wait(timeout: Double = 10) throws -> Double {
        guard signal.wait(timeout: .now() + timeout) == .success else { throw RigError("timed out") }
        return try value.withLock { $0! }.get()
    }
}

/// An HTTP/1.1 origin on 127.0.0.1 that answers every request, after `latency`, with a fixed
/// 64 KiB body (206 for a Range request, else 200), keeping connections open.
final class MinimalOrigin: Sendable {
    let url: URL
    private let listener: Int32
    private let counter = Counter()
    var accepted: Int { counter.value.load(ordering: .relaxed) }

    final class Counter: Sendable { let value = Atomic<Int>(0) }

    init(latency: Double) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        listener = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw RigError("minimal origin: bind failed, errno \(errno)") }
        url = URL(string: "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/a")!
        let counter = self.counter
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                counter.value.add(1, ordering: .relaxed)
                Thread.detachNewThread { Self.serve(client, latency: latency) }
            }
        }
    }

    private static func serve(_ fd: Int32, latency: Double) {
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let body = [UInt8](repeating: 7, count: 65_536)
        var pending = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 8192)
        while true {
            let received = recv(fd, &buffer, buffer.count, 0)
            guard received > 0 else { return }
            pending += buffer[0..<received]
            guard let text = String(bytes: pending, encoding: .utf8), text.contains("\r\n\r\n") else { continue }
            pending.removeAll()
            Thread.sleep(forTimeInterval: latency)
            var head = "HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n"
            if let range = text.range(of: "Range: bytes=") {
                let start = Int(text[range.upperBound...].prefix { $0.isNumber }) ?? 0
                head =
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(start)-\(body.count - 1)/\(body.count)\r\n"
                    + "Content-Length: \(body.count - start)\r\n\r\n"
                let response = Array(head.utf8) + body[start...]
                guard send(fd, response, response.count, Int32(MSG_NOSIGNAL)) == response.count else { return }
            } else {
                let response = Array(head.utf8) + body
                guard send(fd, response, response.count, Int32(MSG_NOSIGNAL)) == response.count else { return }
            }
        }
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
