import DBusKit
import EngineAPI
import FoundationEssentials
import PlayerCore

/// org.mpris.MediaPlayer2.TrackList: the queue as MPRIS clients see and edit it, and the
/// signals that tell them how it changed.
extension MPRISService {
    /// org.mpris.MediaPlayer2.TrackList: the queue, each entry an object path.
    func trackListInterface() -> DBusInterface {
        let player = self.player
        let snapshot: @Sendable () -> PlayerSnapshot = { [weak self] in
            self?.published.withLock { $0.snapshot } ?? PlayerSnapshot()
        }
        let idFor: @Sendable (String) -> TrackID? = { path in
            snapshot().queue.first { Self.trackPath($0.id) == path }?.id
        }
        return DBusInterface(
            Self.trackListInterface,
            methods: [
                DBusMethod(
                    "GetTracksMetadata", in: "ao", out: "aa{sv}", argumentNames: ["TrackIds"], resultNames: ["Metadata"]
                ) { arguments in
                    let wanted = arguments.first?.arrayValues?.compactMap(\.objectPathValue) ?? []
                    let state = snapshot()
                    let values = wanted.compactMap { path -> DBusValue? in
                        guard let entry = state.queue.first(where: { Self.trackPath($0.id) == path }) else {
                            return nil
                        }
                        if let now = state.nowPlaying, now.entry.id == entry.id { return Self.metadata(now) }
                        return Self.metadata(entry)
                    }
                    return [.array(elementSignature: "a{sv}", values)]
                },
                DBusMethod("AddTrack", in: "sob", argumentNames: ["Uri", "AfterTrack", "SetAsCurrent"]) {
                    [weak service = self] arguments in
                    guard arguments.count == 3, let uri = arguments[0].stringValue,
                        let after = arguments[1].objectPathValue,
                        let makeCurrent = arguments[2].boolValue
                    else { throw DBusError.invalidArgs("AddTrack takes a URI, a track id and a boolean") }
                    let anchor = after == Self.noTrack ? nil : idFor(after)
                    if after != Self.noTrack && anchor == nil { throw DBusError.invalidArgs("no track \(after)") }
                    try await service?.queueInputs([uri]) { items in
                        // NoTrack means "at the start"; AddTrack never reorders what is there. Added
                        // and made current in one step of the player: no other call runs between.
                        await player.add(items, after: anchor, atStart: after == Self.noTrack, play: makeCurrent)
                    }
                    return []
                },
                DBusMethod("RemoveTrack", in: "o", argumentNames: ["TrackId"]) { arguments in
                    guard let path = arguments.first?.objectPathValue, let id = idFor(path) else {
                        throw DBusError.invalidArgs("no such track")
                    }
                    await player.remove(id)
                    return []
                },
                DBusMethod("GoTo", in: "o", argumentNames: ["TrackId"]) { arguments in
                    guard let path = arguments.first?.objectPathValue, let id = idFor(path) else {
                        throw DBusError.invalidArgs("no such track")
                    }
                    await player.jump(to: id)
                    return []
                },
            ],
            properties: [
                DBusProperty("Tracks", signature: "ao") {
                    .array(elementSignature: "o", snapshot().queue.map { .objectPath(Self.trackPath($0.id)) })
                },
                DBusProperty("CanEditTracks", signature: "b") { .boolean(true) },
            ],
            signals: [
                DBusSignal(
                    "TrackListReplaced",
                    arguments: [(name: "Tracks", signature: "ao"), (name: "CurrentTrack", signature: "o")]),
                DBusSignal(
                    "TrackAdded",
                    arguments: [(name: "Metadata", signature: "a{sv}"), (name: "AfterTrack", signature: "o")]),
                DBusSignal("TrackRemoved", arguments: [(name: "TrackId", signature: "o")]),
                DBusSignal(
                    "TrackMetadataChanged",
                    arguments: [(name: "TrackId", signature: "o"), (name: "Metadata", signature: "a{sv}")]),
            ])
    }

    /// The TrackList signals that take the queue from `old` to `new`.
    static func trackListSignals(from old: PlayerSnapshot, to new: PlayerSnapshot) -> [(String, [DBusValue])] {
        let oldIDs = old.queue.map(\.id)
        let newIDs = new.queue.map(\.id)
        var signals: [(String, [DBusValue])] = []
        if oldIDs != newIDs {
            let kept = Set(oldIDs).intersection(newIDs)
            let keptInOrder = newIDs.filter(kept.contains) == oldIDs.filter(kept.contains)
            if kept.isEmpty || !keptInOrder {
                let current = new.nowPlaying.map { trackPath($0.entry.id) } ?? noTrack
                signals.append(
                    (
                        "TrackListReplaced",
                        [
                            .array(elementSignature: "o", newIDs.map { .objectPath(trackPath($0)) }),
                            .objectPath(current),
                        ]
                    ))
            } else {
                for id in oldIDs where !kept.contains(id) {
                    signals.append(("TrackRemoved", [.objectPath(trackPath(id))]))
                }
                for (index, entry) in new.queue.enumerated() where !kept.contains(entry.id) {
                    let after = index == 0 ? noTrack : trackPath(new.queue[index - 1].id)
                    signals.append(("TrackAdded", [metadata(entry), .objectPath(after)]))
                }
            }
        } else {
            if let now = new.nowPlaying, now.entry.id == old.nowPlaying?.entry.id,
                metadata(now) != metadata(old.nowPlaying)
            {
                signals.append(("TrackMetadataChanged", [.objectPath(trackPath(now.entry.id)), metadata(now)]))
            }
            // Entries that are not playing change when their tags are read ahead.
            for (entry, before) in zip(new.queue, old.queue)
            where entry != before && entry.id != new.nowPlaying?.entry.id {
                let changed = metadata(entry)
                if changed != metadata(before) {
                    signals.append(("TrackMetadataChanged", [.objectPath(trackPath(entry.id)), changed]))
                }
            }
        }
        return signals
    }
}
