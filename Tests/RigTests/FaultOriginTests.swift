import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Distinct bytes, so any misplaced slice shows up.
private func pattern(_ count: Int, seed: Int = 0) -> Data {
    Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8 &+ seed) })
}

/// Seconds `body` took.
private func timed<T>(_ body: () throws -> T) rethrows -> (T, Double) {
    let start = ContinuousClock.now
    let result = try body()
    let elapsed = ContinuousClock.now - start
    return (result, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
}

@Suite("Fault-injecting origin: plain HTTP", .serialized)
struct FaultOriginProtocolTests {
    let origin: FaultOrigin
    let body = pattern(20_000)
    let resource: OriginResource

    init() throws {
        origin = try FaultOrigin()
        resource = OriginResource(body, etag: "\"v1\"", contentType: "audio/mpeg")
        origin.serve(resource, at: "/a.mp3")
    }

    @Test func servesTheFullBodyWithValidators() throws {
        let response = try HTTPConnection(port: origin.port).request("/a.mp3?x=1")
        #expect(response.status == 200)
        #expect(firstDifference(response.body, body) == nil)
        #expect(response.header("Content-Length") == "20000")
        #expect(response.header("Content-Type") == "audio/mpeg")
        #expect(response.header("ETag") == "\"v1\"")
        #expect(response.header("Last-Modified") == "Tue, 14 Nov 2023 22:13:20 GMT")
        #expect(response.header("Accept-Ranges") == "bytes")
        #expect(
            try origin.requests(atLeast: 1) == [ServedRequest(path: "/a.mp3?x=1", status: 200, bodyBytesSent: 20_000)])
    }

    @Test func answersEveryRangeFormOnOneKeptAliveConnection() throws {
        let connection = try HTTPConnection(port: origin.port)
        let cases: [(String, Int, String?, Data)] = [
            ("bytes=100-199", 206, "bytes 100-199/20000", body[100..<200]),
            ("bytes=19990-", 206, "bytes 19990-19999/20000", body[19990...]),
            ("bytes=-5", 206, "bytes 19995-19999/20000", body.suffix(5)),
            ("bytes=19000-30000", 206, "bytes 19000-19999/20000", body[19000...]),
            ("bytes=20000-", 416, "bytes */20000", Data("range not satisfiable\n".utf8)),
            ("bytes=-0", 416, "bytes */20000", Data("range not satisfiable\n".utf8)),
            ("bytes=5-2", 200, nil, body),
            ("items=1-2", 200, nil, body),
        ]
        for (range, status, contentRange, expected) in cases {
            let response = try connection.request("/a.mp3", headers: ["Range": range])
            #expect(response.status == status, "\(range)")
            #expect(response.header("Content-Range") == contentRange, "\(range)")
            #expect(firstDifference(response.body, expected) == nil, "\(range)")
        }
        #expect(origin.acceptedConnections == 1)
        let log = try origin.requests(atLeast: cases.count)
        #expect(log.map(\.range) == cases.map(\.0))
        #expect(log.map(\.status) == cases.map(\.1))
        #expect(log.map(\.bodyBytesSent) == cases.map(\.3.count))
    }

    @Test func honoursIfRange() throws {
        let connection = try HTTPConnection(port: origin.port)
        let current = try connection.request("/a.mp3", headers: ["Range": "bytes=0-9", "If-Range": "\"v1\""])
        #expect(current.status == 206)
        #expect(firstDifference(current.body, body.prefix(10)) == nil)
        let stale = try connection.request("/a.mp3", headers: ["Range": "bytes=0-9", "If-Range": "\"v0\""])
        #expect(stale.status == 200)
        #expect(firstDifference(stale.body, body) == nil)
        let date = HTTPDate.format(resource.lastModified)
        let byDate = try connection.request("/a.mp3", headers: ["Range": "bytes=0-9", "If-Range": date])
        #expect(byDate.status == 206)
        let log = try origin.requests(atLeast: 3)
        #expect(log.map(\.ifRange) == ["\"v1\"", "\"v0\"", date])
    }

    @Test func answersConditionalRequestsWith304() throws {
        let connection = try HTTPConnection(port: origin.port)
        let byTag = try connection.request("/a.mp3", headers: ["If-None-Match": "\"x\", \"v1\""])
        #expect(byTag.status == 304)
        #expect(byTag.body.isEmpty)
        #expect(byTag.header("ETag") == "\"v1\"")
        let otherTag = try connection.request("/a.mp3", headers: ["If-None-Match": "\"v0\""])
        #expect(otherTag.status == 200)
        let date = HTTPDate.format(resource.lastModified)
        #expect(try connection.request("/a.mp3", headers: ["If-Modified-Since": date]).status == 304)
        let earlier = HTTPDate.format(resource.lastModified.addingTimeInterval(-60))
        #expect(try connection.request("/a.mp3", headers: ["If-Modified-Since": earlier]).status == 200)
        let log = try origin.requests(atLeast: 4)
        #expect(log.map(\.status) == [304, 200, 304, 200])
        #expect(log.map(\.ifNoneMatch) == ["\"x\", \"v1\"", "\"v0\"", nil, nil])
        #expect(log.map(\.ifModifiedSince) == [nil, nil, date, earlier])
    }

    @Test func answersHeadAndUnknownPaths() throws {
        let connection = try HTTPConnection(port: origin.port)
        let head = try connection.request("/a.mp3", method: "HEAD")
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == "20000")
        #expect(head.body.isEmpty)
        #expect(try connection.request("/missing").status == 404)
        #expect(try origin.requests(atLeast: 2).map(\.bodyBytesSent) == [0, "not found\n".utf8.count])
    }

    @Test func closesWhenTheClientAsks() throws {
        let connection = try HTTPConnection(port: origin.port)
        let response = try connection.request("/a.mp3", headers: ["Connection": "close"])
        #expect(response.header("Connection") == "close")
        #expect(connection.isClosedByPeer)
    }

    @Test func worksWithURLSession() async throws {
        var request = URLRequest(url: origin.url(for: "/a.mp3"))
        request.setValue("bytes=10-19", forHTTPHeaderField: "Range")
        let (data, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 206)
        #expect(firstDifference(data, body[10..<20]) == nil)
    }

    @Test func resourcesChangeBetweenRequests() throws {
        let connection = try HTTPConnection(port: origin.port)
        let newer = OriginResource(pattern(15_000, seed: 9), etag: "\"v2\"")
        origin.replace("/a.mp3", with: newer)
        let revalidated = try connection.request("/a.mp3", headers: ["If-None-Match": "\"v1\""])
        #expect(revalidated.status == 200)
        #expect(revalidated.header("ETag") == "\"v2\"")
        #expect(revalidated.body == newer.body)
        let resumed = try connection.request("/a.mp3", headers: ["Range": "bytes=100-", "If-Range": "\"v1\""])
        #expect(resumed.status == 200)
        #expect(resumed.body == newer.body)
    }

    @Test func stopClosesTheListenerAndOpenConnections() throws {
        let connection = try HTTPConnection(port: origin.port)
        #expect(try connection.request("/a.mp3").status == 200)
        origin.stop()
        #expect(connection.isClosedByPeer)
        #expect(throws: (any Error).self) { try HTTPConnection(port: origin.port).request("/a.mp3") }
    }

    @Test func stopsByItselfAfterItsLifetime() throws {
        let shortLived = try FaultOrigin(lifetime: 0.3)
        let connection = try HTTPConnection(port: shortLived.port, receiveTimeout: 5)
        #expect(connection.isClosedByPeer, "closed within the connection's 5-s receive deadline")
    }
}

