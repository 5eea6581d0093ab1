import DBusKit
import Foundation
import TestSupport
import Testing

/// A `spool daemon` on a private bus, playing into a real-time null sink.
final class RunningDaemon {
    let bus: PrivateBus
    let logs: TemporaryDirectory
    let process: ChildProcess
    let client: DBusConnection

    /// Starts `spool daemon`.
    /// - Parameters:
    ///   - home: holds its XDG cache, state and config folders (a fresh one by
    ///     default; pass the same folder to restart "the same" daemon).
    ///   - configFile: the text of its configuration file, if it has one.
    ///   - standardOptions: false leaves out `--audio-sink "fakesink sync=true"`,
    ///     `SPOOL_LOG=debug` and `SPOOL_LOG_TIME=1` (and any `SPOOL_*` the tests inherit), so
    ///     the file decides.
    ///   - extraEnvironment: variables added last (e.g. a stand-in system bus).
    init(
        bus: PrivateBus? = nil, home: URL? = nil, extraArguments: [String] = [], configFile: String? = nil,
        standardOptions: Bool = true, extraEnvironment: [String: String] = [:]
    ) throws {
        self.bus = try bus ?? PrivateBus()
        logs = try TemporaryDirectory(prefix: "spool-daemon")
        let home = home ?? logs.url
        if let configFile {
            let folder = home.appendingPathComponent("config/spool")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try configFile.write(to: folder.appendingPathComponent("config"), atomically: true, encoding: .utf8)
        }
        var launch = SpoolDaemonLaunch(
            busEnvironment: self.bus.environment, home: home, logDirectory: logs.url, lifetime: 300,
            audioSink: standardOptions ? "fakesink sync=true" : nil, logLevel: standardOptions ? "debug" : nil,
            inheritsSpoolVariables: standardOptions)
        launch.timedLog = standardOptions
        launch.extraArguments = extraArguments
        launch.extraEnvironment = extraEnvironment
        process = try launch.start()
        process.keepLog(as: Test.current?.name ?? "daemon")
        client = try DBusConnection(address: self.bus.address)
    }

    /// Waits until this daemon owns the MPRIS name. The owner's process is checked, not only
    /// that the name has one: a daemon started right after another was killed can find the bus
    /// still holding the name for the dead one's connection for a moment.
    func waitUntilReady() async throws {
        for _ in 0..<500 {
            if try await client.nameHasOwner(busName), let owner = try await ownerProcess(),
                owner == process.pid || parentProcess(of: owner) == process.pid  // under `timeout`
            {
                return
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        let owner = try? await ownerProcess()
        throw RigError(
            "spool daemon never took \(busName) (owner: \(owner.map(String.init) ?? "none"), ours: \(process.pid)); "
                + "its log:\n\(process.standardError)")
    }

    /// The parent of process `pid`, from `/proc/PID/stat` (its fourth field).
    private func parentProcess(of pid: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let afterName = stat.range(of: ")", options: .backwards)
        else { return nil }
        let fields = stat[afterName.upperBound...].split(separator: " ")
        return fields.count > 1 ? Int32(fields[1]) : nil
    }

    /// The process id of the MPRIS name's owner, as the bus knows it; nil when it has none.
    private func ownerProcess() async throws -> Int32? {
        let reply = try? await client.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            method: "GetConnectionUnixProcessID", arguments: [.string(busName)])
        return reply?.first?.uint32Value.map { Int32(bitPattern: $0) }
    }

    /// Runs playerctl against the daemon.
    func playerctl(_ arguments: String...) async throws -> CommandResult {
        try await runCommandAwaiting(
            "playerctl", ["-p", "spool"] + arguments, environment: bus.environment, timeout: 20)
    }

    /// Polls a playerctl query until `accept` holds (it reflects the daemon's state, in another process).
    func waitForPlayerctl(_ arguments: [String], timeout: Double = 10, _ accept: (String) -> Bool) async throws
        -> String
    {
        var last = ""
        let reached = try await eventually(timeout: timeout, interval: 0.05) {
            last = try runCommand("playerctl", ["-p", "spool"] + arguments, environment: bus.environment)
                .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            return accept(last)
        }
        if !reached {
            throw RigError(
                "playerctl \(arguments.joined(separator: " ")) stayed '\(last)'; daemon log:\n\(process.standardError)")
        }
        return last
    }

    deinit {
        client.close()
        process.stop(grace: 5)
    }
}

let busName = "org.mpris.MediaPlayer2.spool"

@Suite("spool daemon end to end", .serialized)
struct DaemonEndToEndTests {
    @Test func playerctlPlaysAnHTTPTrackPausesItAndQuitsTheDaemon() async throws {
        let fixtures = try Fixtures.shared()
        let server = try NginxServer(serving: fixtures.directory)
        let track = fixtures.fixture(.flac)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()

        let opened = try await daemon.playerctl("open", server.url(for: track.fileName).absoluteString)
        #expect(opened.status == 0, "\(opened.stderr)")
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }

