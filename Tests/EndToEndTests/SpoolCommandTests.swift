import DBusKit
import Foundation
import TestSupport
import Testing

extension RunningDaemon {
    /// Runs `spool ARGUMENTS` against this daemon's bus, from `directory` when given.
    func spool(_ arguments: String..., in directory: URL? = nil, environment extra: [String: String] = [:]) throws
        -> CommandResult
    {
        try runSpool(arguments, environment: bus.environment.merging(extra) { _, new in new }, in: directory)
    }

    /// Polls `spool ARGUMENTS` until its stdout satisfies `accept`; returns the last output.
    /// `on` names another instance's bus name (SPOOL_BUS_NAME).
    func waitForSpool(_ arguments: String..., on name: String? = nil, timeout: Double = 10, _ accept: (String) -> Bool)
        async throws -> String
    {
        var last = ""
        let environment = bus.environment.merging(name.map { ["SPOOL_BUS_NAME": $0] } ?? [:]) { _, new in new }
        let reached = try await eventually(timeout: timeout, interval: 0.05) {
            last = try runSpool(arguments, environment: environment, in: nil).stdout
            return accept(last)
        }
        if !reached {
            throw RigError(
                "spool \(arguments.joined(separator: " ")) stayed '\(last)'; daemon log:\n\(process.standardError)")
        }
        return last
    }

    /// Reads one property of `org.spool.Spool1`.
    func spoolProperty(_ name: String) async throws -> DBusValue? {
        try await client.call(
            destination: busName, path: "/org/mpris/MediaPlayer2", interface: "org.freedesktop.DBus.Properties",
            method: "Get", arguments: [.string("org.spool.Spool1"), .string(name)]
        ).first?.variantValue
    }
}

/// A ready daemon, nginx serving the fixtures, and the fixture of `format` (to fetch from nginx).
func daemonWithNginx(serving format: FixtureFormat) async throws -> (RunningDaemon, NginxServer, Fixture) {
    let fixtures = try Fixtures.shared()
    let server = try NginxServer(serving: fixtures.directory)
    let daemon = try RunningDaemon()
    try await daemon.waitUntilReady()
    return (daemon, server, fixtures.fixture(format))
}

