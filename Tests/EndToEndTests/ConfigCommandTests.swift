import DBusKit
import Foundation
import TestSupport
import Testing

/// A configuration folder for one test: `XDG_CONFIG_HOME` with `spool/config` in it.
final class ConfigHome {
    let directory: TemporaryDirectory
    /// The path of the configuration file.
    var filePath: String { directory.file("spool/config").path }

    init(file: String?) throws {
        directory = try TemporaryDirectory(prefix: "spool-config")
        try FileManager.default.createDirectory(at: directory.file("spool"), withIntermediateDirectories: true)
        try file?.write(toFile: filePath, atomically: true, encoding: .utf8)
    }

    /// The test's environment without `SPOOL_*`, with `XDG_CONFIG_HOME` here, plus `extra`.
    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SPOOL_") }
        environment["XDG_CONFIG_HOME"] = directory.path
        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(directory.path)/no-bus-here"
        return environment.merging(extra) { $1 }
    }

    /// Runs `spool` with `arguments` in this environment.
    func spool(_ arguments: [String], environment extra: [String: String] = [:]) throws -> CommandResult {
        try runCommand(try spoolExecutable(), arguments, environment: environment(extra), timeout: 30)
    }
}

@Suite("spool config and the configuration of spool daemon", .serialized)
struct ConfigCommandTests {
    @Test func spoolConfigPrintsEveryValueWithWhereItCameFrom() throws {
        let home = try ConfigHome(file: "# mine\ncache.budget = 1GiB\naudio.sink = \"fakesink sync=true\"\n")
        let result = try home.spool(
            ["config", "--log-level", "debug"], environment: ["SPOOL_PRELOAD_COUNT": "4"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        func line(_ key: String) -> String { lines.first { $0.hasPrefix(key + " = ") } ?? "(no \(key) line)" }
        #expect(line("cache.budget").hasPrefix("cache.budget = 1GiB "))
        #expect(line("cache.budget").hasSuffix("# \(home.filePath):2"))
        #expect(line("audio.sink").hasSuffix("# \(home.filePath):3"))
        #expect(line("preload.count").hasPrefix("preload.count = 4 "))
        #expect(line("preload.count").hasSuffix("# environment SPOOL_PRELOAD_COUNT"))
        #expect(line("log.level").hasPrefix("log.level = debug "))
        #expect(line("log.level").hasSuffix("# flag --log-level"))
        #expect(line("resume.rewind").hasSuffix("# default"))
        #expect(lines.contains("# File: \(home.filePath)"))
    }

    @Test(arguments: ["config", "daemon"])
    func aBadConfigFileStopsTheCommandWithOneLineNamingTheFileTheLineAndTheKey(command: String) throws {
        let home = try ConfigHome(file: "log.level = info\ncache.budget = lots\n")
        let result = try home.spool([command])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(
            result.stderr
                == "spool: \(home.filePath):2: cache.budget: 'lots' is not a size; write e.g. 2GiB, 500MB or 1048576\n")

        let misspelt = try ConfigHome(file: "preload.cont = 3\n")
        #expect(
            try misspelt.spool([command]).stderr
                == "spool: \(misspelt.filePath):1: unknown key 'preload.cont'; did you mean 'preload.count'?\n")
    }

    @Test(arguments: ["config", "daemon"])
    func badOptionsAndVariablesAreUsageErrors(command: String) throws {
        let home = try ConfigHome(file: nil)
        let unknown = try home.spool([command, "--cache-budgit", "1GiB"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr == "spool: unknown option '--cache-budgit'; did you mean '--cache-budget'?\n")
        let variable = try home.spool([command], environment: ["SPOOL_LOG": "loud"])
        #expect(variable.status == 1)
        #expect(variable.stderr.hasPrefix("spool: SPOOL_LOG: log.level: 'loud' is not a log level"))
        let help = try home.spool([command, "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--cache-budget SIZE"))
    }

    @Test func theHelpListsEveryCommandAndOneFlagPerSetting() throws {
        let home = try ConfigHome(file: nil)
        let help = try home.spool(["--help"])
        #expect(help.status == 0)
        for expected in [
            "  daemon ", "  config ", "  version ", "--audio-sink DESC", "--log-level LEVEL", "$SPOOL_LOG",
            "--cache-free-space-floor SIZE,PERCENT", "--preload-trigger DURATION", "Exit status: 0",
        ] {
            #expect(help.stdout.contains(expected), "missing \(expected)")
        }
        let config = try home.spool(["config"])
        let keys = config.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
            $0.split(separator: " ").first
        }
        #expect(keys.count == 23)
        for key in keys {
            #expect(help.stdout.contains("--\(key.replacingOccurrences(of: ".", with: "-")) "), "no flag for \(key)")
        }
    }

    @Test func theDaemonTakesItsAudioSinkFromTheFile() async throws {
        let daemon = try RunningDaemon(configFile: "audio.sink = no-such-sink-from-the-file\n", standardOptions: false)
        let status = await daemon.process.waitForExit(timeout: 20)
        #expect(status == 2)  // no audio pipeline: a failure at run time
        #expect(daemon.process.standardError.contains("no-such-sink-from-the-file"), "\(daemon.process.standardError)")
    }

    @Test func theDaemonTakesItsLogLevelFromTheFileAndTheFlagBeatsIt() async throws {
        let file = "audio.sink = \"fakesink sync=true\"\nlog.level = warning\n"
        let quiet = try RunningDaemon(configFile: file, standardOptions: false)
        try await quiet.waitUntilReady()
        let loud = try RunningDaemon(
            bus: try PrivateBus(), extraArguments: ["--log-level", "notice"], configFile: file, standardOptions: false)
        try await loud.waitUntilReady()
        for daemon in [quiet, loud] {
            _ = try await daemon.client.call(
                destination: busName, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2",
                method: "Quit")
            #expect(await daemon.process.waitForExit(timeout: 10) == 0)
        }
        #expect(!quiet.process.standardError.contains("NOTICE"), "\(quiet.process.standardError)")
        #expect(loud.process.standardError.contains("NOTICE daemon: Spool"), "\(loud.process.standardError)")
    }
}
