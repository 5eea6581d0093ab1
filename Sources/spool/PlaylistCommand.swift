import Basics
import DBusKit
import FoundationEssentials
import Glibc
import MPRIS

/// `spool playlist save|ls|load|add|rm`: saved playlists, through the daemon (which writes them
/// as extended M3U in `$XDG_DATA_HOME/spool/playlists` and lists the music folder's too).
func runPlaylist(_ arguments: [String]) async throws(CommandFailure) {
    let actions = ["save", "ls", "load", "add", "rm"]
    guard let action = arguments.first else { throw .usage("'spool playlist' needs one of save, ls, load, add, rm") }
    guard actions.contains(action) else {
        throw .usage(
            "unknown playlist command '\(action)'\(hint(action, among: actions)); use save, ls, load, add or rm")
    }
    let rest = Array(arguments.dropFirst())
    let client = try SpoolClient.connect()
    switch action {
    case "ls":
        let byDate = rest == ["--by-date"]
        guard rest.isEmpty || byDate else { throw .usage("'spool playlist ls' takes only --by-date") }
        let reply = try await client.call(
            MPRISService.playlistsInterface, "GetPlaylists",
            [.uint32(0), .uint32(.max), .string(byDate ? "ModifiedDate" : "Alphabetical"), .boolean(byDate)])
        let names = reply.first?.arrayValues?.compactMap { $0.structureFields?[1].stringValue } ?? []
        names.forEach { print($0) }
        if names.isEmpty { writeAll("no saved playlists\n", to: STDERR_FILENO) }
    case "save", "load", "rm":
        guard rest.count == 1, let name = rest.first else { throw .usage("'spool playlist \(action)' needs one NAME") }
        switch action {
        case "save":
            let count = try await client.spool("SavePlaylist", [.string(name)]).first?.uint32Value ?? 0
            print("saved \(count) track\(count == 1 ? "" : "s") as \(name)")
        case "load":
            let path = try await playlistPath(named: name, client)
            _ = try await client.call(MPRISService.playlistsInterface, "ActivatePlaylist", [.objectPath(path)])
        default:
            guard try await client.spool("RemovePlaylist", [.string(name)]).first?.boolValue == true else {
                throw .failed("no playlist of Spool's is called '\(name)' (see 'spool playlist ls')")
            }
        }
    default:
        guard rest.count >= 2 else { throw .usage("'spool playlist add' needs a NAME and at least one URL or path") }
        let inputs = try checkedInputs(Array(rest.dropFirst()), command: "playlist add")
        _ = try await client.spool("AddToPlaylist", [.string(rest[0]), .stringArray(inputs)])
    }
}

/// The object path of the playlist called `name`, as the daemon lists it.
private func playlistPath(named name: String, _ client: SpoolClient) async throws(CommandFailure) -> String {
    let reply = try await client.call(
        MPRISService.playlistsInterface, "GetPlaylists",
        [.uint32(0), .uint32(.max), .string("Alphabetical"), .boolean(false)])
    let playlists = reply.first?.arrayValues?.compactMap(\.structureFields) ?? []
    guard let match = playlists.first(where: { $0[1].stringValue == name }), let path = match[0].objectPathValue else {
        let names = playlists.compactMap { $0[1].stringValue }
        throw .failed("no playlist is called '\(name)'\(hint(name, among: names))")
    }
    return path
}