/// Runs the built `spool` with `environment` (in `directory` through a shell when given).
func runSpool(_ arguments: [String], environment: [String: String], in directory: URL? = nil) throws -> CommandResult {
    let spool = try spoolExecutable()
    guard let directory else { return try runCommand(spool, arguments, environment: environment, timeout: 30) }
    let quoted = ([spool] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
    return try runCommand(
        "/bin/sh", ["-c", "cd '\(directory.path)' && exec " + quoted.joined(separator: " ")], environment: environment,
        timeout: 30)
}

@Suite("The spool command", .serialized)
struct SpoolCommandTests {
    @Test func playbackCommandsDriveTheDaemonAndTheirEffectShowsInPlayerctl() async throws {
        let fixtures = try Fixtures.shared()
        let first = fixtures.fixture(.flac)
        let second = fixtures.fixture(.oggVorbis)
        let third = fixtures.fixture(.mp3CBR)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()

        // Relative paths are taken from the command's current directory.
        let folder = first.url.deletingLastPathComponent()
        let played = try daemon.spool(
            "play", first.url.lastPathComponent, "./" + second.url.lastPathComponent, in: folder)
        #expect(played.status == 0, "\(played.stderr)")
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
        #expect(try daemon.spool("pause").status == 0)
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Paused" }

        let queue = try await daemon.waitForSpool("queue") { $0.hasPrefix("> 1. \(first.title)") }.split(
            separator: "\n"
        ).map(
            String.init)
        #expect(queue.count == 2, "\(queue)")
        #expect(queue.first?.hasPrefix("> 1. \(first.title)") == true, "\(queue)")
        #expect(queue.last?.hasPrefix("  2. ") == true, "\(queue)")
        #expect(queue.allSatisfy { $0.hasSuffix("[local]") }, "\(queue)")
        // The status names the track that follows, by its tags once they are read.
        let status = try await daemon.waitForSpool("status") { $0.contains("next: \(second.title)") }
        #expect(status.contains("next: \(second.title) – \(second.artist)  [local]"), "\(status)")

        #expect(try daemon.spool("add", third.url.path).status == 0)
        _ = try await daemon.waitForSpool("queue") { $0.split(separator: "\n").count == 3 }

        #expect(try daemon.spool("seek", "1.5").status == 0)
        _ = try await daemon.waitForPlayerctl(["position"]) { abs((Double($0) ?? 0) - 1.5) < 0.1 }
        #expect(try daemon.spool("seek", "-1").status == 0)
        _ = try await daemon.waitForPlayerctl(["position"]) { abs((Double($0) ?? 0) - 0.5) < 0.1 }
        #expect(try daemon.spool("seek", "50%").status == 0)
        _ = try await daemon.waitForPlayerctl(["position"]) { abs((Double($0) ?? 0) - first.duration / 2) < 0.2 }
        let pastTheEnd = try daemon.spool("seek", "1h")
        #expect(pastTheEnd.status == 2 && pastTheEnd.stderr.contains("past the end"), "\(pastTheEnd)")

        #expect(try daemon.spool("resume").status == 0)
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
        #expect(try daemon.spool("toggle").status == 0)
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Paused" }

        #expect(try daemon.spool("volume", "40").status == 0)
        _ = try await daemon.waitForPlayerctl(["volume"]) { abs((Double($0) ?? 0) - 0.4) < 0.001 }
        #expect(try daemon.spool("volume").stdout == "40\n")
        #expect(try daemon.spool("rate", "1.5").status == 0)
        _ = try await daemon.waitForSpool("rate") { $0 == "1.5\n" }
        #expect(try daemon.spool("loop", "track").status == 0)
        _ = try await daemon.waitForPlayerctl(["loop"]) { $0 == "Track" }
        #expect(try daemon.spool("loop", "none").status == 0)
        _ = try await daemon.waitForPlayerctl(["loop"]) { $0 == "None" }
        #expect(try daemon.spool("shuffle", "on").status == 0)
        _ = try await daemon.waitForPlayerctl(["shuffle"]) { $0 == "On" }
        #expect(try daemon.spool("shuffle", "off").status == 0)
        _ = try await daemon.waitForPlayerctl(["shuffle"]) { $0 == "Off" }

        #expect(try daemon.spool("resume").status == 0)
        #expect(try daemon.spool("next").status == 0)
        _ = try await daemon.waitForPlayerctl(["metadata", "title"]) { $0 == second.title }
        _ = try await daemon.waitForSpool("queue") { $0.contains("> 2. \(second.title)") }
        // Within its first 3 s, prev goes back a track.
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.2 }
        #expect(try daemon.spool("prev").status == 0)
        _ = try await daemon.waitForPlayerctl(["metadata", "title"]) { $0 == first.title }
        #expect(try daemon.spool("stop").status == 0)
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Stopped" }
    }

    @Test func usageMistakesExitOneWithOneLineAndASuggestion() throws {
        let bus = try PrivateBus()  // no daemon: none of these may need one
        let cases: [(arguments: [String], message: String)] = [
            (["stauts"], "did you mean 'status'?"),
            (["previous"], "did you mean 'prev'?"),
            (["loop", "trak"], "did you mean 'track'?"),
            (["shuffle", "offf"], "did you mean 'off'?"),
            (["cache", "sats"], "did you mean 'stats'?"),
            (["cache", "clear", "--acount", "x"], "did you mean '--account'?"),
            (["status", "--folow"], "did you mean '--follow'?"),
            (["seek", "1:xx"], "is not a position"),
            (["seek"], "takes one position"),
            (["play"], "needs at least one"),
            (["pause", "now"], "takes no arguments"),
            (["cache", "prefetch", "/tmp/a.mp3"], "only http(s) URLs"),
        ]
        for (arguments, message) in cases {
            let result = try runSpool(arguments, environment: bus.environment)
            #expect(result.status == 1, "spool \(arguments): \(result)")
            #expect(
                result.stderr.hasPrefix("spool: ") && result.stderr.contains(message),
                "spool \(arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
        for command in ["play", "seek", "volume", "status", "cache", "queue"] {
            let help = try runSpool([command, "--help"], environment: bus.environment)
            #expect(help.status == 0 && help.stdout.hasPrefix("Usage: spool \(command)"), "\(help)")
            #expect(try runSpool(["help", command], environment: bus.environment).stdout == help.stdout)
        }
        let overview = try runSpool(["--help"], environment: bus.environment)
        for command in [
            "play", "add", "pause", "resume", "toggle", "stop", "next", "prev", "seek", "volume", "rate", "loop",
            "shuffle", "queue", "status", "cache", "daemon", "config", "version",
        ] {
            #expect(overview.stdout.contains("  \(command)"), "--help does not mention \(command)")
        }
    }

    @Test func withNoDaemonAndNoWayToStartOneCommandsExitTwo() throws {
        let bus = try PrivateBus()  // no activation files
        for arguments in [["pause"], ["status"], ["queue"], ["cache", "stats"], ["volume"]] {
            let result = try runSpool(arguments, environment: bus.environment)
            #expect(result.status == 2, "spool \(arguments): \(result)")
            #expect(result.stderr.contains("not running"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
        var noBus = bus.environment
        noBus["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=/nonexistent/spool-no-bus"
        let result = try runSpool(["pause"], environment: noBus)
        #expect(result.status == 2 && result.stderr.contains("session bus"), "\(result)")
    }

    @Test func aCommandStartsTheDaemonThroughDBusActivation() async throws {
        let activatable = try ActivatableBus()
        defer { withExtendedLifetime(activatable) {} }  // its folders hold the activation file and the daemon's home
        let bus = activatable.bus
        let client = try DBusConnection(address: bus.address)
        defer { client.close() }
        #expect(try await client.nameHasOwner(busName) == false)

        let track = try Fixtures.shared().fixture(.wav)
        let played = try runSpool(["play", track.url.path], environment: bus.environment)
        #expect(played.status == 0, "\(played)")
        #expect(try await client.nameHasOwner(busName))
        var status = ""
        let playing = await eventually(timeout: 10, interval: 0.05) {
            status = (try? runSpool(["status"], environment: bus.environment).stdout) ?? ""
            return status.hasPrefix("Playing: \(track.title)")
        }
        #expect(playing, "\(status)")

        #expect(try runSpool(["quit"], environment: bus.environment).status == 0)
        let owned = try await awaitValue("the daemon's name released") {
            try await client.nameHasOwner(busName)
        } until: {
            !$0
        }
        #expect(!owned, "the daemon did not quit")
    }

    @Test func statusPrintsPlainLinesWhenPipedAndFollowKeepsPrinting() async throws {
        let (daemon, server, track) = try await daemonWithNginx(serving: .oggVorbis)
        let idle = try daemon.spool("status")
        #expect(idle.status == 0 && idle.stdout == "Stopped: nothing queued\n", "\(idle)")

        #expect(try daemon.spool("play", server.url(for: track.fileName).absoluteString).status == 0)
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.3 }
        let status = try daemon.spool("status")
        #expect(status.status == 0)
        let lines = status.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(lines)")
        #expect(lines.first == "Playing: \(track.title) – \(track.artist)", "\(lines)")
        #expect(lines[1].hasPrefix("0:0") && lines[1].contains(" / 0:0"), "\(lines)")
        #expect(lines[1].contains("[#"), "\(lines)")
        #expect(lines.last == "volume 100% · rate 1× · loop none · shuffle off", "\(lines)")
        #expect(!status.stdout.contains("\u{1B}"), "no escape sequences when piped")

        let logs = try TemporaryDirectory(prefix: "spool-follow")
        let follow = try ChildProcess(
            try spoolExecutable(), ["status", "--follow"], environment: daemon.bus.environment, logDirectory: logs.url,
            selfStopAfter: 60)
        defer { follow.stop(grace: 1) }
        #expect(try daemon.spool("pause").status == 0)
        let sawPause = await eventually(timeout: 10) { follow.standardOutput.contains("Paused: \(track.title)") }
        #expect(sawPause, "\(follow.standardOutput)\(follow.standardError)")
        #expect(!follow.standardOutput.contains("\u{1B}"))
        // Once a second even without changes.
        let blocks = follow.standardOutput.components(separatedBy: "Paused: ").count
        let ticked = await eventually(timeout: 5) {
            follow.standardOutput.components(separatedBy: "Paused: ").count > blocks
        }
        #expect(ticked)
    }

    @Test func cacheCommandsListAndClearAPlayedHTTPTrack() async throws {
        let (daemon, server, track) = try await daemonWithNginx(serving: .flac)
        let url = server.url(for: track.fileName).absoluteString

        #expect(try daemon.spool("play", url).status == 0)
        _ = try await daemon.waitForSpool("cache", "ls") { $0.contains("[cached] ") && $0.contains(url) }
        let queue = try daemon.spool("queue").stdout
        #expect(queue.contains("> 1. ") && queue.contains("[cached"), "\(queue)")
        let stats = try daemon.spool("cache", "stats", "--json").stdout
        #expect(stats.contains("\"entries\": 1,"), "\(stats)")
        #expect(stats.contains("\"budget\": 2147483648"), "\(stats)")

        #expect(try daemon.spool("stop").status == 0)
        let other = try daemon.spool("cache", "clear", "--account", "someone-else")
        #expect(other.status == 1 && other.stderr.contains("no such account 'someone-else'"), "\(other)")
        #expect(try daemon.spool("cache", "ls").stdout.contains(url), "clearing another account keeps ours")
        let cleared = try daemon.spool("cache", "clear")
        #expect(cleared.status == 0 && cleared.stdout == "Cleared the cache.\n", "\(cleared)")
        let listed = try daemon.spool("cache", "ls").stdout
        #expect(!listed.contains("[cached]"), "\(listed)")
        #expect(try daemon.spool("cache", "stats", "--json").stdout.contains("\"bytes\": 0,"))
    }

    @Test func prefetchCachesAURLWholeSoPlayingItSendsNoRequest() async throws {
        let (daemon, server, track) = try await daemonWithNginx(serving: .mp3VBR)
        let url = server.url(for: track.fileName).absoluteString
        let prefetched = try daemon.spool("cache", "prefetch", url)
        #expect(prefetched.status == 0, "\(prefetched)")
        #expect(prefetched.stdout.contains("100% \(track.fileName)"), "\(prefetched.stdout)")
        let fetched = server.accessLog().filter { $0.path.hasSuffix(track.fileName) }
        let size = try Data(contentsOf: track.url).count
        #expect(fetched.reduce(0) { $0 + $1.bodyBytesSent } == size)
        #expect(try daemon.spool("cache", "ls").stdout.contains("[cached] "))
        #expect(try await daemon.playerctl("status").stdout == "Stopped\n", "prefetch plays nothing")

        #expect(try daemon.spool("play", url).status == 0)
        _ = try await daemon.waitForPlayerctl(["position"]) { (Double($0) ?? 0) > 0.5 }
        let replay = server.accessLog().filter { $0.path.hasSuffix(track.fileName) }.dropFirst(fetched.count)
        // At most a background revalidation: conditional, answered 304, no body.
        #expect(replay.count <= 1, "\(Array(replay))")
        #expect(replay.allSatisfy { $0.status == 304 && $0.bodyBytesSent == 0 }, "\(Array(replay))")
    }

    @Test func theSpoolInterfaceReportsTheCurrentTracksCacheAndErrors() async throws {
        let (daemon, server, track) = try await daemonWithNginx(serving: .oggVorbis)
        func call(_ method: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
            try await daemon.client.call(
                destination: busName, path: "/org/mpris/MediaPlayer2", interface: "org.spool.Spool1", method: method,
                arguments: arguments)
        }
        #expect(try await daemon.spoolProperty("LastError")?.stringValue == "")
        #expect(try await daemon.spoolProperty("ContentLength")?.int64Value == -1)
        #expect(try await call("Queue").first?.arrayValues?.isEmpty == true)

        let url = server.url(for: track.fileName).absoluteString
        _ = try await call("Play", [.stringArray([url])])
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
        let size = Int64(try Data(contentsOf: track.url).count)
        // Bytes become durable in batches.
        let ranges = try await awaitValue("CachedRanges") {
            try await daemon.spoolProperty("CachedRanges")?.arrayValues ?? []
        } until: {
            !$0.isEmpty
        }
        #expect(ranges.first?.structureFields?.first?.int64Value == 0, "\(ranges)")
        #expect(try await daemon.spoolProperty("ContentLength")?.int64Value == size)
        let entries = try #require(try await call("Queue").first?.arrayValues?.compactMap(\.stringVariantDictValue))
        #expect(entries.count == 1)
        #expect(entries.first?["spool:current"]?.boolValue == true)
        #expect(entries.first?["spool:contentLength"]?.int64Value == size)
        let stats = try #require(try await call("CacheStats").first?.stringVariantDictValue)
        #expect(stats["entries"]?.int64Value == 1)

        await #expect(throws: DBusError.self) {
            _ = try await call("Prefetch", [.stringArray([track.url.absoluteString])])
        }
        await #expect(throws: DBusError.self) { _ = try await call("Play", [.stringArray(["/nonexistent/a.mp3"])]) }

        // A file that is not audio fails, and says why (LastError is signalled).
        let signals = try await daemon.client.subscribe(
            matching:
                "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',arg0='org.spool.Spool1'"
        )
        let signalled = Task {
            for await message in signals {
                if let text = changedProperties(message)["LastError"]?.stringValue, !text.isEmpty { return text }
            }
            return ""
        }
        let junk = try TemporaryDirectory(prefix: "spool-junk")
        try Data("not audio at all".utf8).write(to: junk.file("broken.mp3"))
        _ = try await call("Play", [.stringArray([junk.file("broken.mp3").path])])
        let lastError = try await awaitValue("LastError") {
            try await daemon.spoolProperty("LastError")?.stringValue ?? ""
        } until: {
            !$0.isEmpty
        }
        #expect(lastError.contains("broken.mp3"), "\(lastError)")
        let deadline = Task {
            try await Task.sleep(for: .seconds(10))
            signalled.cancel()  // ends the stream: the test fails instead of hanging
        }
        #expect(await signalled.value == lastError)
        deadline.cancel()
    }

    @Test func aSecondDaemonWithInstanceTakesItsOwnNameAndTheCommandsReachIt() async throws {
        let first = try RunningDaemon()
        try await first.waitUntilReady()
        // The same home: the second instance finds the cache taken and streams without it.
        let second = try RunningDaemon(bus: first.bus, home: first.logs.url, extraArguments: ["--instance"])
        let instanceName = try await awaitValue(
            "a name \(busName).instance…; daemon log:\n\(second.process.standardError)", interval: .milliseconds(10)
        ) {
            let names =
                try await first.client.call(
                    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                    interface: "org.freedesktop.DBus",
                    method: "ListNames"
                ).first?.stringArrayValue ?? []
            return names.first { $0.hasPrefix(busName + ".instance") }
        } until: {
            $0 != nil
        }
        let name = try #require(instanceName, "daemon log:\n\(second.process.standardError)")
        #expect(name == "\(busName).instance\(second.process.programPID ?? -1)")
        #expect(second.process.isRunning && first.process.isRunning)
        // Logged just after the name is taken: wait for the line rather than race it.
        #expect(await eventually(timeout: 5) { second.process.standardError.contains("without the cache") })

        let fixtures = try Fixtures.shared()
        let track = fixtures.fixture(.wav)
        #expect(try first.spool("play", track.url.path, environment: ["SPOOL_BUS_NAME": name]).status == 0)
        _ = try await first.waitForSpool("status", on: name) { $0.hasPrefix("Playing: \(track.title)") }
        #expect(try first.spool("status").stdout == "Stopped: nothing queued\n", "the first daemon was not touched")
    }
}
