import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("nginx test server", .serialized)
struct NginxTests {
    let files: TemporaryDirectory
    let content: Data

    init() throws {
        files = try TemporaryDirectory(prefix: "spool-www")
        content = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 * 7 + $0 / 256) })
        try content.write(to: files.file("data.bin"))
    }

    @Test func servesAFullFileAndLogsIt() async throws {
        let nginx = try NginxServer(serving: files.url)
        let response = try HTTPConnection(port: nginx.port).request("/data.bin")
        #expect(response.status == 200)
        #expect(response.body == content)
        #expect(response.header("Content-Length") == "50000")
        #expect(response.header("Accept-Ranges") == "bytes")
        #expect(response.header("Last-Modified") != nil)
        let log = try await nginx.accessLog(atLeast: 1)
        #expect(log == [ServedRequest(path: "/data.bin", status: 200, bodyBytesSent: 50_000)])
    }

    @Test func answersARangeWith206() async throws {
        let nginx = try NginxServer(serving: files.url)
        let response = try HTTPConnection(port: nginx.port).request("/data.bin", headers: ["Range": "bytes=1000-1999"])
        #expect(response.status == 206)
        #expect(response.header("Content-Range") == "bytes 1000-1999/50000")
        #expect(response.body == content[1000...1999])
        let log = try await nginx.accessLog(atLeast: 1)
        #expect(log.first?.range == "bytes=1000-1999")
        #expect(log.first?.status == 206)
        #expect(log.first?.bodyBytesSent == 1000)
    }

    @Test func answersConditionalRequestsWith304() async throws {
        let nginx = try NginxServer(serving: files.url)
        let connection = try HTTPConnection(port: nginx.port)
        let head = try connection.request("/data.bin", method: "HEAD")
        let etag = try #require(head.header("ETag"))
        let lastModified = try #require(head.header("Last-Modified"))
        let byTag = try connection.request("/data.bin", headers: ["If-None-Match": etag])
        #expect(byTag.status == 304)
        #expect(byTag.body.isEmpty)
        #expect(try connection.request("/data.bin", headers: ["If-Modified-Since": lastModified]).status == 304)
        let log = try await nginx.accessLog(atLeast: 3)
        #expect(log.map(\.status) == [200, 304, 304])
        #expect(log.map(\.ifNoneMatch) == [nil, etag, nil])
        #expect(log.map(\.ifModifiedSince) == [nil, nil, lastModified])
    }

    @Test func worksWithURLSession() async throws {
        let nginx = try NginxServer(serving: files.url)
        var request = URLRequest(url: nginx.url(for: "data.bin"))
        request.setValue("bytes=-10", forHTTPHeaderField: "Range")
        let (data, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 206)
        #expect(data == content.suffix(10))
    }

    @Test func stopEndsTheServer() throws {
        let nginx = try NginxServer(serving: files.url)
        let port = nginx.port
        nginx.stop()
        #expect(throws: (any Error).self) { try HTTPConnection(port: port) }
    }
}
