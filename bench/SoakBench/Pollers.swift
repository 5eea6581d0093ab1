import DBusKit
import Foundation
import Synchronization
import TestSupport

/// Four MPRIS clients, each on its own connection, reading properties as desktop widgets and
/// status bars do (every 50–300 ms); the last one also reads the TrackList and Spool's own
/// interface, and the first follows PropertiesChanged as playerctl does.
final class Pollers: Sendable {
    /// The distinct values of `LastError` seen (why tracks failed), with how often each appeared anew.
    let lastErrors = Mutex<[String: Int]>([:])
    /// Signals the following client received.
    let signalsReceived = Atomic<Int>(0)
    private let clients: [SoakClient]

    init(address: String, ledger: Ledger) throws {
        clients = try (0..<4).map { _ in try SoakClient(address: address, ledger: ledger) }
    }

    /// Polls until `deadline`.
    func run(seed: UInt64, until deadline: ContinuousClock.Instant) async {
        let rule = "type='signal',path='\(SoakClient.path)'"
        let follower: Task<Void, Never>? = (try? await clients[0].connection.subscribe(matching: rule)).map { stream in
            Task { [self] in
                for await _ in stream { signalsReceived.wrappingAdd(1, ordering: .relaxed) }
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for (index, client) in clients.enumerated() {
                group.addTask { await self.poll(client, index: index, seed: seed &+ UInt64(index), until: deadline) }
            }
        }
        follower?.cancel()
        for client in clients { client.close() }
    }

    private func poll(_ client: SoakClient, index: Int, seed: UInt64, until deadline: ContinuousClock.Instant) async {
        var random = SeededGenerator(seed: seed)
        var lastError: String?
        while ContinuousClock.now < deadline {
            switch random.next(below: index == 3 ? 8 : 5) {
            case 0: _ = await client.get("poll: Get Position", SoakClient.player, "Position")
            case 1: _ = await client.get("poll: Get Metadata", SoakClient.player, "Metadata")
            case 2: _ = await client.get("poll: Get PlaybackStatus", SoakClient.player, "PlaybackStatus")
            case 3, 4: _ = await client.getAll("poll: GetAll Player", SoakClient.player)
            case 5: _ = await client.getAll("poll: GetAll TrackList", SoakClient.trackList)
            case 6:
                if let tracks = await client.tracks("poll: Get Tracks"), !tracks.isEmpty {
                    let some = (0..<3).map { _ in DBusValue.objectPath(tracks[random.next(below: tracks.count)]) }
                    await client.call(
                        "poll: GetTracksMetadata", SoakClient.trackList, "GetTracksMetadata",
                        [.array(elementSignature: "o", some)])
                }
            default:
                if let spool = await client.getAll("poll: GetAll Spool1", SoakClient.spool),
                    let error = spool["LastError"]?.stringValue, error != lastError
                {
                    lastError = error
                    if !error.isEmpty { lastErrors.withLock { $0[Ledger.shortened(error), default: 0] += 1 } }
                }
            }
            try? await Task.sleep(for: .milliseconds(50 + random.next(below: 250)))
        }
    }
}
