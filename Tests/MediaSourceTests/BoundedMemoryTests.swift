import ByteSourceAPI
import Fetcher
import Foundation
import MediaSource
import TestSupport
import Testing

/// The memory-only source (no cache, or a full disk) holds at most its window, whatever the
/// length of the stream or the length its origin declares.
@Suite("HTTP byte source keeps a bounded window", .serialized)
struct BoundedMemoryTests {
    let fetcher = Fetcher(userAgent: "Spool/test")

    /// Reads `[0, count)` in `step`-byte reads, checking each against `body` and the window.
    private func readThrough(
        _ source: HTTPByteSource, _ body: Data, step: Int, capacity: Int64
    ) -> Int64 {
        var largest: Int64 = 0
        var offset = 0
        while offset < body.count {
            let length = min(step, body.count - offset)
            guard case .success(let bytes) = readFully(source, at: Int64(offset), length: length) else {
                Issue.record("read at \(offset) failed")
                return largest
            }
            if firstDifference(bytes, body[offset..<offset + length]) != nil {
                Issue.record("bytes differ at \(offset)")
                return largest
            }
            largest = max(largest, source.bytesInMemory)
            offset += length
        }
        return largest
    }

    @Test(arguments: [false, true])
    func aLongBodyPassesThroughTheWindowAndASeekBackAsksAgain(originIgnoresRange: Bool) throws {
        let origin = try FaultOrigin()
        let body = patternedBody(3 << 20)
        origin.serve(
            OriginResource(body, etag: "\"v1\""), at: "/long.mp3",
            faults: OriginFaults(ignoresRange: originIgnoresRange))
        let capacity: Int64 = 512 << 10
        let source = HTTPByteSource(
            url: origin.url(for: "/long.mp3"), fetcher: fetcher, memoryWindow: MemoryWindow(capacity: capacity))
        defer { source.close() }
        #expect(try open(source).get().length == Int64(body.count))
        let largest = readThrough(source, body, step: 64 << 10, capacity: capacity)
        #expect(largest <= capacity, "held \(largest) bytes with a window of \(capacity)")
        #expect(largest >= capacity / 2, "the window was used (\(largest) bytes)")

        // The start was dropped long ago: reading it again asks the origin again. (Counted by
        // arrival: the request log has a response only once it ended, which a running one has not.)
        let before = origin.transfers().count
        let again = try readFully(source, at: 0, length: 4096).get()
        #expect(firstDifference(again, body.prefix(4096)) == nil)
        let requests = origin.transfers()
        #expect(
            requests.dropFirst(before).contains { $0.range?.hasPrefix("bytes=0-") == true },
            "\(requests.map { $0.range ?? "-" })")
        #expect(source.bytesInMemory <= capacity)
    }

    @Test func aTerabyteLengthPlaysWhatArrivesWithinTheWindow() throws {
        let origin = try TerabyteOrigin()
        let capacity: Int64 = 1 << 20
        let source = HTTPByteSource(url: origin.url, fetcher: fetcher, memoryWindow: MemoryWindow(capacity: capacity))
        defer { source.close() }
        let info = try open(source).get()
        #expect(info.length == TerabyteOrigin.length)
        #expect(info.randomAccess)
        var largest: Int64 = 0
        var offset: Int64 = 0
        while offset < 4 << 20 {
            let bytes = try readFully(source, at: offset, length: 64 << 10).get()
            #expect(bytes.count == 64 << 10)
            #expect(
                bytes.first == TerabyteOrigin.byte(at: offset) && bytes.last == TerabyteOrigin.byte(at: offset + 65_535)
            )
            largest = max(largest, source.bytesInMemory)
            offset += Int64(bytes.count)
        }
        #expect(largest <= capacity, "held \(largest) bytes with a window of \(capacity)")
        // Its end, five terabytes on: a range there, then the end of the stream.
        let tail = try readFully(source, at: TerabyteOrigin.length - 100, length: 1000).get()
        #expect(tail.count == 100)
        #expect(tail.last == TerabyteOrigin.byte(at: TerabyteOrigin.length - 1))
        #expect(source.read(at: TerabyteOrigin.length, maxLength: 10) {} == .endOfStream)
    }

    @Test func residentMemoryStaysBoundedOverAStreamSixTimesTheWindow() throws {
        let origin = try TerabyteOrigin()
        let source = HTTPByteSource(url: origin.url, fetcher: fetcher)  // the production window
        defer { source.close() }
        _ = try open(source).get()
        let step: Int64 = 256 << 10
        var offset: Int64 = 0
        func read(upTo end: Int64) throws {
            while offset < end {
                let bytes = try readFully(source, at: offset, length: Int(step)).get()
                #expect(bytes.last == TerabyteOrigin.byte(at: offset + step - 1))
                offset += step
            }
        }
        try read(upTo: 40 << 20)  // the window is full from here on
        let before = residentBytes()
        try read(upTo: 240 << 20)  // 200 MiB more
        let growth = residentBytes() - before
        print("resident: \(before >> 20) MiB after 40 MiB read, \((before + growth) >> 20) MiB after 240 MiB")
        #expect(growth < 24 << 20, "resident memory grew \(growth >> 20) MiB over 200 MiB streamed")
        #expect(source.bytesInMemory <= MemoryWindow.standard.capacity)
    }

    @Test func aTrickledBodyKeepsTheReaderWaitingThenFailsClearly() throws {
        var configuration = FetcherConfiguration(userAgent: "Spool/test")
        configuration.minimumRate = 1024
        configuration.slowWindow = 1
        configuration.maxSlowAttempts = 2
        let fetcher = Fetcher(configuration: configuration)
        let origin = try FaultOrigin()
        origin.serve(
            OriginResource(patternedBody(100_000), etag: "\"v1\""), at: "/slow.mp3",
            faults: OriginFaults(bytesPerSecond: 1))
        let source = HTTPByteSource(url: origin.url(for: "/slow.mp3"), fetcher: fetcher)
        defer { source.close() }
        _ = try open(source).get()
        #expect(source.read(at: 0, maxLength: 4096) {} == .pending)  // buffering, not failing
        // Each trickled byte wakes the reader, which finds too little and waits again.
        let deadline = Date().addingTimeInterval(10)
        var outcome = ReadOutcome.pending
        var wakes = 0
        while outcome == .pending, Date() < deadline {
            let woken = DispatchSemaphore(value: 0)
            outcome = source.read(at: 0, maxLength: 4096) { woken.signal() }
            if outcome == .pending, woken.wait(timeout: .now() + deadline.timeIntervalSinceNow) == .success {
                wakes += 1
            }
        }
        guard case .failed(.readFailed(let why)) = outcome else {
            Issue.record("expected a read failure within 10 s, got \(outcome)")
            return
        }
        #expect(wakes < 20, "woken \(wakes) times: no spinning")
        #expect(why.hasPrefix("the server is too slow: "), "\(why)")
        #expect(source.bytesInMemory < 100)
    }
}

