import DBusKit
import Foundation
import Synchronization
import TestSupport
import Testing

/// What a sane MPRIS `Metadata` may hold, whatever the file said. The daemon's limits
/// (`TagText` in EngineAPI): strings of at most 1024 Unicode scalars (4 KiB of UTF-8), lists of
/// at most 32 values, track and disc numbers from 1 to 9999.
enum SaneMetadata {
    static let maximumLength = 1024
    static let maximumCount = 32
    static let numbers: ClosedRange<Int32> = 1...9_999

    /// Everything wrong with `metadata`, for one failure message; empty when it is sane.
    static func problems(_ metadata: [String: DBusValue]) -> [String] {
        var problems: [String] = []
        if (metadata["xesam:title"]?.stringValue ?? "").isEmpty { problems.append("no title") }
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            let strings = value.stringValue.map { [$0] } ?? value.stringArrayValue ?? []
            if strings.count > maximumCount { problems.append("\(key) holds \(strings.count) values") }
            for text in strings {
                let shown = String(text.debugDescription.prefix(80))
                if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                    problems.append("\(key) holds a control character: \(shown)")
                }
                if text.unicodeScalars.count > maximumLength || text.utf8.count > 4 * maximumLength {
                    problems.append("\(key) is \(text.unicodeScalars.count) scalars long: \(shown)")
                }
                if text.isEmpty { problems.append("\(key) holds an empty string") }
            }
            if key == "xesam:trackNumber" || key == "xesam:discNumber" {
                if let number = value.int32Value, !numbers.contains(number) { problems.append("\(key) is \(number)") }
            }
            if key == "xesam:contentCreated", let date = value.stringValue,
                !date.prefix(4).allSatisfy({ $0.isASCII && $0.isNumber })
            {
                problems.append("\(key) is not a date: \(date.debugDescription)")
            }
        }
        return problems
    }
}

/// The Metadata URLs announced in PropertiesChanged, gathered while a test runs.
final class SignalledURLs: Sendable {
    private final class Store: Sendable {
        let urls = Mutex<Set<String>>([])
    }

    private let store = Store()
    private let task: Task<Void, Never>

    init(_ signals: AsyncStream<DBusSignalMessage>) {
        let store = self.store
        task = Task {
            for await signal in signals {
                let changed = signal.arguments.count > 1 ? signal.arguments[1].stringVariantDictValue ?? [:] : [:]
                if let url = changed["Metadata"]?.stringVariantDictValue?["xesam:url"]?.stringValue {
                    _ = store.urls.withLock { $0.insert(url) }
                }
            }
        }
    }

    /// Whether `url` was announced.
    func contains(_ url: String) -> Bool { store.urls.withLock { $0.contains(url) } }

    deinit { task.cancel() }
}

extension RunningDaemon {
    /// How playing `url` went: its Metadata once it played 0.3 s, or the error the daemon reported.
    enum Outcome {
        case played([String: DBusValue])
        case failed(String)
    }

    /// Waits until `url` has played 0.3 s (its tags are in by then) or the daemon reports why it cannot.
    func waitUntilPlayed(_ url: URL, name: String) async throws -> Outcome {
        try await waitUntilPlayed(name: name) { $0 == url.absoluteString }
    }

