import Basics
import DBusKit
import FoundationEssentials
import Glibc
import MPRIS
import PlayerCore

/// How long `spool play` waits for the first track to start or fail.
let startWaitLimit: Duration = .seconds(5)
/// How often the position is sampled while waiting (MPRIS never signals it).
let startSampleInterval: Duration = .milliseconds(100)

/// `spool play|open [--no-wait] INPUT...`: replaces the queue, then waits until the first track
/// starts (exit 0) or fails (one line, exit 2), at most ``startWaitLimit``.
@Sendable func runPlay(_ arguments: [String], command: String) async throws(CommandFailure) {
    let wait = !arguments.contains("--no-wait")
    let inputs = try checkedInputs(arguments.filter { $0 != "--no-wait" }, command: command)
    let client = try SpoolClient.connect()
    guard wait else {
        try await client.spool("Play", [.stringArray(inputs)])
        return
    }
    let rule =
        "type='signal',sender='\(client.name)',path='\(MPRISService.objectPath)',"
        + "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"
    let signals: AsyncStream<DBusSignalMessage>
    do {
        signals = try await client.connection.subscribe(matching: rule)
    } catch {
        throw .failed("cannot watch the daemon's signals: \(error)")
    }
    let before = try await client.properties(MPRISService.playerInterface)["Metadata"]?.stringVariantDictValue?[
        "mpris:trackid"]?
        .objectPathValue
    try await client.spool("Play", [.stringArray(inputs)])
    // A remote playlist is fetched after the call returns: the queue changes later.
    let playlists = inputs.filter { (try? TrackInput.parse($0).get())?.isRemotePlaylist == true }
    try await waitForStart(
        client, signals, replacing: playlists.isEmpty ? nil : before ?? MPRISService.noTrack,
        playlistNames: playlists.map { URL(string: $0)?.lastPathComponent ?? $0 })
}

/// `spool add INPUT...`: checks the inputs, then appends them to the queue.
@Sendable func runAdd(_ arguments: [String]) async throws(CommandFailure) {
    let inputs = try checkedInputs(arguments, command: "add")
    try await SpoolClient.connect().spool("Add", [.stringArray(inputs)])
}

/// The arguments as inputs for the daemon, each checked by ``TrackInput`` (malformed: exit 1;
/// a local path that does not exist, or is neither a regular file nor a
/// directory: exit 2), relative paths made absolute against the
/// current directory.
func checkedInputs(_ arguments: [String], command: String) throws(CommandFailure) -> [String] {
    if let option = arguments.first(where: { $0.hasPrefix("-") && $0 != "-" }) {
        throw .usage("unknown option '\(option)' for 'spool \(command)'; see 'spool \(command) --help'")
    }
    guard !arguments.isEmpty else {
        throw .usage("'spool \(command)' needs at least one URL, path, playlist or directory")
    }
    let directory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    return try arguments.map { argument throws(CommandFailure) -> String in
        switch TrackInput.parse(argument) {
        case .failure(let problem):
            throw .usage(problem.description)
        case .success(.remote):
            return argument
        case .success(.local(let path)):
            let expanded = BaseDirectories(environment: ProcessInfo.processInfo.environment).expandingTilde(path)
            let absolute =
                expanded.hasPrefix("/")
                ? expanded : URL(fileURLWithPath: expanded, relativeTo: directory).standardizedFileURL.path
            // The daemon would wait forever on a FIFO's open or read a device without end.
            var info = stat()
            guard stat(absolute, &info) == 0 else { throw .failed("no such file or directory: \(absolute)") }
            guard [S_IFREG, S_IFDIR].contains(info.st_mode & S_IFMT) else {
                throw .failed("\(absolute): not a regular file")
            }
            return argument.hasPrefix("file:") ? argument : absolute
        }
    }
}

/// Waits until the first track of the queue just opened starts or fails (see ``StartWatch``);
/// with `replacing`, the queue is replaced later (once the remote playlists `playlistNames`
/// have arrived) and `replacing` is the track current before.
private func waitForStart(
    _ client: SpoolClient, _ signals: AsyncStream<DBusSignalMessage>, replacing: String?,
    playlistNames: [String] = []
) async throws(CommandFailure) {
    let properties = try await client.properties(MPRISService.playerInterface)
    let metadata = properties["Metadata"]?.stringVariantDictValue ?? [:]
    var watch: StartWatch
    if let replacing {
        watch = StartWatch(track: replacing, name: "the playlist", replacing: true, playlistNames: playlistNames)
    } else {
        guard let track = metadata["mpris:trackid"]?.objectPathValue, track != MPRISService.noTrack else { return }
        watch = StartWatch(track: track, name: metadata["xesam:title"]?.stringValue ?? "the track")
    }
    let (observations, observe) = AsyncStream.makeStream(of: StartObservation.self)
    let forward = Task {
        for await signal in signals {
            for observation in startObservations(signal) { observe.yield(observation) }
        }
    }
    let sample = Task {
        while !Task.isCancelled {
            if let position = try? await client.call(
                "org.freedesktop.DBus.Properties", "Get", [.string(MPRISService.playerInterface), .string("Position")]
            ).first?.variantValue?.int64Value {
                observe.yield(.position(position))
            }
            // A track that fails within milliseconds goes Stopped → Playing → Stopped between two
            // signals, and none is sent: the status is read too.
            if replacing == nil,
                let status = try? await client.call(
                    "org.freedesktop.DBus.Properties", "Get",
                    [.string(MPRISService.playerInterface), .string("PlaybackStatus")]
                ).first?.variantValue?.stringValue
            {
                observe.yield(.status(status))
            }
            try? await Task.sleep(for: startSampleInterval)
        }
    }
    let deadline = Task {
        try? await Task.sleep(for: startWaitLimit)
        observe.yield(.timeout)
    }
    defer {
        forward.cancel()
        sample.cancel()
        deadline.cancel()
    }
    if replacing == nil, let status = properties["PlaybackStatus"]?.stringValue { observe.yield(.status(status)) }
    for await observation in observations {
        var verdict = watch.observe(observation)
        if verdict == .readLastError {
            let error = try? await client.call(
                "org.freedesktop.DBus.Properties", "Get", [.string(MPRISService.spoolInterface), .string("LastError")])
            verdict = watch.observe(.errorAfterwards(error?.first?.variantValue?.stringValue ?? ""))
        }
        switch verdict {
        case .waiting, .readLastError:
            continue
        case .warning(let message):
            complain(message)
        case .started:
            return
        case .failed(let message):
            throw .failed("cannot play \(message)")
        case .undecided:
            complain(
                "\(watch.name) has not started after \(startWaitLimit.forPeople); 'spool status' shows how it goes")
            return
        }
    }
}

/// The observations in one PropertiesChanged signal of the daemon.
func startObservations(_ signal: DBusSignalMessage) -> [StartObservation] {
    guard signal.arguments.count >= 2, let interface = signal.arguments[0].stringValue,
        let changed = signal.arguments[1].stringVariantDictValue
    else { return [] }
    var observations: [StartObservation] = []
    if interface == MPRISService.spoolInterface, let error = changed["LastError"]?.stringValue {
        observations.append(.lastError(error))
    }
    if interface == MPRISService.playerInterface {
        if let track = changed["Metadata"]?.stringVariantDictValue?["mpris:trackid"]?.objectPathValue {
            observations.append(.track(track))
        }
        if let status = changed["PlaybackStatus"]?.stringValue { observations.append(.status(status)) }
    }
    return observations
}