@Suite("Fault-injecting origin: faults", .serialized)
struct FaultOriginFaultTests {
    let origin: FaultOrigin
    let body = pattern(20_000)

    init() throws {
        origin = try FaultOrigin()
    }

    private func serve(_ faults: OriginFaults = OriginFaults()) {
        origin.serve(OriginResource(body, etag: "\"v1\""), at: "/f", faults: faults)
    }

    @Test func delaysTheFirstByte() throws {
        serve(OriginFaults(firstByteLatency: 0.3))
        let (response, elapsed) = try timed { try HTTPConnection(port: origin.port).request("/f") }
        #expect(firstDifference(response.body, body) == nil)
        #expect(elapsed >= 0.29)
    }

    @Test func capsTheBandwidth() throws {
        serve(OriginFaults(bytesPerSecond: 40_000))
        let (response, elapsed) = try timed { try HTTPConnection(port: origin.port).request("/f") }
        #expect(firstDifference(response.body, body) == nil)
        #expect(elapsed >= 0.45)  // 20 kB at 40 kB/s
    }

    @Test func closesAfterSomeBodyBytes() throws {
        serve(OriginFaults(closeAfterBodyBytes: 1_000))
        let connection = try HTTPConnection(port: origin.port)
        let response = try connection.request("/f")
        #expect(response.status == 200)
        #expect(!response.isComplete)
        #expect(firstDifference(response.body, body.prefix(1_000)) == nil)
        #expect(connection.isClosedByPeer)
        #expect(try origin.requests(atLeast: 1).first?.bodyBytesSent == 1_000)
    }

