// Measures Spool's MPRIS object as a D-Bus client sees it, against a real `spool daemon`
// that it starts itself on a private bus (fakesink sync=true, a temporary XDG home):
//   swift build -c release --product spool && swift run -c release MPRISBench
// (the daemon is the `spool` built next to this executable: build it in the same mode first).
// - Get and GetAll latency over the bus while playing, p50/p99 of 1,000 calls each (target p99 < 1 ms);
// - signals per second during steady playback of one track (target 0; Position is never signalled);
// - PropertiesChanged per automatic (gapless) track change through a playlist (target ≤ 2);
// - with MPRISBENCH_SLOW_SYNC_MS=500, every fsync/fdatasync of the daemon takes that long (an
//   LD_PRELOAD shim, compiled here with gcc): a disk whose sync hangs. Get stays under 1 ms and
//   calls that save the session (Set Volume) reply at once, as saves run behind the player.
import DBusKit
import Foundation
import Synchronization
import TestSupport

let busName = "org.mpris.MediaPlayer2.spool"
let objectPath = "/org/mpris/MediaPlayer2"
let player = "org.mpris.MediaPlayer2.Player"

@main
struct MPRISBench {
    static func main() async throws {
        let spool = try spoolExecutable()
        let bus = try PrivateBus()
        let home = try TemporaryDirectory(prefix: "spool-bench-home")
        var launch = SpoolDaemonLaunch(
            busEnvironment: bus.environment, home: home.url, logDirectory: home.url, lifetime: 300, logLevel: nil)
        launch.timedLog = false
        let slowSync = ProcessInfo.processInfo.environment["MPRISBENCH_SLOW_SYNC_MS"].flatMap { Int($0) } ?? 0
        if slowSync > 0 {
            launch.extraEnvironment["LD_PRELOAD"] = try slowSyncShim(milliseconds: slowSync, in: home).path
        }
        let daemon = try launch.start(executable: spool)
        defer { daemon.stop(grace: 5) }
        let client = try DBusConnection(address: bus.address)
        defer { client.close() }
        let recorder = SignalRecorder()
        let stream = try await client.subscribe(matching: "type='signal',path='\(objectPath)'")
        let listener = Task { for await message in stream { recorder.append(message) } }
        defer { listener.cancel() }
        let launched = ContinuousClock.now
        for _ in 0..<3_000 where try await !client.nameHasOwner(busName) {
            guard daemon.isRunning else { throw RigError("spool daemon exited: \(daemon.standardError)") }
            try await Task.sleep(for: .milliseconds(10))
        }
        let named = ContinuousClock.now - launched
        print(
            "MPRISBench: \(spool) on a private bus, fakesink sync=true"
                + (slowSync > 0 ? ", every fsync/fdatasync of the daemon \(slowSync) ms" : "")
                + "; the name owned \(ms(milliseconds(named))) after the launch")

        // A steady 20 s tone, played while the calls are timed and the signals counted.
        let media = try TemporaryDirectory(prefix: "spool-bench-media")
        let tone = media.file("tone-20s.flac")
        let made = try runCommand(
            "gst-launch-1.0",
            [
                "-q", "audiotestsrc", "num-buffers=\(20 * 44_100 / 1024)", "freq=300", "!", "audioconvert", "!",
                "flacenc",
                "!", "filesink", "location=\(tone.path)",
            ])
        guard made.status == 0 else { throw RigError("gst-launch: \(made.stderr)") }
        try await call(client, player, "OpenUri", [.string(tone.absoluteString)])
        try await waitUntil("the tone plays, fully known") {
            let metadata = try await get(client, "Metadata")?.stringVariantDictValue ?? [:]
            let playing = try await get(client, "PlaybackStatus")?.stringValue == "Playing"
            let seekable = try await get(client, "CanSeek")?.boolValue == true
            return playing && seekable && metadata["mpris:length"] != nil
        }

        print("")
        print(pad("call (1,000 each, while playing)", 40) + pad("p50", 10) + pad("p99", 10) + pad("max", 10) + "target")
        let properties = "org.freedesktop.DBus.Properties"
        for (label, method, arguments) in [
            ("Get Player.PlaybackStatus", "Get", [DBusValue.string(player), .string("PlaybackStatus")]),
            ("Get Player.Position", "Get", [.string(player), .string("Position")]),
            ("Get Player.Metadata", "Get", [.string(player), .string("Metadata")]),
            ("GetAll Player", "GetAll", [.string(player)]),
            ("GetAll org.mpris.MediaPlayer2", "GetAll", [.string("org.mpris.MediaPlayer2")]),
        ] {
            var samples: [Double] = []
            for index in 0..<1_100 {
                let start = ContinuousClock.now
                try await call(client, properties, method, arguments)
                if index >= 100 { samples.append(milliseconds(ContinuousClock.now - start)) }  // 100 warm-up calls
            }
            samples.sort()
            let p99 = percentile(samples, 0.99)
            print(
                pad(label, 40) + pad(ms(percentile(samples, 0.5)), 10) + pad(ms(p99), 10) + pad(ms(samples.last!), 10)
                    + "p99 < 1 ms " + (p99 < 1 ? "ok" : "MISSED"))
        }

        // Steady playback: count everything the object signals over 5 s.
        let steadyStart = recorder.count
        let window = Duration.seconds(5)
        try await Task.sleep(for: window)
        let steady = Array(try await recorder.flushed(client).dropFirst(steadyStart))
        let changed = steady.filter { $0.member == "PropertiesChanged" }
        let withPosition = changed.filter { playerChanges($0)["Position"] != nil }
        let seconds = Double(window.components.seconds)
        print("")
        print(
            "steady playback, \(Int(seconds)) s: \(changed.count) PropertiesChanged (\(rate(changed.count, seconds))/s), "
                + "\(withPosition.count) with Position, \(steady.count) signals in all (\(rate(steady.count, seconds))/s); target 0"
        )

        // Calls that save the session: each Set of Volume is stored (behind the player).
        var saving: [Double] = []
        for index in 0..<220 {
            let start = ContinuousClock.now
            try await call(
                client, properties, "Set",
                [.string(player), .string("Volume"), .variant(.double(index.isMultiple(of: 2) ? 0.5 : 0.6))])
            if index >= 20 { saving.append(milliseconds(ContinuousClock.now - start)) }
        }
        saving.sort()
        print("")
        print(
            pad("Set Player.Volume (saves the session)", 40) + pad(ms(percentile(saving, 0.5)), 10)
                + pad(ms(percentile(saving, 0.99)), 10) + pad(ms(saving.last!), 10) + "no wait for the disk")

        // Automatic track changes through a playlist of the 3.5 s fixtures.
        let fixtures = try Fixtures.shared()
        let formats: [FixtureFormat] = [.flac, .oggVorbis, .mp3CBR, .m4aFaststart, .wav]
        let chosen = formats.map(fixtures.fixture)
        let list = media.file("fixtures.m3u")
        try Data((["#EXTM3U"] + chosen.map(\.url.path)).joined(separator: "\n").utf8).write(to: list)
        let listStart = recorder.count
        try await call(client, player, "OpenUri", [.string(list.absoluteString)])
        try await waitUntil("the playlist plays to its end", timeout: 60) {
            recorder.all.dropFirst(listStart).contains { playerChanges($0)["PlaybackStatus"]?.stringValue == "Stopped" }
        }
        let played = Array(try await recorder.flushed(client).dropFirst(listStart))
        print("")
        print(
            pad("automatic track change (gapless)", 34) + pad("PropertiesChanged", 19) + pad("others", 8)
                + "what changed")
        var perTrack: [(track: String, changes: [String], others: Int)] = []
        var current: DBusValue?
        var metadata: [String: DBusValue] = [:]
        for message in played {
            let changes = playerChanges(message)
            if changes["PlaybackStatus"]?.stringValue == "Stopped" { break }
            let newMetadata = changes["Metadata"]?.stringVariantDictValue
            if let id = newMetadata?["mpris:trackid"], id != current {
                current = id
                perTrack.append((newMetadata?["xesam:url"]?.stringValue ?? "?", [], 0))
                metadata = [:]
            }
            guard !perTrack.isEmpty else { continue }
            guard message.member == "PropertiesChanged" else {
                perTrack[perTrack.count - 1].others += 1
                continue
            }
            // Each change as its properties, and for Metadata the keys that differ from the last one.
            var names = changes.keys.filter { $0 != "Metadata" }.sorted()
            if let newMetadata {
                let keys = Set(newMetadata.keys).union(metadata.keys).filter { newMetadata[$0] != metadata[$0] }
                names.append("Metadata(\(keys.sorted().joined(separator: ",")))")
                metadata = newMetadata
            }
            perTrack[perTrack.count - 1].changes.append(names.joined(separator: " "))
        }
        for (index, track) in perTrack.enumerated() {
            let name = (index == 0 ? "opened " : "→ ") + (URL(string: track.track)?.lastPathComponent ?? track.track)
            let count = "\(track.changes.count)" + (index == 0 || track.changes.count <= 2 ? "" : " (> 2)")
            print(
                pad(name, 34) + pad(count, 19) + pad("\(track.others)", 8)
                    + track.changes.map { "[\($0)]" }.joined(separator: " "))
        }
        print("(the opened track is loaded, not handed over: it is not a track change; others: TrackList signals)")
    }

