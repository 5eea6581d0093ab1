import Basics

/// One setting: its name in the file, its type, its default and what it does.
/// The flag and the environment variable follow from the name:
/// `cache.budget` is `--cache-budget` and `SPOOL_CACHE_BUDGET`.
public struct ConfigKey<Value: ConfigValue>: Sendable {
    /// The name in the file, e.g. `cache.budget`.
    public let name: String
    /// The value when nothing sets it.
    public let defaultValue: Value
    /// One line on what the setting does, for the README and `spool config`.
    public let summary: String
    /// The word for the value in `--help`.
    let placeholder: String
    /// Environment variables read besides the regular one, in order of precedence after it.
    let environmentAliases: [String]
    /// A check beyond the value's syntax; returns the problem, or nil when the value is fine.
    let check: @Sendable (Value) -> String?

    init(
        _ name: String, default defaultValue: Value, _ summary: String, placeholder: String = Value.placeholder,
        environmentAliases: [String] = [], check: @escaping @Sendable (Value) -> String? = { _ in nil }
    ) {
        self.name = name
        self.defaultValue = defaultValue
        self.summary = summary
        self.placeholder = placeholder
        self.environmentAliases = environmentAliases
        self.check = check
    }
}

/// A setting with its type erased, for listing every setting and for reading
/// a value from text whatever its type.
public struct AnyConfigKey: Sendable, Hashable {
    /// The name in the file, e.g. `cache.budget`.
    public let name: String
    /// One line on what the setting does.
    public let summary: String
    /// The word for the value in `--help`, e.g. `SIZE`.
    public let placeholder: String
    /// The default as it would be written in the file.
    public let defaultText: String
    /// The environment variables that set it, the regular one first: `SPOOL_CACHE_BUDGET`.
    public let environmentVariables: [String]
    /// Every value it can take when they are a few words (`auto`, `yes`, `no`), else empty.
    public let choices: [String]
    let defaultValue: any ConfigValue
    let parse: @Sendable (String) throws(ConfigValueError) -> any ConfigValue

