import Basics
import FoundationEssentials

/// Where an effective value came from.
public enum ConfigSource: Sendable, Hashable, CustomStringConvertible {
    /// Nothing set it.
    case defaultValue
    /// A line of the configuration file.
    case file(path: String, line: Int)
    /// An environment variable.
    case environment(String)
    /// A command-line flag.
    case flag(String)

    /// `default`, `/path/config:3`, `environment SPOOL_LOG`, `flag --audio-sink`.
    public var description: String {
        switch self {
        case .defaultValue: "default"
        case .file(let path, let line): "\(path):\(line)"
        case .environment(let name): "environment \(name)"
        case .flag(let flag): "flag \(flag)"
        }
    }
}

/// Every setting's effective value and where it came from. Later sources win:
/// defaults, then the file, then `SPOOL_*` environment variables, then flags.
///
/// The daemon reads what it needs through the typed properties; the layers
/// that come later (cache, preload, resume) take their settings from here.
public struct Configuration: Sendable {
    private struct Entry: Sendable {
        let value: any ConfigValue
        let source: ConfigSource
    }

    /// Values that did not come from the defaults, by key name.
    private var entries: [String: Entry] = [:]
    /// The configuration file consulted, whether or not it exists.
    public private(set) var filePath: String?
    /// Whether that file exists (and was read).
    public private(set) var fileFound = false
    /// Things worth telling the user that do not stop Spool, e.g. a misspelt
    /// `SPOOL_*` variable, which is otherwise ignored.
    public private(set) var warnings: [String] = []

    /// Every setting at its default.
    public init() {}

    /// The effective value of `key`.
    public subscript<Value>(key: ConfigKey<Value>) -> Value {
        entries[key.name]?.value as? Value ?? key.defaultValue
    }

    /// Where the effective value of the setting named `key.name` came from.
    public func source(of key: AnyConfigKey) -> ConfigSource { entries[key.name]?.source ?? .defaultValue }

    /// The effective value of `key` as it would be written in the file.
    public func text(of key: AnyConfigKey) -> String { (entries[key.name]?.value ?? key.defaultValue).configText }

    /// Sets `key` from `text`, remembering `source`; throws the value's problem.
    mutating func set(_ key: AnyConfigKey, text: String, source: ConfigSource) throws(ConfigValueError) {
        entries[key.name] = Entry(value: try key.parse(text), source: source)
    }

    // MARK: Typed settings

    /// Largest size of the audio cache.
    public var cacheBudget: ByteCount { self[ConfigKeys.cacheBudget] }
    /// Free space the cache leaves on its filesystem.
    public var cacheFreeSpaceFloor: FreeSpaceFloor { self[ConfigKeys.cacheFreeSpaceFloor] }
    /// Query parameters left out of the cache key (`X-Amz-*` matches a prefix).
    public var cacheIgnoredQueryParameters: [String] { self[ConfigKeys.cacheIgnoredQueryParameters] }
    /// The namespace of the cache, resume positions and session.
    public var account: String { self[ConfigKeys.account] }
    /// How many upcoming tracks are fetched ahead.
    public var preloadCount: Int { self[ConfigKeys.preloadCount] }
    /// Most bytes fetched ahead for upcoming tracks.
    public var preloadBudget: ByteCount { self[ConfigKeys.preloadBudget] }
    /// How long before the current track ends the next ones start loading.
    public var preloadTrigger: Duration { self[ConfigKeys.preloadTrigger] }
    /// How many upcoming tracks are fetched at once.
    public var preloadConcurrency: Int { self[ConfigKeys.preloadConcurrency] }
    /// Files at least this large are fetched a window ahead instead of whole.
    public var readAheadLargeFileThreshold: ByteCount { self[ConfigKeys.readAheadLargeFileThreshold] }
    /// How far ahead of the playhead a large file is fetched.
    public var readAheadWindow: ByteCount { self[ConfigKeys.readAheadWindow] }
    /// How much audio ahead of the playhead any file is fetched on a metered network.
    public var readAheadMeteredWindow: Duration { self[ConfigKeys.readAheadMeteredWindow] }
    /// Whether the network counts as metered: auto (NetworkManager decides), yes or no.
    public var networkMetered: MeteredSetting { self[ConfigKeys.networkMetered] }
    /// On a metered network, no HLS variant above this bit rate is chosen (the lowest when none fits).
    public var networkMeteredQuality: BitRate { self[ConfigKeys.networkMeteredQuality] }
    /// A track stopped earlier than this starts from the beginning next time.
    public var resumeMinimum: Duration { self[ConfigKeys.resumeMinimum] }
    /// A track stopped this close to its end counts as finished.
    public var resumeEndMargin: Duration { self[ConfigKeys.resumeEndMargin] }
    /// Resuming starts this much before the remembered position.
    public var resumeRewind: Duration { self[ConfigKeys.resumeRewind] }
    /// How long a cached file is trusted before it is revalidated.
    public var revalidateInterval: Duration { self[ConfigKeys.revalidateInterval] }
    /// How long opening a cached file waits for the answer of its check.
    public var revalidateWait: Duration { self[ConfigKeys.revalidateWait] }
    /// How long paused or stopped before the engine lets go of its pipeline; nil: never.
    public var idleRelease: Duration? {
        let delay = self[ConfigKeys.idleRelease]
        return delay > .zero ? delay : nil
    }
    /// The gst-launch description of the audio output; nil picks the desktop's sound server.
    public var audioSink: String? {
        let description = self[ConfigKeys.audioSink]
        return description.isEmpty ? nil : description
    }
    /// What the sound server's requests to make way for another stream do.
    public var audioInterruptions: InterruptionHandling { self[ConfigKeys.audioInterruptions] }
    /// Whether track changes show a desktop notification.
    public var notify: Bool { self[ConfigKeys.notify] }
    /// The lowest level of log lines written.
    public var logLevel: LogLevel { self[ConfigKeys.logLevel] }
}

