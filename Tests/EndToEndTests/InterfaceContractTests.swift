import DBusKit
import Foundation
import TestSupport
import Testing

/// The `<interface>` blocks of an introspection document, keyed by name, each as
/// its trimmed lines (so indentation does not matter but order and content do).
func interfaceBlocks(_ xml: String) -> [String: [String]] {
    var blocks: [String: [String]] = [:]
    var current: (name: String, lines: [String])?
    for raw in xml.split(separator: "\n") {
        let line = raw.trimmingCharacters(in: .whitespaces)
        if line.hasPrefix("<interface name=\""), let name = line.split(separator: "\"").dropFirst().first {
            current = (String(name), [])
        } else if line == "</interface>", let finished = current {
            blocks[finished.name] = finished.lines
            current = nil
        } else if current != nil {
            current?.lines.append(line)
        }
    }
    return blocks
}

/// Signals from a stream, collected in the background so a test can await one.
typealias SignalLog = AwaitableLog<DBusSignalMessage>

/// The changed-properties dictionary of a PropertiesChanged signal.
func changedProperties(_ message: DBusSignalMessage) -> [String: DBusValue] {
    guard message.member == "PropertiesChanged", message.arguments.count == 3 else { return [:] }
    return message.arguments[1].stringVariantDictValue ?? [:]
}

@Suite("Contracts with the desktop", .serialized)
struct InterfaceContractTests {
    @Test func theLiveObjectMatchesTheCheckedInIntrospectionXML() async throws {
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let reply = try await daemon.client.call(
            destination: busName, path: "/org/mpris/MediaPlayer2",
            interface: "org.freedesktop.DBus.Introspectable", method: "Introspect")
        let live = interfaceBlocks(try #require(reply.first?.stringValue))
        let expected: [String: Set<String>] = [
            "dbus/org.mpris.MediaPlayer2.xml": [
                "org.mpris.MediaPlayer2", "org.mpris.MediaPlayer2.Player", "org.mpris.MediaPlayer2.TrackList",
                "org.mpris.MediaPlayer2.Playlists",
            ],
            "dbus/org.spool.Spool1.xml": ["org.spool.Spool1"],
        ]
        for (file, names) in expected {
            let checkedIn = interfaceBlocks(
                try String(contentsOf: repositoryRoot.appendingPathComponent(file), encoding: .utf8))
            #expect(Set(checkedIn.keys) == names)
            for (name, lines) in checkedIn {
                #expect(live[name] == lines, "interface \(name) differs from \(file)")
            }
        }
        let standard: Set = [
            "org.freedesktop.DBus.Peer", "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Properties",
        ]
        #expect(
            Set(live.keys).subtracting(standard) == expected.values.reduce(Set()) { $0.union($1) },
            "an exported interface has no checked-in XML")
    }

    @Test func theDesktopFileValidates() throws {
        let result = try runCommand(
            "desktop-file-validate", [repositoryRoot.appendingPathComponent("desktop/spool.desktop").path])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.isEmpty, "\(result.stdout)")
    }

    @Test func theActivationFileNamesTheBusNameAndTheDaemon() throws {
        let text = try String(
            contentsOf: repositoryRoot.appendingPathComponent("dbus/org.mpris.MediaPlayer2.spool.service.in"),
            encoding: .utf8)
        #expect(text.contains("Name=\(busName)"))
        #expect(text.contains("Exec=@bindir@/spool daemon"))
    }

    @Test func playbackChangesAreSignalledWithTheirValuesAndNeverWithPosition() async throws {
        let fixtures = try Fixtures.shared()
        let track = fixtures.fixture(.oggVorbis)
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let stream = try await daemon.client.subscribe(
            matching:
                "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='/org/mpris/MediaPlayer2'"
        )
        let log = SignalLog()
        let listener = Task {
            for await message in stream { await log.append(message) }
        }
        defer { listener.cancel() }

        func waitForChange(_ accept: @escaping @Sendable ([String: DBusValue]) -> Bool) async -> Bool {
            await log.waitFor { $0.contains { accept(changedProperties($0)) } }
        }

        #expect(try await daemon.playerctl("open", track.url.absoluteString).status == 0)
        #expect(await waitForChange { $0["PlaybackStatus"]?.stringValue == "Playing" })
        #expect(await waitForChange { $0["CanPlay"]?.boolValue == true })
        #expect(
            await waitForChange {
                $0["Metadata"]?.stringVariantDictValue?["xesam:title"]?.stringValue == track.title
            })
        #expect(
            await waitForChange {
                $0["Metadata"]?.stringVariantDictValue?["mpris:length"]?.int64Value.map { $0 > 3_000_000 } == true
            })
        #expect(try await daemon.playerctl("pause").status == 0)
        #expect(await waitForChange { $0["PlaybackStatus"]?.stringValue == "Paused" })

        let all = await log.items
        #expect(all.allSatisfy { changedProperties($0)["Position"] == nil })
        #expect(
            all.allSatisfy { $0.arguments.count == 3 && $0.arguments[2].arrayValues?.isEmpty == true },
            "nothing is ever sent as invalidated")
        // Each PropertiesChanged carries only values that changed since the previous one.
        var last: [String: DBusValue] = [:]
        for message in all {
            for (name, value) in changedProperties(message) {
                #expect(last[name] != value, "\(name) re-sent unchanged")
                last[name] = value
            }
        }
    }
}