/// The resident set size of this process, in bytes (`/proc/self/statm`).
func residentBytes() -> Int64 {
    let fields = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8))?.split(separator: " ") ?? []
    return (fields.count > 1 ? Int64(fields[1]) ?? 0 : 0) * Int64(sysconf(Int32(_SC_PAGESIZE)))
}

/// An origin claiming a 5 TB file with ranges: every request gets a 206 for the range asked
/// (to the end when it names none), generated as it is sent, until the client hangs up.
final class TerabyteOrigin: Sendable {
    static let length: Int64 = 5_000_000_000_000
    /// The byte at `offset`: a pattern whose period (251, a prime) no chunk size lines up with.
    static func byte(at offset: Int64) -> UInt8 { UInt8(offset % 251) }

    private let origin: ScriptedOrigin
    var url: URL { origin.url(for: "/huge.mp3") }

    init() throws {
        // Any 64 KiB of the stream is a slice of this, starting at its offset modulo 251.
        let pattern = Data((0..<(65_536 + 251)).map { UInt8($0 % 251) })
        origin = try ScriptedOrigin { connection in
            let spec =
                connection.requestHead.split(separator: "\r\n")
                .first { $0.lowercased().hasPrefix("range: bytes=") }?.dropFirst("range: bytes=".count)
                .split(separator: "-", omittingEmptySubsequences: false) ?? []
            let start = min(spec.first.flatMap { Int64($0) } ?? 0, Self.length - 1)
            let end = min(spec.dropFirst().first.flatMap { Int64($0) }.map { $0 + 1 } ?? Self.length, Self.length)
            let head =
                "HTTP/1.1 206 Partial Content\r\nContent-Type: audio/mpeg\r\nAccept-Ranges: bytes\r\n"
                + "ETag: \"huge\"\r\nContent-Range: bytes \(start)-\(end - 1)/\(Self.length)\r\n"
                + "Content-Length: \(end - start)\r\nConnection: close\r\n\r\n"
            guard connection.send(head) else { return }
            var offset = start
            while offset < end {
                let from = Int(offset % 251)
                let count = Int(min(65_536, end - offset))
                guard connection.send(pattern.subdata(in: from..<from + count)) else { return }
                offset += Int64(count)
            }
        }
    }
}
