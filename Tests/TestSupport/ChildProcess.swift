import Foundation
import Synchronization

/// Errors raised by the test rig when a helper process or server misbehaves.
public struct RigError: Error, CustomStringConvertible {
    /// What went wrong, for the test failure message.
    public let description: String
    /// Creates an error with a human-readable message.
    public init(_ description: String) { self.description = description }
}

/// A directory under the system temp folder that is removed when the value is
/// released. Every test server and child process keeps its files in one.
public final class TemporaryDirectory: Sendable {
    /// The directory's location.
    public let url: URL
    /// The directory's path, for command lines.
    public var path: String { url.path }

    /// Creates a fresh, empty directory whose name starts with `prefix`, in `base` (the
    /// temporary directory when nil).
    public init(prefix: String = "spool-test", in base: URL? = nil) throws {
        let base = base ?? URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
        url = base.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A path inside the directory.
    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Finds an executable by name on `PATH` (plus the sbin folders, where nginx lives).
public func executablePath(_ name: String) throws -> String {
    if name.hasPrefix("/") { return name }
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for dir in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"] {
        let candidate = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    throw RigError("executable '\(name)' not found on PATH")
}

/// A child process started from a test. Its stdout and stderr go to files (no
/// pipe can fill and deadlock), its signal mask is cleared at spawn (Swift
/// Testing's worker threads block SIGTERM, and posix_spawn copies the mask),
/// and a long-lived child can be wrapped in `timeout` so it stops by itself even
/// when the test process is killed.
public final class ChildProcess: @unchecked Sendable {
    // Immutable after init, or only touched through Foundation's thread-safe Process API.
    private let process = Process()
    private let exited = DispatchSemaphore(value: 0)
    /// File receiving the child's standard output.
    public let stdoutURL: URL
    /// File receiving the child's standard error.
    public let stderrURL: URL
    /// The command line, for failure messages.
    public let commandLine: String
    /// Whether the program runs under `timeout`.
    private let wrapped: Bool
    /// The name its stderr is kept under for triage (``keepLog(as:)``).
    private let keptAs = Mutex<String?>(nil)

    /// Starts `executable` with `arguments`.
    /// - Parameters:
    ///   - environment: the child's whole environment; nil inherits the test's.
    ///   - logDirectory: where stdout/stderr files go.
    ///   - selfStopAfter: when set, the child runs under `timeout`, which ends it
    ///     after that many seconds whatever happens to the test process.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        logDirectory: URL, selfStopAfter: Int? = nil
    ) throws {
        let resolved = try executablePath(executable)
        let name = URL(fileURLWithPath: resolved).lastPathComponent
        let tag = "\(name)-\(UUID().uuidString.prefix(6))"
        stdoutURL = logDirectory.appendingPathComponent("\(tag).out")
        stderrURL = logDirectory.appendingPathComponent("\(tag).err")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        commandLine = ([resolved] + arguments).joined(separator: " ")
        wrapped = selfStopAfter != nil

        if let seconds = selfStopAfter {
            process.executableURL = URL(fileURLWithPath: try executablePath("timeout"))
            process.arguments = ["--kill-after=5", String(seconds), resolved] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: resolved)
            process.arguments = arguments
        }
        process.environment = environment ?? ProcessInfo.processInfo.environment
        process.standardInput = FileHandle.nullDevice
        let output = try FileHandle(forWritingTo: stdoutURL)
        let errors = try FileHandle(forWritingTo: stderrURL)
        // The child writes through its own copies: the test process's are closed once it runs.
        // Left to Foundation they stayed open as long as it kept the Process, two descriptors per
        // child; over a parallel run they passed 1,300, where Foundation's Process.run, listing
        // /proc/self/fd for a later child, crashed the test process (SIGSEGV in memcpy).
        defer {
            try? output.close()
            try? errors.close()
        }
        process.standardOutput = output
        process.standardError = errors
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }

        var empty = sigset_t()
        var previous = sigset_t()
        sigemptyset(&empty)
        pthread_sigmask(SIG_SETMASK, &empty, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        try process.run()
    }

    /// The child's process id.
    public var pid: Int32 { process.processIdentifier }

    /// Whether the child is still running.
    public var isRunning: Bool { process.isRunning }

    /// Waits for the child to exit; returns its status, or nil on timeout.
    @discardableResult
    public func waitForExit(timeout: Double) async -> Int32? {
        await onOwnThread { self.blockUntilExit(timeout: timeout) }
    }

