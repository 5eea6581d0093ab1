// swift-tools-version:6.0
// Spool: a headless audio player daemon for Linux (MPRIS, GStreamer, libcurl).
//
// Modules are layers and imports run one way (README.md, "Architecture"):
//   spool (executable) → MPRIS → DBusKit
//                      → PlayerCore → EngineAPI → ByteSourceAPI (a live stream's station and titles)
//                      → GStreamerEngine → EngineAPI, ByteSourceAPI (the bytes of a track, no networking)
//                      → CacheFilling → MediaSource, PlayerCore (preloads, prefetches, source choice)
//   spool (executable) → SpoolConfig (settings from file, environment and flags)
//   MediaSource → ByteSourceAPI (implements it), RangeCache (sparse data files + SQLite index;
//                 no networking), Fetcher
//   HLS: RFC 8216 playlists and the live reload schedule as pure values (imports only Basics, for
//        ListTrust: what a playlist from the network may name)
//   HLSSource → HLS, ByteSourceAPI (an HLS presentation as one byte source; CacheFilling makes it)
// RangeCache and StateStore reach SQLite through SQLiteKit.
// Every module may use Basics (logging, XDG folders, thread and queue helpers).
// C libraries are reached through the C* targets.
import PackageDescription

let package = Package(
    name: "Spool",
    products: [
        .executable(name: "spool", targets: ["spool"])
    ],
    targets: [
        // MARK: C libraries (Debian -dev packages, found through pkg-config)
        .systemLibrary(
            name: "CDBus", pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]),
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CGStreamer",
            pkgConfig: "gstreamer-1.0 gstreamer-app-1.0 gstreamer-audio-1.0 gstreamer-controller-1.0",
            providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev"])]),
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        // OpenSSL's libcrypto, for HLS segments encrypted with AES-128 (already there beside
        // libcurl4-openssl-dev).
        .systemLibrary(
            name: "CCrypto", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        // Typed wrappers for the variadic libcurl calls Swift cannot import.
        .target(name: "CCurlShim", dependencies: ["CCurl"]),

        // MARK: Swift modules, lowest layer first
        .target(name: "Basics"),
        .target(name: "SpoolConfig", dependencies: ["Basics"]),
        // One SQLite connection type, for the cache index and the state store.
        .target(name: "SQLiteKit", dependencies: ["CSQLite"]),
        .target(name: "RangeCache", dependencies: ["SQLiteKit", "Basics"]),
        .target(name: "Fetcher", dependencies: ["CCurl", "CCurlShim", "Basics"]),
        // The protocol the engine reads a track's bytes through; the download engine implements it.
        .target(name: "ByteSourceAPI"),
        // RFC 8216 (HTTP Live Streaming) playlists and the live reload schedule: pure values, no networking.
        .target(name: "HLS", dependencies: ["Basics"]),
        // An HLS presentation as one ByteSource: its segments read through sources made by the caller.
        .target(name: "HLSSource", dependencies: ["HLS", "ByteSourceAPI", "CCrypto", "Basics"]),
        .target(name: "MediaSource", dependencies: ["ByteSourceAPI", "Fetcher", "RangeCache", "Basics"]),
        // The values a live stream's bytes announce (``LiveStation``, ``StreamTitle``) travel to the
        // player in engine events.
        .target(name: "EngineAPI", dependencies: ["ByteSourceAPI"]),
        .target(
            name: "GStreamerEngine",
            dependencies: ["CGStreamer", "EngineAPI", "ByteSourceAPI", "Basics"]),
        .target(name: "PlayerCore", dependencies: ["EngineAPI", "ByteSourceAPI", "Basics"]),
        .target(name: "StateStore", dependencies: ["SQLiteKit", "PlayerCore", "Basics"]),
        .target(name: "DBusKit", dependencies: ["CDBus", "Basics"]),
        .target(name: "MPRIS", dependencies: ["DBusKit", "PlayerCore", "EngineAPI", "ByteSourceAPI", "Basics"]),
        // Fills the cache: which byte source a URL gets, preloading the heads PlayerCore's
        // policy plans, prefetches a user asks for.
        .target(
            name: "CacheFilling",
            dependencies: [
                "ByteSourceAPI", "Fetcher", "MediaSource", "HLSSource", "HLS", "RangeCache", "PlayerCore", "Basics",
            ]),
        // Writes into a range cache until a test SIGKILLs it (RangeCacheTests' crash test).
        .executableTarget(name: "RangeCacheKillChild", dependencies: ["RangeCache"]),
        // Range cache benchmarks: `swift run -c release CacheBench`.
        .executableTarget(name: "CacheBench", dependencies: ["RangeCache"], path: "bench/CacheBench"),
        .executableTarget(
            name: "spool",
            dependencies: [
                "Basics", "SpoolConfig", "Fetcher", "ByteSourceAPI", "MediaSource", "CacheFilling", "EngineAPI",
                "GStreamerEngine", "PlayerCore", "StateStore", "DBusKit", "MPRIS",
            ]),

        // MARK: Benchmarks (swift run -c release NAME)
        .executableTarget(
            name: "EngineBench", dependencies: ["EngineAPI", "ByteSourceAPI", "GStreamerEngine", "MediaSource"],
            path: "bench/EngineBench"),
        .executableTarget(
            name: "SourceBench", dependencies: ["MediaSource", "RangeCache", "Fetcher"], path: "bench/SourceBench"),
        // Next with the next track preloaded: latency to audio and requests (none expected).
        .executableTarget(
            name: "PreloadBench",
            dependencies: [
                "PlayerCore", "EngineAPI", "ByteSourceAPI", "GStreamerEngine", "MediaSource", "RangeCache", "Fetcher",
                "TestSupport",
            ],
            path: "bench/PreloadBench"),
        .executableTarget(name: "FetcherBench", dependencies: ["Fetcher", "TestSupport"], path: "bench/FetcherBench"),
        // Reads of held bytes while every data sync takes 500 ms.
        .executableTarget(
            name: "SlowDiskBench", dependencies: ["MediaSource", "RangeCache", "Fetcher", "TestSupport"],
            path: "bench/SlowDiskBench"),
        // MPRIS over a private bus against a real `spool daemon` (build `spool` in release mode first).
        .executableTarget(name: "MPRISBench", dependencies: ["DBusKit", "TestSupport"], path: "bench/MPRISBench"),
        // A real `spool daemon` (and mpv, when installed) under capped, slow and faulty links (bench/network.sh).
        .executableTarget(name: "NetworkBench", dependencies: ["DBusKit", "TestSupport"], path: "bench/NetworkBench"),
        // A real `spool daemon` under random actions, faults and polling clients for MINUTES: crashes,
        // unanswered calls and growth per hour of memory, descriptors and threads (bench/soak.sh).
        .executableTarget(name: "SoakBench", dependencies: ["DBusKit", "TestSupport"], path: "bench/SoakBench"),

        // MARK: Tests
        // Shared rig: child processes, private bus, nginx, the fault-injecting origin, fixtures.
        .target(name: "TestSupport", dependencies: ["DBusKit", "CDBus", "Basics"], path: "Tests/TestSupport"),
        // In-process doubles: the fake engine and a recorder of player updates.
        .target(name: "TestDoubles", dependencies: ["EngineAPI", "PlayerCore"], path: "Tests/TestDoubles"),
        .testTarget(name: "RigTests", dependencies: ["TestSupport"]),
        .testTarget(
            name: "RangeCacheTests", dependencies: ["RangeCache", "RangeCacheKillChild", "SQLiteKit", "TestSupport"]),
        .testTarget(name: "DBusKitTests", dependencies: ["DBusKit", "TestSupport"]),
        .testTarget(name: "FetcherTests", dependencies: ["Fetcher", "TestSupport"]),
        .testTarget(
            name: "MediaSourceTests",
            dependencies: ["ByteSourceAPI", "MediaSource", "Fetcher", "RangeCache", "TestSupport"]),
        .testTarget(
            name: "GStreamerEngineTests",
            dependencies: [
                "GStreamerEngine", "EngineAPI", "ByteSourceAPI", "MediaSource", "Fetcher", "RangeCache", "CGStreamer",
                "TestSupport", "HLSSource", "Basics",
            ]),
        .testTarget(
            name: "PlayerCoreTests",
            dependencies: ["PlayerCore", "EngineAPI", "ByteSourceAPI", "TestSupport", "TestDoubles"]),
        .testTarget(
            name: "StateStoreTests",
            dependencies: ["StateStore", "PlayerCore", "EngineAPI", "TestSupport", "TestDoubles"]),
        .testTarget(name: "BasicsTests", dependencies: ["Basics"]),
        .testTarget(name: "HLSTests", dependencies: ["HLS", "Basics"]),
        .testTarget(name: "HLSSourceTests", dependencies: ["HLSSource", "HLS", "ByteSourceAPI", "TestSupport"]),
        .testTarget(name: "SQLiteKitTests", dependencies: ["SQLiteKit", "TestSupport"]),
        .testTarget(name: "SpoolConfigTests", dependencies: ["SpoolConfig", "Basics", "TestSupport"]),
        .testTarget(name: "MPRISTests", dependencies: ["MPRIS", "DBusKit", "PlayerCore", "EngineAPI", "TestDoubles"]),
        .testTarget(
            name: "CacheFillingTests",
            dependencies: [
                "CacheFilling", "ByteSourceAPI", "MediaSource", "RangeCache", "Fetcher", "PlayerCore", "EngineAPI",
                "TestSupport",
            ]),
        .testTarget(
            name: "EndToEndTests", dependencies: ["spool", "DBusKit", "TestSupport"]),
        // `make install-files` into a temporary DESTDIR, and D-Bus activation of the built daemon.
        .testTarget(name: "InstallTests", dependencies: ["spool", "DBusKit", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
