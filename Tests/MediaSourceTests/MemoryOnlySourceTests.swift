import ByteSourceAPI
import Fetcher
import Foundation
import MediaSource
import TestSupport
import Testing

/// Reads `[offset, offset+length)` from a source, waiting on its wake-ups (never polling).
func readFully(_ source: ByteSource, at offset: Int64, length: Int, timeout: Double = 10) -> Result<
    Data, MediaSourceError
> {
    var collected = Data()
    var position = offset
    while collected.count < length {
        let woken = DispatchSemaphore(value: 0)
        switch source.read(at: position, maxLength: length - collected.count, wake: { woken.signal() }) {
        case .data(let bytes):
            collected.append(bytes)
            position += Int64(bytes.count)
        case .endOfStream:
            return .success(collected)
        case .failed(let error):
            return .failure(error)
        case .pending:
            if woken.wait(timeout: .now() + timeout) == .timedOut { return .failure(.readFailed("timed out")) }
        }
    }
    return .success(collected)
}

func open(_ source: ByteSource) -> Result<ResourceInfo, MediaSourceError> {
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox()
    source.open { result in
        box.set(result)
        done.signal()
    }
    _ = done.wait(timeout: .now() + 10)
    return box.get() ?? .failure(.unavailable("open timed out"))
}

final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Result<ResourceInfo, MediaSourceError>?
    func set(_ result: Result<ResourceInfo, MediaSourceError>) { lock.withLock { value = result } }
    func get() -> Result<ResourceInfo, MediaSourceError>? { lock.withLock { value } }
}

@Suite("An http source without a cache", .serialized)
struct MemoryOnlySourceTests {
    let fetcher = Fetcher(userAgent: "Spool/test")

    @Test func opensWithTheLengthAndReadsExactBytes() throws {
        let origin = try FaultOrigin()
        let body = patternedBody(400_000)
        origin.serve(OriginResource(body, etag: "\"v1\""), at: "/t.flac")
        let source = HTTPByteSource(url: origin.url(for: "/t.flac"), fetcher: fetcher)
        defer { source.close() }
        let info = try open(source).get()
        #expect(info.length == 400_000)
        #expect(info.randomAccess)
        #expect(firstDifference(try readFully(source, at: 0, length: 4096).get(), body.prefix(4096)) == nil)
        #expect(
            firstDifference(try readFully(source, at: 123_456, length: 10_000).get(), body[123_456..<133_456]) == nil)
    }

    @Test func aReadFarAheadStartsARangeRequestAtThatOffset() throws {
        let origin = try FaultOrigin()
        let body = patternedBody(2_000_000)
        var faults = OriginFaults()
        faults.bytesPerSecond = 200_000  // the first transfer cannot reach the far offset soon
        origin.serve(OriginResource(body, etag: "\"v1\""), at: "/big.mp3", faults: faults)
        let source = HTTPByteSource(url: origin.url(for: "/big.mp3"), fetcher: fetcher)
        _ = try open(source).get()
        let far: Int64 = 1_500_000
        #expect(
            firstDifference(try readFully(source, at: far, length: 1000).get(), body[Int(far)..<Int(far) + 1000]) == nil
        )
        source.close()  // ends the transfers, so the origin logs both
        let ranges = try origin.requests(atLeast: 2).compactMap(\.range)
        #expect(ranges.contains("bytes=0-"))
        #expect(ranges.contains { $0.hasPrefix("bytes=\(far)-") }, "\(ranges)")
    }

    @Test func readingAtTheEndIsEndOfStream() throws {
        let origin = try FaultOrigin()
        origin.serve(OriginResource(patternedBody(1000), etag: "\"v1\""), at: "/s.wav")
        let source = HTTPByteSource(url: origin.url(for: "/s.wav"), fetcher: fetcher)
        defer { source.close() }
        _ = try open(source).get()
        #expect(source.read(at: 1000, maxLength: 10, wake: {}) == .endOfStream)
        #expect(try readFully(source, at: 990, length: 100).get().count == 10)
    }

    @Test func aMissingResourceFailsToOpen() throws {
        let origin = try FaultOrigin()
        let source = HTTPByteSource(url: origin.url(for: "/nope.mp3"), fetcher: fetcher)
        defer { source.close() }
        guard case .failure(.gone(let why)) = open(source) else {
            Issue.record("a 404 must fail to open, for good")
            return
        }
        #expect(why.contains("404"))
    }

    @Test func aClosedSourceFailsReads() throws {
        let origin = try FaultOrigin()
        origin.serve(OriginResource(patternedBody(1000), etag: "\"v1\""), at: "/c.mp3")
        let source = HTTPByteSource(url: origin.url(for: "/c.mp3"), fetcher: fetcher)
        _ = try open(source).get()
        source.close()
        #expect(source.read(at: 0, maxLength: 10, wake: {}) == .failed(.closed))
    }
}