    /// Waits until a track whose `xesam:url` satisfies `isIt` has played 0.3 s, or until
    /// LastError mentions `name`.
    func waitUntilPlayed(name: String, _ isIt: (String) -> Bool) async throws -> Outcome {
        let player = "org.mpris.MediaPlayer2.Player"
        for _ in 0..<750 {
            let metadata = try await property(player, "Metadata")?.stringVariantDictValue ?? [:]
            if isIt(metadata["xesam:url"]?.stringValue ?? ""),
                try await property(player, "Position")?.int64Value ?? 0 > 300_000
            {
                return .played(metadata)
            }
            let error = try await spoolProperty("LastError")?.stringValue ?? ""
            if error.contains(name) { return .failed(error) }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw RigError("\(name) neither played nor failed; daemon log:\n\(process.standardError.suffix(4000))")
    }

    /// How long a `Get` of `Metadata` takes now.
    func timeToGetMetadata() async throws -> Duration {
        let started = ContinuousClock.now
        _ = try await property("org.mpris.MediaPlayer2.Player", "Metadata")
        return ContinuousClock.now - started
    }

    /// Subscribes to the Player's PropertiesChanged.
    func signalledURLs() async throws -> SignalledURLs {
        SignalledURLs(
            try await client.subscribe(
                matching: "type='signal',path='\(playerPath)',interface='org.freedesktop.DBus.Properties',"
                    + "member='PropertiesChanged'"))
    }
}

/// Files whose tags no tagger would write, played one after another by the real daemon: it keeps
/// running and answering, and its Metadata stays valid, printable and bounded.
@Suite("Hostile tags end to end", .serialized)
struct HostileTagsTests {
    static func seed(_ label: String) -> UInt64 {
        let seed =
            ProcessInfo.processInfo.environment["SPOOL_TEST_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("\(label): seed \(seed); SPOOL_TEST_SEED=\(seed) replays it")
        return seed
    }

    @Test func everyHostileTagFilePlaysWithSaneMetadata() async throws {
        var random = SeededGenerator(seed: Self.seed("hostile tags"))
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory(prefix: "spool-hostile-tags")
        let cases = HostileTagCorpus.cases(randomCount: 2, &random)
        let files = try cases.map { try HostileTagCorpus.write($0, fixtures: fixtures, into: dir.url) }
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let signalled = try await daemon.signalledURLs()

        var failed: [String] = []
        for (hostile, file) in zip(cases, files) {
            try await daemon.mpris("org.mpris.MediaPlayer2.Player", "OpenUri", [.string(file.absoluteString)])
            switch try await daemon.waitUntilPlayed(file, name: file.lastPathComponent) {
            case .played(let metadata):
                let problems = SaneMetadata.problems(metadata)
                #expect(problems.isEmpty, "\(hostile): \(problems)")
                let elapsed = try await daemon.timeToGetMetadata()
                #expect(elapsed < .milliseconds(100), "\(hostile): Get took \(elapsed)")
                #expect(
                    signalled.contains(file.absoluteString), "\(hostile): no PropertiesChanged carried its Metadata")
            case .failed(let error):
                failed.append("\(hostile): \(error)")
            }
            #expect(
                daemon.process.isRunning, "\(hostile) ended the daemon: \(daemon.process.standardError.suffix(4000))")
            if !daemon.process.isRunning { return }
        }
        // The audio of every file is intact: only its tags are hostile, and tags never stop playback.
        #expect(failed.isEmpty, "\(failed)")
        #expect(!daemon.process.standardError.contains("cannot emit"), "a signal was dropped")

        // The named cases show their cleaned texts, not just nothing.
        let shown = try await playAndRead(daemon, files[cases.firstIndex { $0.name == "control-characters" }!])
        #expect(shown["xesam:title"]?.stringValue == "Esc[2JBell NewDel NelCsi Tab", "\(shown)")
        let artists = try await playAndRead(daemon, files[cases.firstIndex { $0.name == "ten-thousand-artists" }!])
        #expect(artists["xesam:artist"]?.stringArrayValue?.prefix(2) == ["Artist 1", "Artist 2"], "\(artists)")
    }

    /// A file name reaches MPRIS as the title when the file has none: one with terminal escapes,
    /// line breaks or bytes that are not UTF-8 (Linux names are bytes) is shown cleaned, or
    /// reported as unplayable in a clean message.
    @Test func fileNamesWithControlCharactersAndInvalidUTF8ShowCleaned() async throws {
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory(prefix: "spool-hostile-names")
        let untagged = try Data(
            contentsOf: HostileTagCorpus.write(
                HostileTagCase(name: "untagged", tags: RawTags(), format: .flac), fixtures: fixtures, into: dir.url))
        let escaped = dir.file("ctl-\u{1B}[31m-\n-\u{7}-\u{9B}.flac")
        try untagged.write(to: escaped)
        let percent = dir.file("pct-100%zz\u{1B}.flac")
        try untagged.write(to: percent)
        // Foundation names files with strings: the raw name is made with open(2).
        let rawPath = Array(dir.path.utf8) + Array("/raw-".utf8) + [0xFF, 0xFE, 0x80, 0x1B] + Array(".flac".utf8)
        let fd = (rawPath.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer {
            open($0.baseAddress!, O_CREAT | O_WRONLY, 0o644)
        }
        #expect(fd >= 0)
        _ = untagged.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        let rawURL =
            "file://"
            + rawPath.map { byte in
                byte.isASCIIPathCharacter ? String(UnicodeScalar(byte)) : "%" + String(byte, radix: 16, uppercase: true)
            }.joined()

        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        // Spool's paths are strings: it cannot open that file, and says so when asked.
        do {
            try await daemon.mpris("org.mpris.MediaPlayer2.Player", "OpenUri", [.string(rawURL)])
            Issue.record("OpenUri accepted \(rawURL)")
        } catch let error as DBusError {
            #expect(error.name == "org.freedesktop.DBus.Error.InvalidArgs", "\(error)")
            #expect(error.message.contains("raw-%FF%FE%80%1B.flac") && error.message.contains("not UTF-8"), "\(error)")
        }
        do {
            let uri = dir.url.absoluteString + "/nul-%00.flac"
            try await daemon.mpris("org.mpris.MediaPlayer2.Player", "OpenUri", [.string(uri)])
            Issue.record("OpenUri accepted a path with a NUL")
        } catch let error as DBusError {
            #expect(error.name == "org.freedesktop.DBus.Error.InvalidArgs" && error.message.contains("NUL"), "\(error)")
        }
        // A file that is not audio fails, and the error names it without its escapes.
        let noise = dir.file("bad-\u{1B}[31m\n.flac")
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: noise)
        try await daemon.mpris("org.mpris.MediaPlayer2.Player", "OpenUri", [.string(noise.absoluteString)])
        switch try await daemon.waitUntilPlayed(name: "bad-", { $0.contains("bad-") }) {
        case .played: Issue.record("noise played")
        case .failed(let error):
            let controls = error.unicodeScalars.filter { $0.properties.generalCategory == .control }
            #expect(error.contains("bad-[31m .flac") && controls.isEmpty, "\(error.debugDescription)")
        }
        for (uri, name) in [(escaped.absoluteString, "ctl-"), (percent.absoluteString, "pct-100")] {
            try await daemon.mpris("org.mpris.MediaPlayer2.Player", "OpenUri", [.string(uri)])
            switch try await daemon.waitUntilPlayed(name: name, { $0.contains(name) }) {
            case .played(let metadata):
                #expect(SaneMetadata.problems(metadata).isEmpty, "\(name): \(SaneMetadata.problems(metadata))")
                #expect(metadata["xesam:title"]?.stringValue?.contains(name) == true, "\(name): \(metadata)")
            case .failed(let error):
                Issue.record("\(name) did not play: \(error.debugDescription)")
            }
            #expect(daemon.process.isRunning)
        }
    }