    // MARK: helpers

    /// An LD_PRELOAD library that makes every fsync and fdatasync of the process sleep first.
    static func slowSyncShim(milliseconds: Int, in home: TemporaryDirectory) throws -> URL {
        let source = home.file("slow-sync.c")
        let library = home.file("slow-sync.so")
        try Data(
            """
            #define _GNU_SOURCE
            #include <dlfcn.h>
            #include <unistd.h>
            static void wait_for_disk(void) { usleep(\(milliseconds) * 1000); }
            int fsync(int fd) {
                static int (*real)(int);
                if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
                wait_for_disk();
                return real(fd);
            }
            int fdatasync(int fd) {
                static int (*real)(int);
                if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
                wait_for_disk();
                return real(fd);
            }
            """.utf8
        ).write(to: source)
        let built = try runCommand("gcc", ["-shared", "-fPIC", "-O2", "-o", library.path, source.path, "-ldl"])
        guard built.status == 0 else { throw RigError("gcc: \(built.stderr)") }
        return library
    }

    @discardableResult
    static func call(_ client: DBusConnection, _ interface: String, _ method: String, _ arguments: [DBusValue] = [])
        async throws -> [DBusValue]
    {
        try await client.call(
            destination: busName, path: objectPath, interface: interface, method: method, arguments: arguments)
    }

