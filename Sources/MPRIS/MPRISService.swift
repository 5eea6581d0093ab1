import Basics
import DBusKit
import Dispatch
import EngineAPI
import FoundationEssentials
import PlayerCore
import Synchronization

/// Exports the player on D-Bus as an MPRIS 2 media player at
/// `/org/mpris/MediaPlayer2`: what desktops, lock screens, media keys and
/// playerctl see. Property reads are answered from the latest player snapshot
/// without waiting on the player; methods are forwarded to it.
public final class MPRISService: Sendable {
    /// The well-known bus name Spool owns.
    public static let busName = "org.mpris.MediaPlayer2.spool"
    /// The object path MPRIS prescribes.
    public static let objectPath = "/org/mpris/MediaPlayer2"
    /// The root interface.
    public static let rootInterface = "org.mpris.MediaPlayer2"
    /// The player interface.
    public static let playerInterface = "org.mpris.MediaPlayer2.Player"
    /// The track list interface.
    public static let trackListInterface = "org.mpris.MediaPlayer2.TrackList"
    /// The track id MPRIS reserves for "no track".
    public static let noTrack = "/org/mpris/MediaPlayer2/TrackList/NoTrack"
    /// The error `Seek` and `SetPosition` answer when the current track cannot seek (rather
    /// than doing nothing silently, so `spool seek` can say so).
    public static let cannotSeekError = "org.spool.Error.CannotSeek"

    let connection: any MPRISBus
    let player: Player
    let resolver: TrackResolver
    private let status: SpoolStatusProvider?
    private let supportedMimeTypes: [String]
    private let onQuit: @Sendable () -> Void
    let published = Mutex(Published())
    private let notifier: TrackNotifier?
    /// Saved playlists (the Playlists interface), when the daemon has a place for them.
    let playlists: PlaylistLibrary?
    private let signalQueue = DispatchQueue(label: "spool.mpris.signals")
    /// Reads saved playlists, off the D-Bus and player threads.
    let artQueue = DispatchQueue(label: "spool.mpris.art", qos: .utility)
    /// Follows the current lyrics line: checks it and arms the timer for the next one.
    let lyricsQueue = DispatchQueue(label: "spool.mpris.lyrics")
    let log = Logger(label: "mpris")

    /// How long changes are gathered before one PropertiesChanged goes out.
    static let coalescingDelay: DispatchTimeInterval = .milliseconds(5)

    /// Creates the service; call ``start()`` to export it. `resolver` turns
    /// OpenUri and AddTrack URIs (playlists, directories) into tracks; `status`,
    /// when given, adds `org.spool.Spool1` (cache and downloads) to the object; with `notifications`, a track
    /// that starts playing shows a desktop notification; `playlists` adds the Playlists interface.
    public init(
        connection: any MPRISBus, player: Player, resolver: TrackResolver, supportedMimeTypes: [String],
        status: SpoolStatusProvider? = nil, notifications: Bool = false, playlists: PlaylistLibrary? = nil,
        onQuit: @escaping @Sendable () -> Void
    ) {
        notifier = notifications ? TrackNotifier(connection: connection) : nil
        self.playlists = playlists
        self.status = status
        self.connection = connection
        self.player = player
        self.resolver = resolver
        self.supportedMimeTypes = supportedMimeTypes
        self.onQuit = onQuit
    }

    /// Exports the MPRIS object and starts following the player.
    public func start() async {
        let spool = status.map { [spoolInterface($0)] } ?? []
        let lists = playlists.map { [playlistsInterface($0)] } ?? []
        if let playlists {
            // Counted before the object is exported: the first read already has it.
            let count = await artQueue.perform { playlists.list().count }
            published.withLock { $0.playlistCount = UInt32(clamping: count) }
        }
        connection.export(
            path: Self.objectPath,
            interfaces: [rootInterface(), playerInterface(), trackListInterface()] + lists + spool)
        await player.observe { [weak self] update in self?.playerDidUpdate(update) }
    }

    /// Whether `org.spool.Spool1` is exported (and its signals may go out).
    var hasSpoolInterface: Bool { status != nil }

    /// The track id object path for a queue entry.
    public static func trackPath(_ id: TrackID) -> String { "/org/spool/Track/\(id.rawValue)" }

    /// The queue entry a track id object path names; nil for any other path.
    static func trackID(fromPath path: String) -> TrackID? {
        let prefix = "/org/spool/Track/"
        guard path.hasPrefix(prefix), let number = UInt64(path.dropFirst(prefix.count)),
            trackPath(TrackID(number)) == path
        else { return nil }
        return TrackID(number)
    }

    // MARK: org.mpris.MediaPlayer2

