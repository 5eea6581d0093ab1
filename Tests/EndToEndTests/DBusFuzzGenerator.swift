import DBusKit
import TestSupport

/// One message of the fuzz and what the daemon owes for it.
struct FuzzStep {
    /// What the fuzz sends.
    let message: RawMessage
    /// Whether an answer is owed (a method call without NO_REPLY_EXPECTED).
    var expectsReply: Bool { message.kind == .methodCall && !message.noReply }
    /// The kind of abuse, for the tally.
    let label: String
}

/// Random and malformed messages for Spool's D-Bus service, from a seed: calls
/// to every exported member with wrong, missing and extra arguments and with
/// awkward values of the right type, property reads and writes of any type,
/// unknown objects, interfaces and members, huge and deeply nested bodies,
/// signals unicast to the daemon or broadcast, and replies nobody asked for.
/// Every name and value is valid D-Bus (libdbus would abort the sender otherwise);
/// what is wrong is what the daemon must refuse. Nothing it is told to play exists
/// or answers, so the fuzz makes no sound and waits on no network.
struct DBusFuzzGenerator {
    /// The daemon's unique name (its well-known name is used too).
    let daemon: String
    private var random: SeededGenerator

    init(seed: UInt64, daemon: String) {
        random = SeededGenerator(seed: seed)
        self.daemon = daemon
    }

    static let root = "org.mpris.MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"
    static let trackList = "org.mpris.MediaPlayer2.TrackList"
    static let spool = "org.spool.Spool1"
    static let properties = "org.freedesktop.DBus.Properties"
    static let objectPath = "/org/mpris/MediaPlayer2"

    /// Every method the daemon exports, by interface, with its input signature.
    static let methods: [(interface: String, member: String, signature: String)] = [
        (root, "Raise", ""), (root, "Quit", ""),
        (player, "Next", ""), (player, "Previous", ""), (player, "Pause", ""), (player, "PlayPause", ""),
        (player, "Stop", ""), (player, "Play", ""), (player, "Seek", "x"), (player, "SetPosition", "ox"),
        (player, "OpenUri", "s"),
        (trackList, "GetTracksMetadata", "ao"), (trackList, "AddTrack", "sob"), (trackList, "RemoveTrack", "o"),
        (trackList, "GoTo", "o"),
        (spool, "Play", "as"), (spool, "Add", "as"), (spool, "Queue", ""), (spool, "CacheStats", ""),
        (spool, "CacheEntries", "s"), (spool, "ClearCache", "s"), (spool, "Prefetch", "as"),
        (properties, "Get", "ss"), (properties, "GetAll", "s"), (properties, "Set", "ssv"),
        ("org.freedesktop.DBus.Introspectable", "Introspect", ""), ("org.freedesktop.DBus.Peer", "Ping", ""),
        ("org.freedesktop.DBus.Peer", "GetMachineId", ""),
    ]

    /// Every property, by interface.
    static let propertyNames: [(interface: String, names: [String])] = [
        (
            root,
            [
                "CanQuit", "CanRaise", "HasTrackList", "Identity", "DesktopEntry", "SupportedUriSchemes",
                "SupportedMimeTypes",
            ]
        ),
        (
            player,
            [
                "PlaybackStatus", "LoopStatus", "Rate", "Shuffle", "Metadata", "Volume", "Position", "MinimumRate",
                "MaximumRate", "CanGoNext", "CanGoPrevious", "CanPlay", "CanPause", "CanSeek", "CanControl",
            ]
        ),
        (trackList, ["Tracks", "CanEditTracks"]),
        (
            spool,
            [
                "LastError", "Buffering", "Metered", "Interrupted", "Lyrics", "LyricsLine", "CachedRanges",
                "ContentLength", "DownloadState", "Prefetches", "Preloads",
            ]
        ),
    ]

    /// The next message.
    mutating func next() -> FuzzStep {
        var step: FuzzStep
        switch random.next(below: 100) {
        case 0..<22: step = wrongArguments()
        case 22..<36: step = awkwardValues()
        case 36..<54: step = propertyCall()
        case 54..<60: step = introspectOrPing()
        case 60..<70: step = unknownTarget()
        case 70..<76: step = hugeOrDeep()
        case 76..<88: step = unsolicitedSignal()
        default: step = unsolicitedReply()
        }
        if step.message.kind == .methodCall, random.next(below: 20) == 0 {
            var message = step.message
            message.noReply = true
            step = FuzzStep(message: message, label: "no reply wanted")
        }
        return step
    }