    /// Erases the type of `key`.
    public init<Value>(_ key: ConfigKey<Value>) {
        name = key.name
        summary = key.summary
        placeholder = key.placeholder
        defaultText = key.defaultValue.configText
        environmentVariables =
            ["SPOOL_" + key.name.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }]
            + key.environmentAliases
        defaultValue = key.defaultValue
        choices = Value.choices
        parse = { text throws(ConfigValueError) in
            let value = try Value(configText: text)
            if let problem = key.check(value) { throw ConfigValueError(problem) }
            return value
        }
    }

    /// The command-line flag that sets it: `--cache-budget`.
    public var flag: String { "--" + name.replacing(".", with: "-") }

    /// Two keys are the same when their names are.
    public static func == (lhs: AnyConfigKey, rhs: AnyConfigKey) -> Bool { lhs.name == rhs.name }
    /// Hashes the name.
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// Every setting Spool reads. Adding one here is all it takes for the file,
/// the environment, the flags, `spool config` and `spool --help` to know it.
public enum ConfigKeys {
    /// Largest size of the on-disk audio cache.
    public static let cacheBudget = ConfigKey<ByteCount>(
        "cache.budget", default: .gibibytes(2), "largest size of the audio cache; the least recently played goes first")
    /// Free space the cache always leaves on its filesystem.
    public static let cacheFreeSpaceFloor = ConfigKey<FreeSpaceFloor>(
        "cache.free-space-floor", default: FreeSpaceFloor(size: .gibibytes(1), percent: 5),
        "the cache stops growing when free space would fall below the larger of a size and a percentage of the disk")
    /// Query parameters left out of the cache key, so re-signed URLs of one file share its bytes.
    public static let cacheIgnoredQueryParameters = ConfigKey<[String]>(
        "cache.ignored-query-parameters",
        default: ["X-Amz-*", "Signature", "Expires", "Key-Pair-Id", "Policy", "token", "sig"],
        "query parameters (a trailing * matches a prefix) left out of the cache key, so re-signed URLs share one entry",
        placeholder: "NAME,…")
    /// The namespace for cache, resume positions and session.
    public static let account = ConfigKey<String>(
        "account", default: "default", "namespace of the cache, resume positions and session (letters, digits, . _ -)",
        placeholder: "NAME", check: accountProblem)
    /// How many upcoming tracks are fetched ahead.
    public static let preloadCount = ConfigKey<Int>(
        "preload.count", default: 2, "how many upcoming tracks are fetched ahead of time")
    /// How many bytes preloading may hold for upcoming tracks.
    public static let preloadBudget = ConfigKey<ByteCount>(
        "preload.budget", default: .mebibytes(512), "most bytes fetched ahead for upcoming tracks, all of them together"
    )
    /// How long before the end of the current track the next ones start to load.
    public static let preloadTrigger = ConfigKey<Duration>(
        "preload.trigger", default: .seconds(60), "how long before the current track ends the next ones start loading")
    /// How many upcoming tracks are fetched at once.
    public static let preloadConcurrency = ConfigKey<Int>(
        "preload.concurrency", default: 2, "how many upcoming tracks are fetched at the same time",
        check: { $0 >= 1 ? nil : "preload.concurrency must be at least 1" })
    /// Size from which a file is fetched in a window ahead of the playhead rather than whole.
    public static let readAheadLargeFileThreshold = ConfigKey<ByteCount>(
        "read-ahead.large-file-threshold", default: .mebibytes(256),
        "files at least this large are fetched a window ahead of the playhead instead of whole")
    /// How far ahead of the playhead a large file is fetched.
    public static let readAheadWindow = ConfigKey<ByteCount>(
        "read-ahead.window", default: .mebibytes(32), "how far ahead of the playhead a large file is fetched")
    /// How much audio ahead of the playhead any file is fetched on a metered network.
    public static let readAheadMeteredWindow = ConfigKey<Duration>(
        "read-ahead.metered-window", default: .seconds(120),
        "on a metered network every file is fetched only this much audio ahead of the playhead")
    /// Whether the network counts as metered (less preload and read-ahead).
    public static let networkMetered = ConfigKey<MeteredSetting>(
        "network.metered", default: .auto,
        "auto follows NetworkManager (none: not metered); metered: no preload but the next track's head, a read-ahead window"
    )
    /// The highest HLS variant bit rate chosen on a metered network.
    public static let networkMeteredQuality = ConfigKey<BitRate>(
        "network.metered-quality", default: .kilobits(128),
        "on a metered network no HLS variant above this bit rate is chosen (the lowest when all are above it)")
    /// Positions earlier than this are not remembered.
    public static let resumeMinimum = ConfigKey<Duration>(
        "resume.minimum", default: .seconds(5), "a track stopped earlier than this starts from the beginning next time")
    /// Positions this close to the end count as finished.
    public static let resumeEndMargin = ConfigKey<Duration>(
        "resume.end-margin", default: .seconds(10), "a track stopped this close to its end counts as finished")
    /// How far before the remembered position playback resumes.
    public static let resumeRewind = ConfigKey<Duration>(
        "resume.rewind", default: .seconds(2), "resuming starts this much before the remembered position")
    /// How long playback stays paused or stopped before the engine lets go of its pipeline.
    public static let idleRelease = ConfigKey<Duration>(
        "idle.release", default: .seconds(300),
        "after this long paused or stopped the pipeline and decoders are let go of (Play continues in place); 0 never")
    /// The GStreamer sink; empty picks the desktop's sound server.
    public static let audioSink = ConfigKey<String>(
        "audio.sink", default: "",
        "gst-launch description of the audio output, e.g. pulsesink; empty picks PulseAudio/PipeWire, then ALSA",
        placeholder: "DESC")
    /// What a request of the sound server to make way for another stream (a call) does.
    public static let audioInterruptions = ConfigKey<InterruptionHandling>(
        "audio.interruptions", default: .pause,
        "pause: a call (the sound server corks music) pauses, its end plays on unless you acted; ignore: play through it"
    )
    /// Whether each track change shows a desktop notification.
    public static let notify = ConfigKey<Bool>(
        "notify", default: false,
        "show a desktop notification (title, artist, album, cover art) when a track starts playing, at most one a second"
    )
    /// How long a cached file is trusted before it is revalidated with the origin.
    public static let revalidateInterval = ConfigKey<Duration>(
        "revalidate.interval", default: .seconds(3600),
        "how long a cached file is trusted before its ETag / Last-Modified is checked again")
    /// How long opening a cached file waits for the origin's answer when it is checked.
    public static let revalidateWait = ConfigKey<Duration>(
        "revalidate.wait", default: .milliseconds(300),
        "how long after a cached file starts a new version found by that check still replaces it (0: never)"
    )
    /// The lowest level of log lines written to stderr.
    public static let logLevel = ConfigKey<LogLevel>(
        "log.level", default: .info, "lowest level of log lines written to stderr",
        environmentAliases: ["SPOOL_LOG"])

    /// Every setting, in the order `spool config` lists them.
    public static let all: [AnyConfigKey] = [
        AnyConfigKey(cacheBudget), AnyConfigKey(cacheFreeSpaceFloor), AnyConfigKey(cacheIgnoredQueryParameters),
        AnyConfigKey(account),
        AnyConfigKey(preloadCount), AnyConfigKey(preloadBudget), AnyConfigKey(preloadTrigger),
        AnyConfigKey(preloadConcurrency),
        AnyConfigKey(readAheadLargeFileThreshold), AnyConfigKey(readAheadWindow), AnyConfigKey(readAheadMeteredWindow),
        AnyConfigKey(networkMetered), AnyConfigKey(networkMeteredQuality),
        AnyConfigKey(resumeMinimum), AnyConfigKey(resumeEndMargin), AnyConfigKey(resumeRewind),
        AnyConfigKey(revalidateInterval), AnyConfigKey(revalidateWait), AnyConfigKey(idleRelease),
        AnyConfigKey(audioSink), AnyConfigKey(audioInterruptions), AnyConfigKey(notify), AnyConfigKey(logLevel),
    ]

    /// The setting called `name`, if there is one.
    public static func named(_ name: String) -> AnyConfigKey? { all.first { $0.name == name } }

    /// Account names become folder names: a plain word, no path tricks.
    private static func accountProblem(_ name: String) -> String? {
        let allowed = name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }
        guard name.isEmpty || !allowed || name.hasPrefix(".") else { return nil }
        return "'\(name)' is not an account name; use letters, digits, '.', '_' and '-', not starting with '.'"
    }
}
