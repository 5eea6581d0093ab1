import DBusKit
import Foundation
import TestSupport
import Testing

/// Property sets sent quickly one after the other take effect in the order they were sent.
@Suite("Property sets in order", .serialized)
struct PropertySetOrderTests {
    /// How many sets of each property are sent.
    static let count = 100

    @Test func quickVolumeAndRateSetsApplyInTheOrderSent() async throws {
        let daemon = try RunningDaemon()
        try await daemon.waitUntilReady()
        let player = "org.mpris.MediaPlayer2.Player"
        let signals = try await daemon.client.subscribe(
            matching:
                "type='signal',path='\(playerPath)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"
        )
        func set(_ name: String, _ value: DBusValue) throws {
            try daemon.client.callWithoutReply(
                destination: busName, path: playerPath, interface: "org.freedesktop.DBus.Properties", method: "Set",
                arguments: [.string(player), .string(name), .variant(value)])
        }
        // Volumes rise with every set; rates fall. Any set applied after a later one shows as a step back.
        let volumes = (1...Self.count).map { Double($0) / Double(Self.count) }
        let rates = (1...Self.count).map { 2 - Double($0) / Double(Self.count) }
        for index in 0..<Self.count {
            try set("Volume", .double(volumes[index]))
            try set("Rate", .double(rates[index]))
        }
        // Sent last: once it shows, every set before it has been applied.
        try set("LoopStatus", .string("Playlist"))
        var seenVolumes: [Double] = []
        var seenRates: [Double] = []
        for await signal in signals {
            let changed = signal.arguments.count > 1 ? signal.arguments[1].stringVariantDictValue ?? [:] : [:]
            if let volume = changed["Volume"]?.doubleValue { seenVolumes.append(volume) }
            if let rate = changed["Rate"]?.doubleValue { seenRates.append(rate) }
            if changed["LoopStatus"]?.stringValue == "Playlist" { break }
        }
        #expect(seenVolumes == seenVolumes.sorted(), "volumes signalled out of order: \(seenVolumes)")
        #expect(seenRates == seenRates.sorted(by: >), "rates signalled out of order: \(seenRates)")
        #expect(try await daemon.property(player, "Volume")?.doubleValue == volumes.last)
        #expect(try await daemon.property(player, "Rate")?.doubleValue == rates.last)
    }
}