    private func rootInterface() -> DBusInterface {
        let onQuit = self.onQuit
        let mimeTypes = supportedMimeTypes
        return DBusInterface(
            Self.rootInterface,
            methods: [
                DBusMethod("Raise") { _ in [] },
                DBusMethod("Quit") { _ in
                    onQuit()
                    return []
                },
            ],
            properties: [
                DBusProperty("CanQuit", signature: "b") { .boolean(true) },
                DBusProperty("CanRaise", signature: "b") { .boolean(false) },
                DBusProperty("HasTrackList", signature: "b") { .boolean(true) },
                DBusProperty("Identity", signature: "s") { .string("Spool") },
                DBusProperty("DesktopEntry", signature: "s") { .string("spool") },
                DBusProperty("SupportedUriSchemes", signature: "as") {
                    .array(elementSignature: "s", ["file", "http", "https"].map(DBusValue.string))
                },
                DBusProperty("SupportedMimeTypes", signature: "as") {
                    .array(elementSignature: "s", mimeTypes.map(DBusValue.string))
                },
            ])
    }

    // MARK: org.mpris.MediaPlayer2.Player

    private func playerInterface() -> DBusInterface {
        let player = self.player
        let read: @Sendable (String) -> DBusValue = { [weak self] name in
            self?.published.withLock { Self.playerProperties($0.snapshot)[name] } ?? .boolean(false)
        }
        return DBusInterface(
            Self.playerInterface,
            methods: [
                DBusMethod("Next") { _ in
                    await player.next()
                    return []
                },
                DBusMethod("Previous") { _ in
                    await player.previous()
                    return []
                },
                DBusMethod("Pause") { _ in
                    await player.pause()
                    return []
                },
                DBusMethod("PlayPause") { _ in
                    await player.playPause()
                    return []
                },
                DBusMethod("Stop") { _ in
                    await player.stop()
                    return []
                },
                DBusMethod("Play") { _ in
                    await player.play()
                    return []
                },
                DBusMethod("Seek", in: "x", argumentNames: ["Offset"]) { arguments in
                    guard case .int64(let offset) = arguments.first else {
                        throw DBusError.invalidArgs("Seek takes an offset in microseconds")
                    }
                    // Read, decided and applied in one step of the player: nothing runs in between.
                    if let refusal = await player.seek(by: .microseconds(offset)) {
                        throw DBusError(name: Self.cannotSeekError, message: refusal)
                    }
                    return []
                },
                DBusMethod("SetPosition", in: "ox", argumentNames: ["TrackId", "Position"]) { arguments in
                    guard arguments.count == 2, case .objectPath(let track) = arguments[0],
                        case .int64(let micros) = arguments[1]
                    else { throw DBusError.invalidArgs("SetPosition takes a track id and a position") }
                    // A path that names no queue entry is a stale id: ignored, as the spec asks (and
                    // so are negative positions and positions past the end, in the player).
                    guard let id = Self.trackID(fromPath: track) else { return [] }
                    if let refusal = await player.setPosition(of: id, to: .microseconds(micros)) {
                        throw DBusError(name: Self.cannotSeekError, message: refusal)
                    }
                    return []
                },
                DBusMethod("OpenUri", in: "s", argumentNames: ["Uri"]) { [weak service = self] arguments in
                    guard case .string(let text) = arguments.first else {
                        throw DBusError.invalidArgs("OpenUri takes a URI")
                    }
                    try await service?.queueInputs([text], replacing: true) { await player.open($0) }
                    return []
                },
            ],
            properties: [
                DBusProperty("PlaybackStatus", signature: "s") { read("PlaybackStatus") },
                DBusProperty(
                    "LoopStatus", signature: "s", access: .readWrite, get: { read("LoopStatus") },
                    set: { value in
                        guard let text = value.stringValue, let mode = LoopMode(rawValue: text) else {
                            throw DBusError.invalidArgs("LoopStatus is one of None, Track, Playlist")
                        }
                        await player.setLoop(mode)
                    }),
                DBusProperty(
                    "Shuffle", signature: "b", access: .readWrite, get: { read("Shuffle") },
                    set: { value in
                        guard let on = value.boolValue else { throw DBusError.invalidArgs("Shuffle is a boolean") }
                        await player.setShuffle(on)
                    }),
                DBusProperty(
                    "Rate", signature: "d", access: .readWrite, get: { read("Rate") },
                    set: { value in
                        guard let rate = value.doubleValue else { throw DBusError.invalidArgs("Rate is a double") }
                        await player.setRate(rate)
                    }),
                DBusProperty("Metadata", signature: "a{sv}") { read("Metadata") },
                DBusProperty(
                    "Volume", signature: "d", access: .readWrite, get: { read("Volume") },
                    set: { value in
                        guard let volume = value.doubleValue else { throw DBusError.invalidArgs("Volume is a double") }
                        await player.setVolume(volume)
                    }),
                DBusProperty("Position", signature: "x") { [weak self] in
                    .int64(Int64((self?.shownPosition() ?? .zero).microseconds))
                },
                DBusProperty("MinimumRate", signature: "d") { read("MinimumRate") },
                DBusProperty("MaximumRate", signature: "d") { read("MaximumRate") },
                DBusProperty("CanGoNext", signature: "b") { read("CanGoNext") },
                DBusProperty("CanGoPrevious", signature: "b") { read("CanGoPrevious") },
                DBusProperty("CanPlay", signature: "b") { read("CanPlay") },
                DBusProperty("CanPause", signature: "b") { read("CanPause") },
                DBusProperty("CanSeek", signature: "b") { read("CanSeek") },
                DBusProperty("CanControl", signature: "b") { .boolean(true) },
            ],
            signals: [DBusSignal("Seeked", arguments: [(name: "Position", signature: "x")])])
    }