    // MARK: Calls

    private mutating func call(_ interface: String?, _ member: String, _ body: [RawArgument], path: String = objectPath)
        -> RawMessage
    {
        var message = RawMessage(.methodCall, destination: pick([daemon, daemon, "org.mpris.MediaPlayer2.spool"]))
        message.path = path
        // Some calls leave the interface out: the daemon must find the member by name alone.
        message.interface = random.next(below: 10) == 0 ? nil : interface
        message.member = member
        message.body = body
        return message
    }

    /// A real member with arguments of the wrong types, too few or too many.
    private mutating func wrongArguments() -> FuzzStep {
        let method = pick(Self.methods)
        var body: [RawArgument] = randomValues().map { .value($0) }
        if DBusValue.signature(of: body.compactMap { if case .value(let v) = $0 { v } else { nil } })
            == method.signature
        {
            body.append(.value(.int32(1)))  // one too many
        }
        if method.member == "Quit", body.isEmpty { body = [.value(.string("no"))] }  // a real Quit would end the test
        return FuzzStep(message: call(method.interface, method.member, body), label: "wrong arguments")
    }

    /// The right signature with values the daemon must refuse or shrug off.
    private mutating func awkwardValues() -> FuzzStep {
        let player = Self.player
        let spool = Self.spool
        let trackList = Self.trackList
        let message: RawMessage
        switch random.next(below: 11) {
        case 0: message = call(player, "Seek", [.value(.int64(awkwardInteger()))])
        case 1:
            message = call(player, "SetPosition", [.value(.objectPath(trackID())), .value(.int64(awkwardInteger()))])
        case 2: message = call(player, "OpenUri", [.value(.string(uri()))])
        case 3:
            let arguments: [RawArgument] = [
                .value(.string(uri())), .value(.objectPath(trackID())), .value(.boolean(random.next() & 1 == 0)),
            ]
            message = call(trackList, "AddTrack", arguments)
        case 4: message = call(trackList, pick(["GoTo", "RemoveTrack"]), [.value(.objectPath(trackID()))])
        case 5:
            let count = pick([0, 1, 1000, 20_000])
            message = call(trackList, "GetTracksMetadata", [.repeated(.objectPath(trackID()), count: count)])
        case 6:
            message = call(
                spool, pick(["Play", "Add", "Prefetch"]),
                [.value(.stringArray((0..<random.next(below: 4)).map { _ in uri() }))])
        case 7:
            message = call(
                spool, pick(["CacheEntries", "ClearCache"]),
                [.value(.string(pick(["", "no such", "../../etc", hugeString()])))])
        case 8: message = call(spool, pick(["Queue", "CacheStats"]), [])
        case 9: message = call(player, pick(["Next", "Previous", "Pause", "PlayPause", "Stop", "Play"]), [])
        default: message = call(Self.root, "Raise", [])
        }
        return FuzzStep(message: message, label: "awkward values")
    }

    /// Properties.Get, GetAll and Set with real and made-up names and values of any type.
    private mutating func propertyCall() -> FuzzStep {
        let owner = pick(Self.propertyNames)
        let interface = pick([
            owner.interface, owner.interface, owner.interface, "", "org.example.Nothing", Self.properties,
        ])
        let name = random.next(below: 8) == 0 ? identifier() : pick(owner.names)
        var body: [RawArgument]
        switch random.next(below: 4) {
        case 0: body = [.value(.string(interface)), .value(.string(name))]
        case 1: body = [.value(.string(interface))]
        default:
            // The dangerous writes are the common case: Volume, Rate, LoopStatus and Shuffle.
            let target = random.next(below: 3) == 0 ? name : pick(["Volume", "Rate", "LoopStatus", "Shuffle"])
            body = [
                .value(.string(random.next(below: 3) == 0 ? interface : Self.player)), .value(.string(target)),
                .variant(.value(propertyValue())),
            ]
        }
        let member = pick(["Get", "GetAll", "Set"])
        if random.next(below: 6) == 0 { body = Array(body.prefix(random.next(below: body.count + 1))) }
        return FuzzStep(message: call(Self.properties, member, body), label: "properties")
    }