    /// A playlist's titles show until the track's tags say otherwise (here they never do), and
    /// the TrackList lists them all: a NUL in one (which no D-Bus string can carry) must not
    /// make Metadata or GetTracksMetadata fail.
    @Test func playlistTitlesWithNULsAndControlsListAndShowCleaned() async throws {
        let fixtures = try Fixtures.shared()
        let dir = try TemporaryDirectory(prefix: "spool-hostile-playlist")
        let untagged = try HostileTagCorpus.write(
            HostileTagCase(name: "untagged", tags: RawTags(), format: .flac), fixtures: fixtures, into: dir.url)
        let titles: [[UInt8]] = [
            Array("Nul\u{0}Title".utf8), Array("\u{1B}[2JEscape\u{7}".utf8), [0x42, 0x61, 0x64, 0xFF, 0xFE],
            Array(String(repeating: "long ", count: 20_000).utf8),
        ]
        var playlist = Array("#EXTM3U\n".utf8)
        for title in titles {
            playlist += Array("#EXTINF:3,".utf8) + title + Array("\n\(untagged.lastPathComponent)\n".utf8)
        }
        let list = dir.file("hostile.m3u")
        try Data(playlist).write(to: list)

        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        try await daemon.mpris("org.mpris.MediaPlayer2.Player", "OpenUri", [.string(list.absoluteString)])
        guard
            case .played(let current) = try await daemon.waitUntilPlayed(name: "hostile.m3u", { $0.hasSuffix(".flac") })
        else { throw RigError("the playlist did not play") }
        #expect(SaneMetadata.problems(current).isEmpty, "\(SaneMetadata.problems(current))")
        #expect(current["xesam:title"]?.stringValue == "NulTitle", "\(current)")
        let tracks = try await daemon.property("org.mpris.MediaPlayer2.TrackList", "Tracks")?.arrayValues ?? []
        #expect(tracks.count == titles.count)
        let listed = try await daemon.mpris(
            "org.mpris.MediaPlayer2.TrackList", "GetTracksMetadata", [.array(elementSignature: "o", tracks)])
        let maps = listed.first?.arrayValues?.compactMap(\.stringVariantDictValue) ?? []
        let shown = maps.map { $0["xesam:title"]?.stringValue ?? "" }
        #expect(shown.prefix(3) == ["NulTitle", "[2JEscape", "Bad\u{FFFD}\u{FFFD}"], "\(shown)")
        #expect(shown.last?.hasPrefix("long long") == true && shown.last?.hasSuffix("…") == true)
        for metadata in maps { #expect(SaneMetadata.problems(metadata).isEmpty, "\(SaneMetadata.problems(metadata))") }
        #expect(daemon.process.isRunning)
    }

    /// Plays `file` and returns its Metadata (it must play).
    private func playAndRead(_ daemon: RunningDaemon, _ file: URL) async throws -> [String: DBusValue] {
        try await daemon.mpris("org.mpris.MediaPlayer2.Player", "OpenUri", [.string(file.absoluteString)])
        guard case .played(let metadata) = try await daemon.waitUntilPlayed(file, name: file.lastPathComponent) else {
            throw RigError("\(file.lastPathComponent) did not play")
        }
        return metadata
    }
}

extension UInt8 {
    /// Whether the byte may stand in a file URL's path as it is.
    fileprivate var isASCIIPathCharacter: Bool {
        (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self)
            || "/-._~".utf8.contains(self)
    }
}
