import DBusKit
import Foundation
import Testing
import TestSupport

/// Calls that a buggy or hostile client might send; each must get a reply (an error
/// for the malformed ones) and none may hurt the daemon.
func hostileCall(_ number: Int) -> (interface: String, method: String, arguments: [DBusValue]) {
    let player = "org.mpris.MediaPlayer2.Player"
    let properties = "org.freedesktop.DBus.Properties"
    var random = SystemRandomNumberGenerator()
    let junk = String((0..<Int.random(in: 1...40, using: &random)).map { _ in
        Character(UnicodeScalar(UInt8.random(in: 33...126, using: &random)))
    })
    switch number % 16 {
    case 0: return (player, "Seek", [.string(junk)])
    case 1: return (player, "SetPosition", [.int64(5)])
    case 2: return (player, "OpenUri", [.string(String(repeating: "x", count: 200_000))])
    case 3: return (player, "OpenUri", [.string("gopher://\(junk)")])
    case 4: return (player, "No" + junk.filter(\.isLetter), [])
    case 5: return (properties, "Set", [.string("org.mpris.MediaPlayer2"), .string("Identity"), .variant(.string("evil"))])
    case 6: return (properties, "Set", [.string(player), .string("Volume"), .variant(.string("loud"))])
    case 7: return (properties, "Set", [.string(player), .string("LoopStatus"), .variant(.string(junk))])
    case 8: return (properties, "Get", [.string(player), .string("Nope" + junk.filter(\.isLetter))])
    case 9: return (properties, "GetAll", [.string("org.example.\(junk.filter(\.isLetter))x")])
    case 10: return (properties, "Get", [.int32(3)])
    case 11: return ("org.mpris.MediaPlayer2.TrackList", "GoTo", [.objectPath("/org/spool/Track/999999")])
    case 12: return ("org.mpris.MediaPlayer2.TrackList", "GetTracksMetadata", [.array(elementSignature: "o", [.objectPath("/x")])])
    case 13: return (player, "SetPosition", [.objectPath("/org/spool/Track/1"), .int64(-5)])
    case 14: return (properties, "Set", [.string(player), .string("Rate"), .variant(.double(.nan))])
    default: return ("org.example.Nothing", "Nothing", [.structure([.byte(1), .variant(.array(elementSignature: "s", []))])])
    }
}

@Suite("Malformed calls", .serialized)
struct MalformedCallsTests {
    @Test func elevenHundredHostileCallsFromThreeConnectionsGetRepliesAndTheDaemonStaysResponsive() async throws {
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let clients = try (0..<3).map { _ in try DBusConnection(address: daemon.bus.address) }
        defer { clients.forEach { $0.close() } }
        let answered = try await withThrowingTaskGroup(of: Int.self) { group in
            for batch in 0..<22 {
                group.addTask {
                    var replies = 0
                    for index in 0..<50 {
                        let number = batch * 50 + index
                        let call = hostileCall(number)
                        do {
                            _ = try await clients[number % 3].call(
                                destination: busName, path: playerPath, interface: call.interface, method: call.method,
                                arguments: call.arguments, timeout: .seconds(10))
                            replies += 1
                        } catch let error as DBusError {
                            // An error reply is an answer; a timeout or a lost connection is not.
                            if error.name != "org.freedesktop.DBus.Error.NoReply"
                                && error.name != "org.freedesktop.DBus.Error.Disconnected"
                            {
                                replies += 1
                            }
                        }
                    }
                    return replies
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(answered == 1100)
        #expect(daemon.process.isRunning, "daemon log:\n\(daemon.process.standardError)")
        let started = ContinuousClock.now
        let status = try await daemon.property("org.mpris.MediaPlayer2.Player", "PlaybackStatus")
        let elapsed = ContinuousClock.now - started
        #expect(status?.stringValue == "Stopped")
        #expect(elapsed < .milliseconds(100), "a normal call took \(elapsed)")
    }
}