    /// The tracks a URI stands for (a track, a local playlist, a directory) and the entries its
    /// list left out, or an InvalidArgs error.
    static func tracks(_ text: String, _ resolver: TrackResolver) async throws(DBusError) -> PlaylistEntries {
        do {
            return try await resolver.entries(text)
        } catch {
            throw DBusError.invalidArgs(error.description)
        }
    }

    /// The Player properties that follow the snapshot (all but Position, which is never signalled).
    static func playerProperties(_ snapshot: PlayerSnapshot) -> [String: DBusValue] {
        let loaded = snapshot.nowPlaying != nil
        return [
            "PlaybackStatus": .string(snapshot.status.rawValue),
            "LoopStatus": .string(snapshot.loop.rawValue),
            "Shuffle": .boolean(snapshot.shuffle),
            "Metadata": metadata(snapshot.nowPlaying),
            "Volume": .double(snapshot.volume),
            "Rate": .double(snapshot.rate),
            "MinimumRate": .double(snapshot.minimumRate),
            "MaximumRate": .double(snapshot.maximumRate),
            "CanGoNext": .boolean(snapshot.canGoNext),
            "CanGoPrevious": .boolean(snapshot.canGoPrevious),
            "CanPlay": .boolean(snapshot.hasTracks),
            "CanPause": .boolean(loaded),
            "CanSeek": .boolean(
                loaded && snapshot.nowPlaying?.seekable == true && snapshot.nowPlaying?.duration != nil),
        ]
    }

    /// MPRIS metadata for a queue entry that is not playing (what the queue knows of it: the
    /// tags heard when it played or read ahead from its bytes).
    static func metadata(_ entry: QueueEntry) -> DBusValue {
        metadata(NowPlaying(entry: entry, tags: entry.tags ?? TrackTags(), duration: entry.duration))
    }

    /// MPRIS metadata for a track (only the NoTrack id when there is none).
    static func metadata(_ track: NowPlaying?) -> DBusValue {
        guard let track else {
            return .stringVariantDict([("mpris:trackid", .objectPath(noTrack))])
        }
        var entries: [(String, DBusValue)] = [
            ("mpris:trackid", .objectPath(trackPath(track.entry.id))),
            ("xesam:url", .string(track.entry.url.absoluteString)),
            ("xesam:title", .string(track.displayTitle)),
        ]
        let tags = track.shownTags
        let strings: (([String]) -> DBusValue) = { .array(elementSignature: "s", $0.map(DBusValue.string)) }
        if !tags.artists.isEmpty { entries.append(("xesam:artist", strings(tags.artists))) }
        if let album = tags.album { entries.append(("xesam:album", .string(album))) }
        if !tags.albumArtists.isEmpty { entries.append(("xesam:albumArtist", strings(tags.albumArtists))) }
        if !tags.genres.isEmpty { entries.append(("xesam:genre", strings(tags.genres))) }
        if let number = tags.trackNumber { entries.append(("xesam:trackNumber", .int32(Int32(clamping: number)))) }
        if let disc = tags.discNumber { entries.append(("xesam:discNumber", .int32(Int32(clamping: disc)))) }
        if let comment = tags.comment { entries.append(("xesam:comment", strings([comment]))) }
        if let date = tags.date { entries.append(("xesam:contentCreated", .string(date))) }
        if let length = track.duration { entries.append(("mpris:length", .int64(Int64(length.microseconds)))) }
        if let art = tags.artURL { entries.append(("mpris:artUrl", .string(art.absoluteString))) }
        if let text = track.lyrics?.plainText, !text.isEmpty { entries.append(("xesam:asText", .string(text))) }
        return .stringVariantDict(entries)
    }

    // MARK: Signals

