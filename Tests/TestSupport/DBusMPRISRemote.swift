import DBusKit

/// MPRIS over DBusKit, for the rig: the calls a test or a benchmark makes to a player.
public struct DBusMPRISRemote: MPRISRemote {
    let connection: DBusConnection
    let busName: String

    /// A remote for the player owning `busName` on `connection`'s bus.
    public init(connection: DBusConnection, busName: String) {
        self.connection = connection
        self.busName = busName
    }

    static let path = "/org/mpris/MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"

    func call(_ method: String, _ arguments: [DBusValue] = [], interface: String = player) async throws -> [DBusValue] {
        try await connection.call(
            destination: busName, path: Self.path, interface: interface, method: method, arguments: arguments)
    }
    func get(_ name: String) async throws -> DBusValue? {
        try await call("Get", [.string(Self.player), .string(name)], interface: "org.freedesktop.DBus.Properties")
            .first?.variantValue
    }
    public func isOnBus() async throws -> Bool { try await connection.nameHasOwner(busName) }
    public func openURI(_ uri: String) async throws { _ = try await call("OpenUri", [.string(uri)]) }
    public func setPosition(trackID: String, microseconds: Int64) async throws {
        _ = try await call("SetPosition", [.objectPath(trackID), .int64(microseconds)])
    }
    public func next() async throws { _ = try await call("Next") }
    public func stop() async throws { _ = try await call("Stop") }
    public func play() async throws { _ = try await call("Play") }
    public func pause() async throws { _ = try await call("Pause") }
    public func positionMicroseconds() async throws -> Int64 { try await get("Position")?.int64Value ?? 0 }
    public func playbackStatus() async throws -> String { try await get("PlaybackStatus")?.stringValue ?? "" }
    public func metadata() async throws -> MPRISTrack {
        let metadata = try await get("Metadata")?.stringVariantDictValue ?? [:]
        return MPRISTrack(
            trackID: metadata["mpris:trackid"].flatMap { $0.objectPathValue ?? $0.stringValue },
            url: metadata["xesam:url"]?.stringValue, lengthMicroseconds: metadata["mpris:length"]?.int64Value,
            title: metadata["xesam:title"]?.stringValue, artists: metadata["xesam:artist"]?.stringArrayValue ?? [])
    }
}
