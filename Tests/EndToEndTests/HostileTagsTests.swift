import DBusKit
import Foundation
import Synchronization
import Testing
import TestSupport

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
            if key == "xesam:contentCreated", let date = value.stringValue, !date.prefix(4).allSatisfy({ $0.isASCII && $0.isNumber }) {
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
        let player = "org.mpris.MediaPlayer2.Player"
        for _ in 0..<750 {
            let metadata = try await property(player, "Metadata")?.stringVariantDictValue ?? [:]
            if metadata["xesam:url"]?.stringValue == url.absoluteString,
                try await property(player, "Position")?.int64Value ?? 0 > 300_000
            {
                return .played(metadata)
            }
            let error = try await spoolProperty("LastError")?.stringValue ?? ""
            if error.contains(name) { return .failed(error) }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw RigError("\(url.lastPathComponent) neither played nor failed; daemon log:\n\(process.standardError.suffix(4000))")
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
        let seed = ProcessInfo.processInfo.environment["SPOOL_TEST_SEED"].flatMap { UInt64($0) }
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
                #expect(signalled.contains(file.absoluteString), "\(hostile): no PropertiesChanged carried its Metadata")
            case .failed(let error):
                failed.append("\(hostile): \(error)")
            }
            #expect(daemon.process.isRunning, "\(hostile) ended the daemon: \(daemon.process.standardError.suffix(4000))")
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

    /// Plays `file` and returns its Metadata (it must play).
    private func playAndRead(_ daemon: RunningDaemon, _ file: URL) async throws -> [String: DBusValue] {
        try await daemon.mpris("org.mpris.MediaPlayer2.Player", "OpenUri", [.string(file.absoluteString)])
        guard case .played(let metadata) = try await daemon.waitUntilPlayed(file, name: file.lastPathComponent) else {
            throw RigError("\(file.lastPathComponent) did not play")
        }
        return metadata
    }
}
