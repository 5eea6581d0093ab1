import Basics
import Foundation
import TestSupport
import Testing

@testable import SpoolConfig

/// Resolves a configuration from file text (at path `/etc/x/config`), an environment and flags.
func resolve(
    file: String? = nil, environment: [String: String] = [:], arguments: [String] = []
) throws(ConfigError) -> Configuration {
    let parsed = try file.map { text throws(ConfigError) in try ConfigFile(parsing: text, path: "/etc/x/config") }
    return try Configuration.resolve(file: parsed, environment: environment, arguments: arguments)
}

@Suite("Resolving the configuration")
struct ConfigurationTests {
    @Test func withNothingSetEverySettingHasItsDefault() throws {
        let configuration = try resolve()
        #expect(configuration.cacheBudget == .gibibytes(2))
        #expect(configuration.cacheFreeSpaceFloor == FreeSpaceFloor(size: .gibibytes(1), percent: 5))
        #expect(
            configuration.cacheIgnoredQueryParameters
                == ["X-Amz-*", "Signature", "Expires", "Key-Pair-Id", "Policy", "token", "sig"])
        #expect(configuration.account == "default")
        #expect(configuration.preloadCount == 2)
        #expect(configuration.preloadBudget == .mebibytes(512))
        #expect(configuration.preloadTrigger == .seconds(60))
        #expect(configuration.readAheadLargeFileThreshold == .mebibytes(256))
        #expect(configuration.readAheadWindow == .mebibytes(32))
        #expect(configuration.readAheadMeteredWindow == .seconds(120))
        #expect(configuration.networkMetered == .auto)
        #expect(configuration.networkMeteredQuality == .kilobits(128))
        #expect(configuration.resumeMinimum == .seconds(5))
        #expect(configuration.resumeEndMargin == .seconds(10))
        #expect(configuration.resumeRewind == .seconds(2))
        #expect(configuration.revalidateInterval == .seconds(3600))
        #expect(configuration.revalidateWait == .milliseconds(300))
        #expect(configuration.audioSink == nil)
        #expect(configuration.logLevel == .info)
        #expect(ConfigKeys.all.allSatisfy { configuration.source(of: $0) == .defaultValue })
        #expect(configuration.warnings.isEmpty)
    }

    @Test func flagsBeatTheEnvironmentWhichBeatsTheFileWhichBeatsTheDefault() throws {
        let configuration = try resolve(
            file: """
                cache.budget = 1GiB
                preload.count = 5
                log.level = warning
                """,
            environment: ["SPOOL_PRELOAD_COUNT": "7", "SPOOL_LOG": "debug", "HOME": "/h"],
            arguments: ["--log-level", "error", "--resume-rewind=3s"])
        #expect(configuration.cacheBudget == .gibibytes(1))
        #expect(configuration.source(of: AnyConfigKey(ConfigKeys.cacheBudget)) == .file(path: "/etc/x/config", line: 1))
        #expect(configuration.preloadCount == 7)
        #expect(configuration.source(of: AnyConfigKey(ConfigKeys.preloadCount)) == .environment("SPOOL_PRELOAD_COUNT"))
        #expect(configuration.logLevel == .error)
        #expect(configuration.source(of: AnyConfigKey(ConfigKeys.logLevel)) == .flag("--log-level"))
        #expect(configuration.resumeRewind == .seconds(3))
        #expect(configuration.source(of: AnyConfigKey(ConfigKeys.resumeRewind)) == .flag("--resume-rewind"))
        #expect(configuration.source(of: AnyConfigKey(ConfigKeys.account)) == .defaultValue)
        #expect(configuration.fileFound)
    }

    @Test func theMeteredQualityComesFromTheFileTheVariableOrTheFlag() throws {
        let fromFile = try resolve(file: "network.metered-quality = 96k")
        #expect(fromFile.networkMeteredQuality == .kilobits(96))
        let fromVariable = try resolve(environment: ["SPOOL_NETWORK_METERED_QUALITY": "0.5M"])
        #expect(fromVariable.networkMeteredQuality == BitRate(bitsPerSecond: 500_000))
        let fromFlag = try resolve(
            file: "network.metered-quality = 96k", arguments: ["--network-metered-quality=64kbps"])
        #expect(fromFlag.networkMeteredQuality == .kilobits(64))
        #expect(fromFlag.text(of: AnyConfigKey(ConfigKeys.networkMeteredQuality)) == "64kbps")
        #expect(
            configError { _ = try resolve(arguments: ["--network-metered-quality", "128KB"]) }?.description
                == "--network-metered-quality: '128KB' is not a bit rate; write e.g. 128k, 96kbps, 0.5M or 128000")
    }

    @Test func theLastOfARepeatedFlagWins() throws {
        let configuration = try resolve(arguments: ["--audio-sink", "a", "--audio-sink", "fakesink sync=true"])
        #expect(configuration.audioSink == "fakesink sync=true")
    }

    @Test func theExistingVariablesKeepWorkingAndEmptyOnesAreUnset() throws {
        let configuration = try resolve(environment: ["SPOOL_AUDIO_SINK": "alsasink", "SPOOL_LOG": "trace"])
        #expect(configuration.audioSink == "alsasink")
        #expect(configuration.logLevel == .trace)
        #expect(configuration.source(of: AnyConfigKey(ConfigKeys.logLevel)) == .environment("SPOOL_LOG"))
        // The regular name wins over the old alias; an empty variable counts as unset.
        let both = try resolve(environment: ["SPOOL_LOG_LEVEL": "error", "SPOOL_LOG": "trace", "SPOOL_AUDIO_SINK": ""])
        #expect(both.logLevel == .error)
        #expect(both.audioSink == nil)
        #expect(both.source(of: AnyConfigKey(ConfigKeys.audioSink)) == .defaultValue)
    }

    @Test func anEmptyAudioSinkInTheFileMeansTheDesktopsSoundServer() throws {
        let configuration = try resolve(file: "audio.sink = \"\"", environment: [:])
        #expect(configuration.audioSink == nil)
        #expect(configuration.source(of: AnyConfigKey(ConfigKeys.audioSink)) == .file(path: "/etc/x/config", line: 1))
    }

    @Test func aMisspeltKeyInTheFileNamesTheFileTheLineAndTheLikelyKey() {
        let error = configError { _ = try resolve(file: "# budget\n\ncache.budgit = 1GiB") }
        #expect(error?.kind == .unknownKey)
        #expect(error?.description == "/etc/x/config:3: unknown key 'cache.budgit'; did you mean 'cache.budget'?")
        #expect(
            configError { _ = try resolve(file: "colour = blue") }?.description
                == "/etc/x/config:1: unknown key 'colour'")
    }

    @Test(arguments: [
        (
            "cache.budget = lots",
            "/etc/x/config:1: cache.budget: 'lots' is not a size; write e.g. 2GiB, 500MB or 1048576"
        ),
        (
            "cache.free-space-floor = 120%",
            "/etc/x/config:1: cache.free-space-floor: '120%' is not a free-space floor; write a size, a percentage or both, e.g. 1GiB, 5%"
        ),
        (
            "preload.count = -1",
            "/etc/x/config:1: preload.count: '-1' is not a count; write a whole number such as 0, 2 or 10"
        ),
        (
            "resume.rewind = soon",
            "/etc/x/config:1: resume.rewind: 'soon' is not a duration; write e.g. 60s, 1m30s, 500ms or 2h"
        ),
        (
            "network.metered-quality = high",
            "/etc/x/config:1: network.metered-quality: 'high' is not a bit rate; write e.g. 128k, 96kbps, 0.5M or 128000"
        ),
        (
            "log.level = loud",
            "/etc/x/config:1: log.level: 'loud' is not a log level; use trace, debug, info, notice, warning, error"
        ),
        (
            "account = ../x",
            "/etc/x/config:1: account: '../x' is not an account name; use letters, digits, '.', '_' and '-', not starting with '.'"
        ),
    ])
    func aBadValueInTheFileNamesTheFileTheLineTheKeyAndWhatWouldBeRight(line: String, message: String) {
        let error = configError { _ = try resolve(file: line) }
        #expect(error?.kind == .badValue)
        #expect(error?.description == message)
    }

    @Test func aBadValueInTheEnvironmentNamesTheVariableAndTheKey() {
        let error = configError { _ = try resolve(environment: ["SPOOL_CACHE_BUDGET": "big"]) }
        #expect(error?.kind == .badValue)
        #expect(
            error?.description
                == "SPOOL_CACHE_BUDGET: cache.budget: 'big' is not a size; write e.g. 2GiB, 500MB or 1048576")
        #expect(
            configError { _ = try resolve(environment: ["SPOOL_LOG": "loud"]) }?.description
                == "SPOOL_LOG: log.level: 'loud' is not a log level; use trace, debug, info, notice, warning, error")
    }

    @Test func aMisspeltVariableIsIgnoredWithAWarningAndUnrelatedOnesSilently() throws {
        let configuration = try resolve(environment: ["SPOOL_CACHE_BUDGIT": "1GiB", "SPOOL_HOME_GROWN_THING": "x"])
        #expect(configuration.cacheBudget == .gibibytes(2))
        #expect(
            configuration.warnings
                == ["SPOOL_CACHE_BUDGIT is not a Spool setting and is ignored; did you mean SPOOL_CACHE_BUDGET?"])
    }

    @Test(arguments: [
        (
            ["--cache-budgit", "1GiB"], ConfigError.Kind.unknownOption,
            "unknown option '--cache-budgit'; did you mean '--cache-budget'?"
        ),
        (["--volume", "1"], .unknownOption, "unknown option '--volume'; see 'spool --help'"),
        (["--cache-budget"], .missingValue, "--cache-budget: needs a value (SIZE)"),
        (["play"], .unexpectedArgument, "unexpected argument 'play'; see 'spool --help'"),
        (["--cache-budget=lots"], .badValue, "--cache-budget: 'lots' is not a size; write e.g. 2GiB, 500MB or 1048576"),
        (
            ["--preload-trigger", "x"], .badValue,
            "--preload-trigger: 'x' is not a duration; write e.g. 60s, 1m30s, 500ms or 2h"
        ),
    ])
    func commandLineMistakesSayWhatIsWrong(arguments: [String], kind: ConfigError.Kind, message: String) {
        let error = configError { _ = try resolve(arguments: arguments) }
        #expect(error?.kind == kind)
        #expect(error?.description == message)
    }

    @Test func everySettingHasAFlagAndAVariableThatSetIt() throws {
        for key in ConfigKeys.all {
            let fromFlag = try resolve(arguments: [key.flag, key.defaultText])
            #expect(fromFlag.source(of: key) == .flag(key.flag))
            let variable = try #require(key.environmentVariables.first)
            let fromEnvironment = try resolve(environment: [variable: key.defaultText.isEmpty ? "x" : key.defaultText])
            #expect(fromEnvironment.source(of: key) == .environment(variable), "\(key.name)")
        }
    }

    @Test func theListingIsAConfigFileThatReadsBackToTheSameValues() throws {
        let configuration = try resolve(
            file: "audio.sink = \"fakesink sync=true\"\ncache.free-space-floor = 3%",
            environment: ["SPOOL_ACCOUNT": "work"], arguments: ["--cache-ignored-query-parameters", "a, b*"])
        let listing = configuration.listing()
        #expect(listing.contains("# File: /etc/x/config\n"))
        let lines = listing.split(separator: "\n").map(String.init)
        #expect(
            lines.contains { $0.hasPrefix("audio.sink = \"fakesink sync=true\"") && $0.hasSuffix("# /etc/x/config:1") })
        #expect(lines.contains { $0.hasPrefix("account = work ") && $0.hasSuffix("# environment SPOOL_ACCOUNT") })
        #expect(
            lines.contains {
                $0.hasPrefix("cache.ignored-query-parameters = \"a, b*\"")
                    && $0.hasSuffix("# flag --cache-ignored-query-parameters")
            })
        #expect(lines.contains { $0.hasPrefix("cache.budget = 2GiB ") && $0.hasSuffix("# default") })

        let reread = try resolve(file: listing)
        for key in ConfigKeys.all {
            #expect(reread.text(of: key) == configuration.text(of: key), "\(key.name)")
        }
    }

    @Test func loadingReadsTheFileUnderXDGConfigHomeAndSaysWhenThereIsNone() throws {
        let home = try TemporaryDirectory(prefix: "spool-config")
        let environment = ["XDG_CONFIG_HOME": home.path]
        let missing = try Configuration.load(arguments: [], environment: environment)
        #expect(missing.filePath == home.path + "/spool/config")
        #expect(!missing.fileFound)
        #expect(missing.listing().contains("(not found; defaults apply)"))

        try FileManager.default.createDirectory(at: home.file("spool"), withIntermediateDirectories: true)
        try "preload.count = 0\n".write(to: home.file("spool/config"), atomically: true, encoding: .utf8)
        let found = try Configuration.load(arguments: [], environment: environment)
        #expect(found.preloadCount == 0)
        #expect(found.fileFound)
        #expect(
            found.source(of: AnyConfigKey(ConfigKeys.preloadCount)) == .file(path: home.path + "/spool/config", line: 1)
        )
    }
}