        // The position advances while playing.
        let first = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0 }
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > (Double(first) ?? 0) + 0.2 }
        let title = try await daemon.playerctl("metadata", "title").stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(title == track.title)

        #expect(try await daemon.playerctl("pause").status == 0)
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Paused" }
        let pausedAt = try await daemon.playerctl("position").stdout
        let stillPausedAt = try await daemon.playerctl("position").stdout
        #expect(pausedAt == stillPausedAt)

        // Every byte came through Spool's reader: nginx saw range requests for the track.
        let requests = server.accessLog().filter { $0.path.hasSuffix(track.fileName) }
        #expect(!requests.isEmpty)
        #expect(requests.allSatisfy { $0.range != nil && $0.status == 206 }, "\(requests)")

        _ = try await daemon.client.call(
            destination: busName, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2",
            method: "Quit")
        let status = await daemon.process.waitForExit(timeout: 10)
        #expect(status == 0, "daemon log:\n\(daemon.process.standardError)")
        #expect(try await daemon.client.nameHasOwner(busName) == false)
    }

    @Test func playerctlPlaysALocalFile() async throws {
        let fixtures = try Fixtures.shared()
        let track = fixtures.fixture(.mp3CBR)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        #expect(try await daemon.playerctl("open", track.url.absoluteString).status == 0)
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.1 }
        #expect(try await daemon.playerctl("metadata", "artist").stdout.contains(track.artist))
    }

    /// Issue #5: libcurl's global set-up (OpenSSL's, about 2 MiB resident) and the fetcher's
    /// thread wait for the first HTTP transfer, so a daemon that plays local files never
    /// pays for them; the first HTTP track then starts them and plays.
    @Test func theFetcherThreadStartsWithTheFirstHTTPTrackNotBefore() async throws {
        let fixtures = try Fixtures.shared()
        let server = try NginxServer(serving: fixtures.directory)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let pid = try #require(daemon.process.programPID)
        func threadNames() -> [String] {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            return tasks.compactMap { try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/comm", encoding: .utf8) }
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        }
        // Without this the check below could pass on a process whose threads cannot be read.
        #expect(threadNames().contains("spool.engine.bu"), "\(threadNames())")

        let local = fixtures.fixture(.mp3CBR)
        #expect(try await daemon.playerctl("open", local.url.absoluteString).status == 0)
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.1 }
        #expect(!threadNames().contains("spool.fetcher"), "\(threadNames())")

        let remote = fixtures.fixture(.flac)
        #expect(try await daemon.playerctl("open", server.url(for: remote.fileName).absoluteString).status == 0)
        _ = try await daemon.waitForPlayerctl(["metadata", "title"]) { $0 == remote.title }
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.1 }
        #expect(threadNames().contains("spool.fetcher"), "\(threadNames())")
    }

    @Test func aSecondDaemonOnTheSameBusExitsWithAClearMessage() async throws {
        let first = try RunningDaemon()
        try await first.waitUntilReady()
        let second = try RunningDaemon(bus: first.bus)
        let status = await second.process.waitForExit(timeout: 10)
        #expect(status == 2)  // a failure at run time, not a usage error
        #expect(second.process.standardError.contains("already owns \(busName)"))
        #expect(first.process.isRunning)
        #expect(try await first.client.nameHasOwner(busName))
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalStopsTheDaemonCleanlyAndReleasesTheName(signal: Int32) async throws {
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        daemon.process.send(signal)
        #expect(await daemon.process.waitForExit(timeout: 10) == 0, "daemon log:\n\(daemon.process.standardError)")
        #expect(try await daemon.client.nameHasOwner(busName) == false)
    }

    @Test func anIdlePlayerAnswersGetAllAndRefusesABadURI() async throws {
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let reply = try await daemon.client.call(
            destination: busName, path: "/org/mpris/MediaPlayer2", interface: "org.freedesktop.DBus.Properties",
            method: "GetAll", arguments: [.string("org.mpris.MediaPlayer2.Player")])
        let text = "\(reply)"
        #expect(text.contains("Stopped"))
        #expect(text.contains("/org/mpris/MediaPlayer2/TrackList/NoTrack"))
        await #expect(throws: DBusError.self) {
            _ = try await daemon.client.call(
                destination: busName, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2.Player",
                method: "OpenUri", arguments: [.string("gopher://example")])
        }
        #expect(daemon.process.isRunning)
        #expect(
            try await daemon.playerctl("status").stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "Stopped")
    }

    /// The plugins every track's pipeline is built from (the source, the type finder, the
    /// converters, the common parsers) and MP3's decoder, which the pipeline's warm-up decodes,
    /// are loaded once the daemon is up, so the first track does not wait for them; no other
    /// format's decoder is loaded before it is needed, and never libav's.
    @Test func theDaemonLoadsThePipelinesPluginsBeforeTheFirstTrack() async throws {
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let pid = try #require(daemon.process.programPID)
        func mappedPlugins() -> Set<String> {
            // Read to the end: /proc files report no size, and a sized read stops early.
            let data = FileHandle(forReadingAtPath: "/proc/\(pid)/maps").map { $0.readDataToEndOfFile() } ?? Data()
            let maps = String(decoding: data, as: UTF8.self)
            return Set(
                maps.split(separator: "\n").compactMap { line in
                    line.split(separator: "/").last.flatMap {
                        $0.hasPrefix("libgst") && $0.hasSuffix(".so") ? String($0) : nil
                    }
                })
        }
        let wanted: Set = [
            "libgstapp.so", "libgstcoreelements.so", "libgstaudioconvert.so", "libgstaudioparsers.so",
            "libgstid3demux.so", "libgstmpg123.so",
        ]
        #expect(await eventually(timeout: 10) { mappedPlugins().isSuperset(of: wanted) }, "\(mappedPlugins().sorted())")
        #expect(
            mappedPlugins().isDisjoint(with: ["libgstlibav.so", "libgstflac.so", "libgstvorbis.so", "libgstopus.so"]),
            "\(mappedPlugins().sorted())")
    }
}

extension PlayerProcess {
    /// This player, its log kept under the running test's name for the run's failure summary.
    func keepingTestLog() -> PlayerProcess {
        process.keepLog(as: Test.current?.name ?? kind)
        return self
    }
}