// MARK: Resolving

extension Configuration {
    /// Reads the file at `ConfigFile.defaultPath(environment:)` if it exists,
    /// then applies the environment and the command-line `arguments` (the
    /// words after the subcommand: `--cache-budget 1GiB`, `--log-level=debug`).
    public static func load(arguments: [String], environment: [String: String]) throws(ConfigError) -> Configuration {
        let path = ConfigFile.defaultPath(environment: environment)
        var configuration = try resolve(file: ConfigFile.read(at: path), environment: environment, arguments: arguments)
        configuration.filePath = path
        return configuration
    }

    /// Applies a parsed file (if any), then the environment, then `arguments`, over the defaults.
    public static func resolve(
        file: ConfigFile?, environment: [String: String], arguments: [String]
    ) throws(ConfigError) -> Configuration {
        var configuration = Configuration()
        if let file {
            configuration.filePath = file.path
            configuration.fileFound = true
            try configuration.apply(file)
        }
        try configuration.applyEnvironment(environment)
        for (key, flag, value) in try parseFlags(arguments) {
            do {
                try configuration.set(key, text: value, source: .flag(flag))
            } catch {
                throw ConfigError(.badValue, at: flag, error.description)
            }
        }
        return configuration
    }

    private mutating func apply(_ file: ConfigFile) throws(ConfigError) {
        for assignment in file.assignments {
            let location = "\(file.path):\(assignment.line)"
            guard let key = ConfigKeys.named(assignment.key) else {
                let hint = didYouMean(assignment.key, among: ConfigKeys.all.map(\.name))
                throw ConfigError(.unknownKey, at: location, "unknown key '\(assignment.key)'\(hint)")
            }
            do {
                try set(key, text: assignment.value, source: .file(path: file.path, line: assignment.line))
            } catch {
                throw ConfigError(.badValue, at: location, "\(key.name): \(error.description)")
            }
        }
    }

    /// Sets each key from the first of its variables that is set and not empty;
    /// warns about `SPOOL_*` variables that look like a misspelt setting.
    private mutating func applyEnvironment(_ environment: [String: String]) throws(ConfigError) {
        for key in ConfigKeys.all {
            guard let variable = key.environmentVariables.first(where: { environment[$0]?.isEmpty == false }),
                let text = environment[variable]
            else { continue }
            do {
                try set(key, text: text, source: .environment(variable))
            } catch {
                throw ConfigError(.badValue, at: variable, "\(key.name): \(error.description)")
            }
        }
        let known = ConfigKeys.all.flatMap(\.environmentVariables)
        for variable in environment.keys.sorted() where variable.hasPrefix("SPOOL_") && !known.contains(variable) {
            if let meant = suggestion(for: variable, among: known) {
                warnings.append("\(variable) is not a Spool setting and is ignored; did you mean \(meant)?")
            }
        }
    }

    /// Splits `--flag value` and `--flag=value` pairs, in order.
    private static func parseFlags(
        _ arguments: [String]
    ) throws(ConfigError) -> [(key: AnyConfigKey, flag: String, value: String)] {
        var result: [(key: AnyConfigKey, flag: String, value: String)] = []
        var rest = arguments[...]
        while let word = rest.popFirst() {
            guard word.hasPrefix("--") else {
                throw ConfigError(.unexpectedArgument, at: nil, "unexpected argument '\(word)'; see 'spool --help'")
            }
            let parts = word.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let flag = String(parts[0])
            guard let key = ConfigKeys.all.first(where: { $0.flag == flag }) else {
                let hint = didYouMean(flag, among: ConfigKeys.all.map(\.flag))
                let advice = hint.isEmpty ? "; see 'spool --help'" : hint
                throw ConfigError(.unknownOption, at: nil, "unknown option '\(flag)'\(advice)")
            }
            if parts.count == 2 {
                result.append((key, flag, String(parts[1])))
            } else if let value = rest.popFirst() {
                result.append((key, flag, value))
            } else {
                throw ConfigError(.missingValue, at: flag, "needs a value (\(key.placeholder))")
            }
        }
        return result
    }
}

// MARK: Listing

extension Configuration {
    /// Every effective setting as a configuration file, each line followed by
    /// where the value came from; reading it back gives the same values.
    public func listing() -> String {
        let lines = ConfigKeys.all.map { key in ("\(key.name) = \(ConfigFile.quoted(text(of: key)))", source(of: key)) }
        let width = min(lines.map(\.0.count).max() ?? 0, 56)
        var output = "# Spool's effective configuration: each value, then where it came from.\n"
        if let filePath {
            output += "# File: \(filePath)\(fileFound ? "" : " (not found; defaults apply)")\n"
        }
        for (line, source) in lines {
            output += line + String(repeating: " ", count: max(0, width - line.count)) + "  # \(source)\n"
        }
        return output
    }
}