    private mutating func introspectOrPing() -> FuzzStep {
        let path = pick([Self.objectPath, "/", "/org", "/org/mpris", objectPath(), "/org/spool/Track/1"])
        let target = pick([
            ("org.freedesktop.DBus.Introspectable", "Introspect"), ("org.freedesktop.DBus.Peer", "Ping"),
            ("org.freedesktop.DBus.Peer", "GetMachineId"),
        ])
        return FuzzStep(message: call(target.0, target.1, [], path: path), label: "introspect or ping")
    }

    /// Unknown objects, interfaces and members, with or without arguments.
    private mutating func unknownTarget() -> FuzzStep {
        let interface = pick([
            Self.player, Self.spool, "org.example.\(identifier())", "org.freedesktop.DBus.\(identifier())",
        ])
        let member = random.next(below: 3) == 0 ? pick(Self.methods).member : identifier()
        let path = random.next(below: 2) == 0 ? objectPath() : Self.objectPath
        var body = randomValues().map { RawArgument.value($0) }
        if member == "Quit", body.isEmpty { body = [.value(.boolean(true))] }
        return FuzzStep(message: call(interface, member, body, path: path), label: "unknown target")
    }

    /// Megabyte strings and arrays, and nesting up to the protocol's limits, to real members and nowhere.
    private mutating func hugeOrDeep() -> FuzzStep {
        let argument: RawArgument
        switch random.next(below: 5) {
        case 0: argument = .value(.string(hugeString()))
        case 1: argument = .bytes(count: largeCount())
        case 2:
            // Just over the most values a call may carry: refused before it is all read.
            let overLimit = RawArgument.repeated(.objectPath("/"), count: 270_000)
            argument = random.next(below: 4) == 0 ? .variant(overLimit) : .variant(.bytes(count: largeCount()))
        case 3: argument = .value(deepVariant(depth: 1 + random.next(below: 63)))
        default: argument = .value(deepContainer(depth: 1 + random.next(below: 31)))
        }
        let message: RawMessage
        switch random.next(below: 3) {
        case 0:
            let target = pick(["Volume", "Rate", "LoopStatus", "Shuffle", "Metadata", identifier()])
            message = call(
                Self.properties, "Set",
                [.value(.string(Self.player)), .value(.string(target)), argumentAsVariant(argument)])
        case 1:
            let method = pick(Self.methods)
            message = call(method.interface, method.member, [argument])
        default:
            message = call("org.example.\(identifier())", identifier(), [argument], path: objectPath())
        }
        return FuzzStep(message: message, label: "huge or deep")
    }

    private func argumentAsVariant(_ argument: RawArgument) -> RawArgument {
        if case .variant = argument { return argument }
        return .variant(argument)
    }

    // MARK: Messages nobody asked for

    /// Signals unicast to the daemon (delivered whatever its match rules) or broadcast,
    /// including look-alikes of the signals a player listens to.
    private mutating func unsolicitedSignal() -> FuzzStep {
        var message = RawMessage(.signal, destination: random.next(below: 4) == 0 ? nil : daemon)
        let lookalikes: [(String, String, String, [RawArgument])] = [
            ("/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep", [.value(.boolean(true))]),
            (
                "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged",
                [.value(.string(busNameText())), .value(.string("")), .value(.string(daemon))]
            ),
            (
                Self.objectPath, Self.properties, "PropertiesChanged",
                [
                    .value(.string(Self.player)), .value(.stringVariantDict([("Volume", .double(.infinity))])),
                    .value(.stringArray([])),
                ]
            ),
            (Self.objectPath, Self.player, "Seeked", [.value(.int64(awkwardInteger()))]),
        ]
        if random.next(below: 2) == 0 {
            let chosen = pick(lookalikes)
            (message.path, message.interface, message.member, message.body) = chosen
            if random.next(below: 3) == 0 { message.body = randomValues().map { .value($0) } }
        } else {
            message.path = objectPath()
            message.interface = "org.example.\(identifier())"
            message.member = identifier()
            message.body =
                random.next(below: 25) == 0 ? [.bytes(count: largeCount())] : randomValues().map { .value($0) }
        }
        return FuzzStep(message: message, label: message.destination == nil ? "broadcast signal" : "unicast signal")
    }