    @Test func failsTheFirstRequestsWithRetryAfter() throws {
        serve(OriginFaults(errorResponses: .init(count: 2, status: 503, retryAfter: 7)))
        let connection = try HTTPConnection(port: origin.port)
        let first = try connection.request("/f")
        #expect(first.status == 503)
        #expect(first.header("Retry-After") == "7")
        #expect(try connection.request("/f").status == 503)
        let third = try connection.request("/f")
        #expect(third.status == 200)
        #expect(firstDifference(third.body, body) == nil)
        origin.setFaults(OriginFaults(errorResponses: .init(count: 1, status: 500)), for: "/f")
        let fourth = try connection.request("/f")
        #expect(fourth.status == 500)
        #expect(fourth.header("Retry-After") == nil)
        #expect(try origin.requests(atLeast: 4).map(\.status) == [503, 503, 200, 500])
    }

    @Test func ignoresRanges() throws {
        serve(OriginFaults(ignoresRange: true))
        let response = try HTTPConnection(port: origin.port).request("/f", headers: ["Range": "bytes=0-9"])
        #expect(response.status == 200)
        #expect(response.header("Accept-Ranges") == nil)
        #expect(response.header("Content-Range") == nil)
        #expect(firstDifference(response.body, body) == nil)
        #expect(try origin.requests(atLeast: 1).first?.range == "bytes=0-9")
    }

    @Test func sendsChunkedBodiesWithoutContentLength() throws {
        serve(OriginFaults(chunked: true))
        let connection = try HTTPConnection(port: origin.port)
        let response = try connection.request("/f")
        #expect(response.header("Transfer-Encoding") == "chunked")
        #expect(response.header("Content-Length") == nil)
        #expect(response.isComplete)
        #expect(firstDifference(response.body, body) == nil)
        let ranged = try connection.request("/f", headers: ["Range": "bytes=5-9"])
        #expect(ranged.status == 206)
        #expect(firstDifference(ranged.body, body[5...9]) == nil)
    }

    @Test func declaresMoreBytesThanItSends() throws {
        serve(OriginFaults(contentLengthError: 100))
        let connection = try HTTPConnection(port: origin.port)
        let response = try connection.request("/f")
        #expect(response.header("Content-Length") == "20100")
        #expect(!response.isComplete)
        #expect(firstDifference(response.body, body) == nil)
        #expect(connection.isClosedByPeer)
    }

