import Foundation

/// Debian's nginx serving a directory on a free 127.0.0.1 port, with its config, pid file,
/// logs and temp paths in its own temporary directory. Static files get Range, ETag,
/// Last-Modified and 304 handling; gzip is off. The process ends by itself after
/// `lifetime` seconds even if the test process dies.
public final class NginxServer: Sendable {
    /// The port nginx listens on.
    public let port: UInt16
    /// `http://127.0.0.1:port/`.
    public let baseURL: URL
    /// The directory being served.
    public let root: URL
    private let workspace: TemporaryDirectory
    private let process: ChildProcess
    private var accessLogURL: URL { workspace.file("access.log") }

    /// Starts nginx serving `root` and returns once it answers HTTP requests.
    /// Retries on a fresh port when the chosen one was taken in the meantime.
    public init(serving root: URL, lifetime: Int = 600) throws {
        self.root = root
        let workspace = try TemporaryDirectory(prefix: "spool-nginx")
        self.workspace = workspace
        var lastError: Error = RigError("nginx did not start")
        for _ in 0..<5 {
            do {
                let port = try freeLoopbackPort()
                let process = try Self.start(root: root, port: port, workspace: workspace, lifetime: lifetime)
                self.port = port
                self.process = process
                baseURL = URL(string: "http://127.0.0.1:\(port)/")!
                return
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// The URL of `filename` (a path relative to the served directory).
    public func url(for filename: String) -> URL {
        baseURL.appendingPathComponent(filename)
    }

    /// The parsed access log so far, oldest first.
    public func accessLog() -> [ServedRequest] {
        let text = (try? String(contentsOf: accessLogURL, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap(Self.parse)
    }

    /// The access log once it holds at least `count` entries (nginx writes a line after the
    /// response is sent, so it may lag the client by a moment); throws after `timeout` seconds.
    public func accessLog(atLeast count: Int, timeout: Double = 5) async throws -> [ServedRequest] {
        try await awaitLogEntries(of: "nginx", atLeast: count, timeout: timeout) { accessLog() }
    }

    /// Stops nginx (also done when the server is released).
    public func stop() {
        process.stop(grace: 2)
    }

    deinit { stop() }

    /// Answered by nginx itself and kept out of the access log, for the start-up probe.
    private static let readinessPath = "__spool_ready"

    private static func start(root: URL, port: UInt16, workspace: TemporaryDirectory, lifetime: Int) throws
        -> ChildProcess
    {
        let dir = workspace.path
        let config = """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(dir)/nginx.pid;
            error_log \(dir)/error.log warn;
            events { worker_connections 64; }
            http {
                include /etc/nginx/mime.types;
                types { audio/flac flac; audio/ogg opus; audio/mp4 m4a; audio/wav wav; }
                default_type application/octet-stream;
                log_format spool escape=json '$request_method\\t$request_uri\\t$http_range\\t$http_if_range\\t$http_if_none_match\\t$http_if_modified_since\\t$status\\t$body_bytes_sent';
                access_log \(dir)/access.log spool;
                client_body_temp_path \(dir)/client_body;
                proxy_temp_path \(dir)/proxy;
                fastcgi_temp_path \(dir)/fastcgi;
                uwsgi_temp_path \(dir)/uwsgi;
                scgi_temp_path \(dir)/scgi;
                sendfile on;
                etag on;
                gzip off;
                server_tokens off;
                server {
                    listen 127.0.0.1:\(port);
                    root \(root.path);
                    location / { }
                    location = /\(readinessPath) { access_log off; return 204; }
                }
            }
            """
        let configURL = workspace.file("nginx.conf")
        try config.write(to: configURL, atomically: true, encoding: .utf8)
        let process = try ChildProcess(
            "nginx", ["-p", dir, "-c", configURL.path, "-e", "\(dir)/error.log"],
            logDirectory: workspace.url, selfStopAfter: lifetime)
        var exited = false
        let ready = eventuallyBlocking(timeout: 10) {
            exited = !process.isRunning
            return exited || (try? HTTPConnection(port: port, receiveTimeout: 2).request("/\(readinessPath)")) != nil
        }
        guard ready, !exited else {
            process.stop(grace: 1)
            let log = (try? String(contentsOf: workspace.file("error.log"), encoding: .utf8)) ?? ""
            throw RigError("nginx on port \(port) did not start: \(process.standardError) \(log)")
        }
        return process
    }

    /// Parses one `spool`-format line. With `escape=json` nginx writes an absent header as
    /// an empty field and a quote inside a value as `\"`.
    private static func parse(_ line: Substring) -> ServedRequest? {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map {
            $0.replacingOccurrences(of: "\\\"", with: "\"").replacingOccurrences(of: "\\\\", with: "\\")
        }
        guard fields.count == 8, let status = Int(fields[6]), let bytes = Int(fields[7]) else { return nil }
        func optional(_ value: String) -> String? { value.isEmpty ? nil : value }
        return ServedRequest(
            method: fields[0], path: fields[1], range: optional(fields[2]), ifRange: optional(fields[3]),
            ifNoneMatch: optional(fields[4]), ifModifiedSince: optional(fields[5]), status: status, bodyBytesSent: bytes
        )
    }
}