    /// Method returns and errors with made-up reply serials (small ones may hit a call the daemon made).
    private mutating func unsolicitedReply() -> FuzzStep {
        var message = RawMessage(random.next(below: 2) == 0 ? .methodReturn : .error, destination: daemon)
        message.replySerial =
            random.next(below: 2) == 0 ? UInt32(1 + random.next(below: 64)) : UInt32(truncatingIfNeeded: random.next())
        message.errorName = pick(["org.freedesktop.DBus.Error.NoReply", "org.example.Error.\(identifier())"])
        message.body = randomValues().map { .value($0) }
        return FuzzStep(message: message, label: "unsolicited reply")
    }

    // MARK: Values

    private mutating func pick<T>(_ choices: [T]) -> T { choices[random.next(below: choices.count)] }

    private mutating func identifier() -> String { random.identifier() }

    private mutating func randomValues() -> [DBusValue] { random.values() }

    private mutating func objectPath() -> String {
        pick([
            "/", "/org/mpris/MediaPlayer2/\(identifier())", "/\(identifier())/\(identifier())",
            "/org/spool/Track/\(random.next(below: 1_000_000))",
        ])
    }

    private mutating func busNameText() -> String {
        pick(["org.mpris.MediaPlayer2.spool", ":1.\(random.next(below: 100))", "org.freedesktop.login1"])
    }

    private mutating func trackID() -> String {
        pick([
            "/org/spool/Track/\(random.next(below: 50))", "/org/spool/Track/999999999",
            "/org/mpris/MediaPlayer2/TrackList/NoTrack", "/", objectPath(),
        ])
    }

    private mutating func awkwardInteger() -> Int64 {
        pick([
            Int64.min, Int64.max, 0, -1, 1, Int64(bitPattern: random.next()), Int64(random.next(below: 1_000_000_000)),
        ])
    }

    private mutating func hugeString() -> String { String(repeating: "\u{1F3B5}", count: pick([1, 1000, 250_000])) }

    /// The length of a large byte array: mostly kilobytes, now and then megabytes.
    private mutating func largeCount() -> Int { pick([1 << 12, 1 << 16, 1 << 16, 1 << 20, 4 << 20]) }

    /// What the daemon is told to play: nothing that exists or answers.
    private mutating func uri() -> String {
        pick([
            "", "http://", "gopher://x/y", "/nonexistent/spool-fuzz/\(identifier()).mp3",
            "file:///nonexistent/\(identifier()).flac",
            "http://127.0.0.1:1/\(identifier()).mp3", "http://127.0.0.1:1/\(identifier()).m3u",
            "relative/\(identifier()).ogg",
            "http://exa mple.org/a.mp3", hugeString(), "\u{1F3B5}://\u{00e9}",
        ])
    }

    /// Values a property write may carry: right and wrong types, NaN, infinities, extremes.
    private mutating func propertyValue() -> DBusValue {
        switch random.next(below: 4) {
        case 0:
            pick([
                .double(.nan), .double(.infinity), .double(-.infinity), .double(-1), .double(0), .double(1e308),
                .double(.leastNonzeroMagnitude), .double(0.5),
            ])
        case 1:
            pick([
                .string("None"), .string("Track"), .string("Playlist"), .string(""), .string(identifier()),
                .string(hugeString()),
            ])
        case 2: pick([.boolean(true), .boolean(false), .int32(-1), .int64(.max), .uint64(.max)])
        default: random.value(depth: 0)
        }
    }

    /// `v` inside `v`, `depth` deep, around a string.
    private func deepVariant(depth: Int) -> DBusValue {
        (0..<depth).reduce(DBusValue.string("bottom")) { inner, _ in .variant(inner) }
    }

    /// Arrays or structures nested `depth` deep (each kind may nest 32 deep in a signature).
    private mutating func deepContainer(depth: Int) -> DBusValue {
        let arrays = random.next(below: 2) == 0
        return (0..<depth).reduce(DBusValue.int32(7)) { inner, _ in
            arrays ? .array(elementSignature: inner.signature, [inner]) : .structure([inner])
        }
    }
}