    @Test func declaresFewerBytesThanItSends() throws {
        serve(OriginFaults(contentLengthError: -100))
        let connection = try HTTPConnection(port: origin.port)
        let response = try connection.request("/f")
        #expect(response.header("Content-Length") == "19900")
        #expect(response.isComplete)
        #expect(firstDifference(response.body, body.prefix(19_900)) == nil)
        #expect(firstDifference(connection.readToEnd(), body.suffix(100)) == nil)
        #expect(connection.isClosedByPeer)
    }

    @Test func changesTheFileDuringAResponse() throws {
        let newer = OriginResource(pattern(20_000, seed: 77), etag: "\"v2\"")
        serve(OriginFaults(replacement: .init(afterBodyBytes: 5_000, resource: newer)))
        let connection = try HTTPConnection(port: origin.port)
        let response = try connection.request("/f", headers: ["Range": "bytes=1000-"])
        #expect(response.header("ETag") == "\"v1\"")
        #expect(firstDifference(response.body, body[1_000..<6_000] + newer.body[6_000...]) == nil)
        let next = try connection.request("/f")
        #expect(next.header("ETag") == "\"v2\"")
        #expect(next.body == newer.body)
        #expect(origin.resource(at: "/f") == newer)
    }

    @Test func truncatesWhenTheFileShrinksDuringAResponse() throws {
        let shorter = OriginResource(pattern(8_000, seed: 5), etag: "\"v2\"")
        serve(OriginFaults(replacement: .init(afterBodyBytes: 4_000, resource: shorter)))
        let connection = try HTTPConnection(port: origin.port)
        let response = try connection.request("/f")
        #expect(!response.isComplete)
        #expect(firstDifference(response.body, body.prefix(4_000) + shorter.body[4_000...]) == nil)
        #expect(try origin.requests(atLeast: 1).first?.bodyBytesSent == 8_000)
    }

    @Test(arguments: [301, 302, 307])
    func redirects(status: Int) async throws {
        serve()
        origin.redirect("/old", to: "/f", status: status)
        let raw = try HTTPConnection(port: origin.port).request("/old")
        #expect(raw.status == status)
        #expect(raw.header("Location") == origin.url(for: "/f").absoluteString)
        let (data, response) = try await URLSession.shared.data(from: origin.url(for: "/old"))
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(firstDifference(data, body) == nil)
        let log = try origin.requests(atLeast: 3)
        #expect(log.map(\.path) == ["/old", "/old", "/f"])
        #expect(log.map(\.status) == [status, status, 200])
    }

    @Test func stallsForAWhile() throws {
        serve(OriginFaults(stall: .init(afterBodyBytes: 3_000, duration: 0.3)))
        let (response, elapsed) = try timed { try HTTPConnection(port: origin.port).request("/f") }
        #expect(response.isComplete)
        #expect(firstDifference(response.body, body) == nil)
        #expect(elapsed >= 0.29)
    }

    @Test func stallsUntilTheClientLeaves() throws {
        serve(OriginFaults(stall: .init(afterBodyBytes: 3_000)))
        let connection = try HTTPConnection(port: origin.port, receiveTimeout: 0.5)
        let response = try connection.request("/f")
        #expect(!response.isComplete)
        #expect(firstDifference(response.body, body.prefix(3_000)) == nil)
        #expect(origin.requests().isEmpty)  // still stalled
        connection.close()
        #expect(try origin.requests(atLeast: 1).first?.bodyBytesSent == 3_000)
    }

    @Test func survivesAClientThatHangsUpMidBody() throws {
        origin.serve(OriginResource(Data(count: 8_000_000)), at: "/big")
        let connection = try HTTPConnection(port: origin.port)
        try connection.send(raw: "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        connection.close()
        let logged = try origin.requests(atLeast: 1)
        #expect(logged.first?.bodyBytesSent ?? 0 < 8_000_000)
        #expect(try HTTPConnection(port: origin.port).request("/big", headers: ["Range": "bytes=0-0"]).status == 206)
    }
}
