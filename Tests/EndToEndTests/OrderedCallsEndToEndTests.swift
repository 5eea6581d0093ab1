import DBusKit
import Foundation
import TestSupport
import Testing

private let player = "org.mpris.MediaPlayer2.Player"

/// Calls a client sends without waiting for replies (a lock screen's seek slider, a media key
/// pressed twice) take effect in the order sent, on the real daemon; and MPRIS's seek rules
/// hold whatever state earlier calls left.
@Suite("Calls in order on the daemon", .serialized)
struct OrderedCallsEndToEndTests {
    /// A daemon playing a 60-s tone, once its length is known; returns its track id.
    static func playing(_ daemon: RunningDaemon, _ url: URL) async throws -> DBusValue {
        _ = try await daemon.mpris(player, "OpenUri", [.string(url.absoluteString)])
        _ = try await daemon.waitForPlayerctl(["metadata", "mpris:length"]) { !$0.isEmpty }
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Playing" }
        let metadata = try await daemon.property(player, "Metadata")?.stringVariantDictValue
        return try #require(metadata?["mpris:trackid"])
    }

    func send(_ daemon: RunningDaemon, _ method: String, _ arguments: [DBusValue]) throws {
        try daemon.client.callWithoutReply(
            destination: busName, path: playerPath, interface: player, method: method, arguments: arguments)
    }

    @Test func inFiftyBurstsOfTwentySetPositionsTheLastOneWinsEveryTime() async throws {
        let media = try TemporaryDirectory()
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let track = try await Self.playing(daemon, try longTone(seconds: 60, in: media))
        var missed: [String] = []
        for burst in 0..<50 {
            let targets = (5...24).map { Int64($0) * 1_000_000 }.shuffled()
            for target in targets.dropLast() { try send(daemon, "SetPosition", [track, .int64(target)]) }
            let last = targets.last!
            _ = try await daemon.mpris(player, "SetPosition", [track, .int64(last)])
            let position = try await daemon.property(player, "Position")?.int64Value ?? -1
            // Read just after the last call's reply: its target, or a little past it.
            if position < last - 100_000 || position > last + 1_000_000 {
                missed.append("burst \(burst): at \(position) µs, the last call asked \(last)")
            }
        }
        #expect(missed.isEmpty, "\(missed)")
    }

    @Test(arguments: 0..<20)
    func fiveHundredInterleavedCallsLeaveTheStateTheirOrderImplies(round: Int) async throws {
        let media = try TemporaryDirectory()
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let track = try await Self.playing(daemon, try longTone(seconds: 60, in: media))
        var playing = true
        var volume = 1.0
        var position: Int64 = 0
        var positionSent = ContinuousClock.now
        for index in 0..<499 {
            switch Int.random(in: 0..<4) {
            case 0:
                try send(daemon, "Play", [])
                playing = true
            case 1:
                try send(daemon, "Pause", [])
                playing = false
            case 2:
                position = Int64.random(in: 1...50) * 1_000_000
                positionSent = .now
                try send(daemon, "SetPosition", [track, .int64(position)])
            default:
                volume = Double(index % 100) / 100
                try daemon.client.callWithoutReply(
                    destination: busName, path: playerPath, interface: "org.freedesktop.DBus.Properties",
                    method: "Set", arguments: [.string(player), .string("Volume"), .variant(.double(volume))])
            }
        }
        // The 500th call, awaited: every call before it has been applied once it is answered.
        _ = try await daemon.mpris(player, playing ? "Play" : "Pause")
        #expect(try await daemon.property(player, "PlaybackStatus")?.stringValue == (playing ? "Playing" : "Paused"))
        #expect(try await daemon.property(player, "Volume")?.doubleValue == volume)
        if position > 0 {
            let now = try await daemon.property(player, "Position")?.int64Value ?? -1
            // The track has played at most the time since the last SetPosition was sent; the
            // seek lands within a frame or two and a position read just after it may run that
            // much ahead. An earlier SetPosition's target lies a whole second or more away.
            let since = ContinuousClock.now - positionSent
            let playedAtMost = Int64(since / .microseconds(1))
            #expect(
                now >= position - 100_000 && now <= position + playedAtMost + 300_000,
                "round \(round): at \(now), last set \(position) \(since) before")
        }
    }

    /// MPRIS: "If the new position is past the end of the track, act like a call to Next"; at the
    /// last track with loop off, Next has nothing to go to and playback stops. After a sequence
    /// of other calls, as an independent conformance run makes them.
    @Test func aSeekPastTheEndActsLikeNextAfterOtherCalls() async throws {
        let media = try TemporaryDirectory()
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let long = try longTone(seconds: 60, in: media)
        let track = try await Self.playing(daemon, long)
        _ = try await daemon.mpris(player, "SetPosition", [track, .int64(10_000_000)])
        _ = try await daemon.mpris(
            "org.freedesktop.DBus.Properties", "Set", [.string(player), .string("Rate"), .variant(.double(1.5))])
        _ = try await daemon.mpris(player, "Pause")
        _ = try await daemon.mpris(player, "Play")
        _ = try await daemon.mpris(player, "Seek", [.int64(2_000_000)])
        // One track, loop off: past the end is Next with nothing next, so playback stops.
        _ = try await daemon.mpris(player, "Seek", [.int64(120_000_000)])
        _ = try await daemon.waitForPlayerctl(["status"]) { $0 == "Stopped" }

        // Two tracks: past the end of the first plays the second.
        let list = media.file("two.m3u")
        let second = try Fixtures.shared().fixture(.flac)
        try Data("\(long.path)\n\(second.url.path)\n".utf8).write(to: list)
        let first = try await Self.playing(daemon, list)
        _ = try await daemon.mpris(player, "SetPosition", [first, .int64(12_000_000)])
        _ = try await daemon.mpris(player, "Seek", [.int64(50_000_000)])
        let url = try await daemon.waitForPlayerctl(["metadata", "xesam:url"]) { $0.hasSuffix(second.fileName) }
        #expect(url.hasSuffix(second.fileName))
        #expect(try await daemon.property(player, "PlaybackStatus")?.stringValue == "Playing")
    }
}