    static func get(_ client: DBusConnection, _ name: String) async throws -> DBusValue? {
        try await call(client, "org.freedesktop.DBus.Properties", "Get", [.string(player), .string(name)]).first?
            .variantValue
    }

    /// Polls the daemon's state (another process) until `condition` holds.
    static func waitUntil(_ what: String, timeout: Double = 10, _ condition: @Sendable () async throws -> Bool)
        async throws
    {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw RigError("timed out waiting until \(what)")
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
    }

    static func ms(_ value: Double) -> String { String(format: "%.3f ms", value) }
    static func rate(_ count: Int, _ seconds: Double) -> String { String(format: "%.1f", Double(count) / seconds) }
    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}

/// The Player properties a PropertiesChanged carries.
func playerChanges(_ message: DBusSignalMessage) -> [String: DBusValue] {
    guard message.member == "PropertiesChanged", message.arguments.count == 3,
        message.arguments[0].stringValue == player
    else { return [:] }
    return message.arguments[1].stringVariantDictValue ?? [:]
}

/// Signals as they arrive, with a way to know that everything the daemon sent so far is in.
final class SignalRecorder: Sendable {
    private let messages = Mutex<[DBusSignalMessage]>([])
    private let markers = Mutex<Set<String>>([])
    private static let marker = "org.spool.Bench.Marker"

    func append(_ message: DBusSignalMessage) {
        if message.interface == Self.marker {
            _ = markers.withLock { $0.insert(message.arguments.first?.stringValue ?? "") }
        } else {
            messages.withLock { $0.append(message) }
        }
    }
    var count: Int { messages.withLock { $0.count } }
    var all: [DBusSignalMessage] { messages.withLock { $0 } }

    /// Every daemon signal so far: a Ping orders after what the daemon sent, and a signal this
    /// connection sends itself comes back behind whatever was received before it.
    func flushed(_ client: DBusConnection) async throws -> [DBusSignalMessage] {
        _ = try await client.call(
            destination: busName, path: objectPath, interface: "org.freedesktop.DBus.Peer", method: "Ping")
        let token = UUID().uuidString
        client.emitSignal(path: objectPath, interface: Self.marker, name: "Marker", arguments: [.string(token)])
        for _ in 0..<1000 {
            if markers.withLock({ $0.contains(token) }) { return all }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw RigError("the marker signal never came back")
    }
}