    private func playerDidUpdate(_ update: PlayerUpdate) {
        switch update {
        case .changed(let snapshot):
            let schedule = published.withLock { state -> Bool in
                // A playback error of the player's own is newer than an input's.
                if snapshot.lastError != nil, snapshot.lastError != state.snapshot.lastError { state.inputError = nil }
                state.snapshot = snapshot
                // The first snapshot is what GetAll answers from the start: nothing changed yet.
                if state.signalled == nil {
                    state.signalled = Self.playerProperties(snapshot)
                    state.signalledSnapshot = snapshot
                    state.signalledLastError = snapshot.lastError
                    return false
                }
                defer { state.flushScheduled = true }
                return !state.flushScheduled
            }
            if schedule { scheduleFlush() }
            followLyrics()
        case .seeked(let position):
            connection.emitSignal(
                path: Self.objectPath, interface: Self.playerInterface, name: "Seeked",
                arguments: [.int64(Int64(position.microseconds))])
            followLyrics()
        }
    }

    /// Sends the changes gathered over the next ``coalescingDelay`` as one batch.
    func scheduleFlush() {
        signalQueue.asyncAfter(deadline: .now() + Self.coalescingDelay) { [weak self] in
            self?.flushPropertyChanges()
        }
    }

    /// Sends one PropertiesChanged with every Player property whose value changed since the last one.
    private func flushPropertyChanges() {
        // LastError, Buffering, Metered, Interrupted, Live and Lyrics of org.spool.Spool1.
        var spoolChanges: [(String, DBusValue)] = []
        var notice: (metadata: [String: DBusValue], playing: Bool)?
        let (changed, trackList) = published.withLock { state -> ([(String, DBusValue)], [(String, [DBusValue])]) in
            state.flushScheduled = false
            let current = Self.playerProperties(state.snapshot)
            let changed = current.filter { state.signalled?[$0.key] != $0.value }
                .sorted { $0.key < $1.key }
                .map { ($0.key, $0.value) }
            state.signalled = current
            notice = (
                current["Metadata"]?.stringVariantDictValue ?? [:], current["PlaybackStatus"]?.stringValue == "Playing"
            )
            let trackList = state.signalledSnapshot.map { Self.trackListSignals(from: $0, to: state.snapshot) } ?? []
            if let before = state.signalledSnapshot {
                let lastError = state.inputError ?? state.snapshot.lastError
                if lastError != state.signalledLastError {
                    spoolChanges.append(("LastError", .string(lastError ?? "")))
                    state.signalledLastError = lastError
                }
                if before.buffering != state.snapshot.buffering {
                    spoolChanges.append(("Buffering", .boolean(state.snapshot.buffering)))
                }
                if before.metered != state.snapshot.metered {
                    spoolChanges.append(("Metered", .boolean(state.snapshot.metered)))
                }
                if before.interrupted != state.snapshot.interrupted {
                    spoolChanges.append(("Interrupted", .boolean(state.snapshot.interrupted)))
                }
                if before.nowPlaying?.live != state.snapshot.nowPlaying?.live {
                    spoolChanges.append(("Live", Self.liveValue(state.snapshot.nowPlaying)))
                }
                if before.nowPlaying?.variant != state.snapshot.nowPlaying?.variant {
                    spoolChanges.append(("Variant", Self.variantValue(state.snapshot.nowPlaying)))
                }
                // Once per track (never per line): clients following LyricsLine need the lines it counts.
                if before.nowPlaying?.lyrics?.lines != state.snapshot.nowPlaying?.lyrics?.lines {
                    spoolChanges.append(("Lyrics", Self.lyricsValue(state.snapshot.nowPlaying?.lyrics)))
                }
            }
            state.signalledSnapshot = state.snapshot
            return (changed, trackList)
        }
        if let notifier, let notice { notifier.consider(metadata: notice.metadata, playing: notice.playing) }
        if !spoolChanges.isEmpty, status != nil {
            connection.emitPropertiesChanged(
                path: Self.objectPath, interface: Self.spoolInterface, changed: spoolChanges)
        }
        for (name, arguments) in trackList {
            connection.emitSignal(
                path: Self.objectPath, interface: Self.trackListInterface, name: name, arguments: arguments)
        }
        guard !changed.isEmpty else { return }
        log.debug("PropertiesChanged: \(changed.map(\.0).joined(separator: ", "))")
        connection.emitPropertiesChanged(path: Self.objectPath, interface: Self.playerInterface, changed: changed)
    }
}

extension Duration {
    /// Whole microseconds, as MPRIS counts time, saturating at the ends of `Int64`
    /// (a client's Seek or SetPosition can ask for any position).
    var microseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        let (total, carry) = whole.addingReportingOverflow(attoseconds / 1_000_000_000_000)
        guard !overflow, !carry else { return seconds < 0 ? .min : .max }
        return total
    }
}
