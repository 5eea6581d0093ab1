import Fetcher
import Foundation
import Glibc
import TestSupport
import Testing

/// Origins that try to make a client wait or hold memory forever: a redirect loop, endless or
/// giant response headers, a body trickled a byte a second. Each ends in a clear error, after a
/// bounded number of requests and bytes.
@Suite("Fetcher against hostile origins", .serialized)
struct HostileOriginTests {
    @Test func aRedirectLoopFailsAfterTheRedirectLimit() throws {
        let fetcher = Fetcher(configuration: .forTests)
        let origin = try FaultOrigin()
        origin.redirect("/a.mp3", to: "/b.mp3")
        origin.redirect("/b.mp3", to: "/a.mp3")
        let recorder = fetcher.record(RangeRequest(url: origin.url(for: "/a.mp3")))
        expectFailure(recorder) { $0 == .tooManyRedirects(5) }
        // The first request and five redirects followed; no retry of a loop.
        #expect(try origin.settledRequests().count == 6)
        if case .failed(let error)? = recorder.end {
            #expect(error.description == "too many redirects (more than 5): the server redirects in a loop")
        }
    }

    /// What came from the network leads only to the network: libcurl follows redirects to
    /// http(s) alone, so an origin cannot make Spool read a local file.
    @Test func aRedirectToALocalFileFailsAndReadsNothingOfIt() throws {
        let fetcher = Fetcher(configuration: .forTests)
        let origin = try FaultOrigin()
        let folder = try TemporaryDirectory()
        let secret = folder.file("secret.m3u")
        try Data("#EXTM3U\nsecret-entry.mp3\n".utf8).write(to: secret)
        origin.redirect("/list.m3u", to: secret.absoluteString)
        let recorder = fetcher.record(RangeRequest(url: origin.url(for: "/list.m3u")))
        expectFailure(recorder) { _ in true }
        let delivered = recorder.all.compactMap { event -> Data? in
            if case .data(let bytes, _) = event { return bytes }
            return nil
        }
        #expect(!delivered.contains { String(decoding: $0, as: UTF8.self).contains("secret-entry") }, "\(recorder.all)")
        #expect(try origin.settledRequests().map(\.path) == ["/list.m3u"])
    }

    @Test func aSelfRedirectFailsAfterTheRedirectLimit() throws {
        var configuration = FetcherConfiguration.forTests
        configuration.maxRedirects = 3
        let fetcher = Fetcher(configuration: configuration)
        let origin = try FaultOrigin()
        origin.redirect("/a.mp3", to: "/a.mp3", status: 301)
        expectFailure(fetcher.record(RangeRequest(url: origin.url(for: "/a.mp3")))) { $0 == .tooManyRedirects(3) }
        #expect(try origin.settledRequests().map(\.path) == Array(repeating: "/a.mp3", count: 4))
    }

    @Test func endlessHeaderLinesFailOnceWithoutRetrying() throws {
        let origin = try ScriptedOrigin { connection in
            guard connection.send("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n") else { return }
            let filler = String(repeating: "a", count: 1000)
            for line in 0..<200_000 {  // 200 MB if nothing stopped it
                guard connection.send("X-Filler-\(line): \(filler)\r\n") else { return }
            }
        }
        let fetcher = Fetcher(configuration: .forTests)
        let recorder = fetcher.record(RangeRequest(url: origin.url(for: "/a.mp3")))
        expectFailure(recorder) { error in
            guard case .responseHeadTooLarge(let detail) = error else { return false }
            return detail.hasPrefix("Too large response headers")
        }
        #expect(origin.connections == 1)
        // libcurl stops at 300 KB of headers; the rest is what the socket buffers took.
        #expect(origin.bytesSent < 16 << 20, "\(origin.bytesSent) bytes of headers sent")
    }

    @Test func aGiantHeaderLineFailsOnceWithoutRetrying() throws {
        let origin = try ScriptedOrigin { connection in
            guard connection.send("HTTP/1.1 200 OK\r\nX-Giant: ") else { return }
            let chunk = Data(repeating: UInt8(ascii: "a"), count: 65_536)
            for _ in 0..<3_000 {  // 200 MB in one header line if nothing stopped it
                guard connection.send(chunk) else { return }
            }
        }
        let fetcher = Fetcher(configuration: .forTests)
        let recorder = fetcher.record(RangeRequest(url: origin.url(for: "/a.mp3")))
        expectFailure(recorder) { $0 == .responseHeadTooLarge("a header line over 100 KB") }
        #expect(origin.connections == 1)
        #expect(origin.bytesSent < 16 << 20, "\(origin.bytesSent) bytes of one header sent")
    }

    @Test func aTrickledBodyReconnectsThenFailsAsTooSlowWithoutSpinning() async throws {
        var configuration = FetcherConfiguration.forTests
        configuration.stallTimeout = 10  // a byte a second never stalls
        configuration.minimumRate = 1024
        configuration.slowWindow = 1
        configuration.maxSlowAttempts = 2
        let fetcher = Fetcher(configuration: configuration)
        let origin = try FaultOrigin()
        origin.serve(
            OriginResource(patternedBody(100_000), etag: "\"v1\""), at: "/a.mp3",
            faults: OriginFaults(bytesPerSecond: 1))
        let started = Date()
        let recorder = fetcher.record(RangeRequest(url: origin.url(for: "/a.mp3")))
        // The fetcher thread's own CPU time: the process's counts every test running beside this one.
        var threadCPU: Double?
        _ = await eventually(timeout: 2, interval: 0.001) {
            threadCPU = fetcher.threadCPUSeconds
            return threadCPU != nil
        }
        let cpuBefore = try #require(threadCPU)
        expectFailure(recorder) { error in
            guard case .tooSlow(let rate, 1024) = error else { return false }
            return rate < 10
        }
        let wall = Date().timeIntervalSince(started)
        let cpu = try #require(fetcher.threadCPUSeconds) - cpuBefore
        #expect(wall >= 2 && wall < 6, "failed after \(wall) s")
        #expect(cpu < wall / 4, "\(cpu) s of CPU in \(wall) s: the wait spins")
        let slow = recorder.statuses.filter { if case .tooSlow = $0 { true } else { false } }
        #expect(slow.count == 2)
        #expect(recorder.statuses.contains { if case .reconnecting = $0 { true } else { false } })
        #expect(try origin.settledRequests().count == 2)
        if case .failed(let error)? = recorder.end {
            #expect(error.description.hasPrefix("the server is too slow: "))
            #expect(error.description.hasSuffix("bytes/s, below the 1024 bytes/s needed to play"))
        }
    }
}