    /// ``waitForExit(timeout:)`` for code that cannot await; it blocks its thread.
    @discardableResult
    public func blockUntilExit(timeout: Double) -> Int32? {
        guard exited.wait(timeout: .now() + timeout) == .success else { return nil }
        exited.signal()  // later waiters see the exit too
        return process.terminationStatus
    }

    /// Sends `signal` to the child. When the child runs under `timeout`, a SIGKILL
    /// (which `timeout` cannot forward) goes to the program itself, so a test can
    /// really kill -9 it.
    public func send(_ signal: Int32) {
        guard process.isRunning else { return }
        if signal == SIGKILL, wrapped, let program = programPID {
            kill(program, SIGKILL)
        }
        kill(process.processIdentifier, signal)
    }

    /// The program's own process id: the child of `timeout` when wrapped.
    public var programPID: Int32? {
        guard wrapped else { return pid }
        let path = "/proc/\(pid)/task/\(pid)/children"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.flatMap { Int32($0) }
    }

    /// Stops the child: SIGTERM, then SIGKILL if it has not exited within `grace` seconds.
    /// Returns the exit status.
    @discardableResult
    public func stop(grace: Double = 5) -> Int32 {
        defer { saveKeptLog() }
        send(SIGTERM)
        if let status = blockUntilExit(timeout: grace) { return status }
        send(SIGKILL)
        return blockUntilExit(timeout: 10) ?? -1
    }

    /// What the child wrote to stdout so far.
    public var standardOutput: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    /// What the child wrote to stderr so far.
    public var standardError: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Keeps the child's stderr, once it is gone, as `NAME.PID.log` in the folder that
    /// `SPOOL_TEST_LOGS` names (`scripts/run-tests.sh` sets it, and prints the tails of a
    /// failed test's logs at the end of the run, which is all of it that CI keeps).
    public func keepLog(as name: String) {
        keptAs.withLock { $0 = name }
    }

    /// Copies stderr where ``keepLog(as:)`` asked, once; done by ``stop(grace:)`` and deinit.
    private func saveKeptLog() {
        guard
            let name = keptAs.withLock({ name in
                defer { name = nil }
                return name
            }),
            let folder = ProcessInfo.processInfo.environment["SPOOL_TEST_LOGS"], !folder.isEmpty
        else { return }
        let kept = URL(fileURLWithPath: folder).appendingPathComponent("\(name).\(pid).log")
        try? FileManager.default.createDirectory(
            at: kept.deletingLastPathComponent(), withIntermediateDirectories: true)
        try? FileManager.default.copyItem(at: stderrURL, to: kept)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        saveKeptLog()
    }
}

/// The result of a command run to completion.
public struct CommandResult: Sendable {
    /// Exit status (or -1 when it had to be killed).
    public let status: Int32
    /// Everything written to stdout.
    public let stdout: String
    /// Everything written to stderr.
    public let stderr: String
}

/// ``runCommand(_:_:environment:timeout:)`` waiting on a thread of its own, for a test that
/// awaits, so the wait holds none of the executor's threads.
public func runCommandAwaiting(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
    timeout: Double = 60
) async throws -> CommandResult {
    try await onOwnThread {
        Result { try runCommand(executable, arguments, environment: environment, timeout: timeout) }
    }.get()
}

/// Runs a command to completion (killing it after `timeout` seconds) and returns its output.
public func runCommand(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
    timeout: Double = 60
) throws -> CommandResult {
    let logs = try TemporaryDirectory(prefix: "spool-cmd")
    let child = try ChildProcess(executable, arguments, environment: environment, logDirectory: logs.url)
    let status: Int32
    if let finished = child.blockUntilExit(timeout: timeout) {
        status = finished
    } else {
        child.stop(grace: 1)
        throw RigError("\(child.commandLine) did not finish within \(timeout) s; stderr: \(child.standardError)")
    }
    return CommandResult(status: status, stdout: child.standardOutput, stderr: child.standardError)
}

/// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, close).
/// For servers like nginx that cannot report the port they picked; callers retry on a clash.
public func freeLoopbackPort() throws -> UInt16 {
    let fd = try Sockets.tcp()
    defer { close(fd) }
    try Sockets.bindLoopback(fd, port: 0)
    return try Sockets.boundPort(fd)
}
