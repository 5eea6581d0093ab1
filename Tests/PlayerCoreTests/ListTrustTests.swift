import Basics
import Foundation
import Glibc
import PlayerCore
import TestSupport
import Testing

/// An entry inherits the trust of its list: a list from the network names only http(s)
/// addresses, a local list files too; anything else is dropped with its reason while the list's
/// other entries play. (HLS playlists: `HLSTests/PlaylistTrustTests`, the same grid.)
@Suite("What a list may name")
struct ListTrustTests {
    enum Kind: String, CaseIterable, Sendable {
        case m3u, pls, xspf, asx

        /// A list of this kind naming `reference`, then a good http track.
        func text(naming reference: String) -> String {
            switch self {
            case .m3u: "#EXTM3U\n\(reference)\n\(ListTrustTests.good)\n"
            case .pls: "[playlist]\nFile1=\(reference)\nFile2=\(ListTrustTests.good)\nNumberOfEntries=2\n"
            case .xspf:
                """
                <playlist version="1" xmlns="http://xspf.org/ns/0/"><trackList>
                <track><location>\(reference)</location></track>
                <track><location>\(ListTrustTests.good)</location></track>
                </trackList></playlist>
                """
            case .asx:
                """
                <asx version="3.0"><entry><ref href="\(reference)"/></entry>
                <entry><ref href="\(ListTrustTests.good)"/></entry></asx>
                """
            }
        }
    }

    static let good = "http://cdn.example/ok.mp3"
    static let remoteBase = "http://lists.example/lists/"
    static let localBase = "file:///music/lists/"

    /// A reference, and what it becomes in a list from the network and in a local one: the URL
    /// queued, or nil when dropped (its reason then from the row).
    struct Row: Sendable, CustomStringConvertible {
        let reference: String
        let remote: String?
        let local: String?
        let resolved: (remote: String, local: String)
        var description: String { reference }
    }

    static let rows: [Row] = [
        Row(
            reference: "file:///etc/hostname", remote: nil, local: "file:///etc/hostname",
            resolved: ("file:///etc/hostname", "file:///etc/hostname")),
        Row(
            reference: "data:audio/mpeg;base64,AAAA", remote: nil, local: nil,
            resolved: ("data:audio/mpeg;base64,AAAA", "data:audio/mpeg;base64,AAAA")),
        Row(
            reference: "smb://nas/share/a.mp3", remote: nil, local: nil,
            resolved: ("smb://nas/share/a.mp3", "smb://nas/share/a.mp3")),
        Row(
            reference: "/etc/hostname", remote: nil, local: "file:///etc/hostname",
            resolved: ("file:///etc/hostname", "file:///etc/hostname")),
        Row(
            reference: "sub/a.mp3", remote: "http://lists.example/lists/sub/a.mp3",
            local: "file:///music/lists/sub/a.mp3",
            resolved: ("http://lists.example/lists/sub/a.mp3", "file:///music/lists/sub/a.mp3")),
        Row(
            reference: "http://cdn.example/a.mp3", remote: "http://cdn.example/a.mp3",
            local: "http://cdn.example/a.mp3", resolved: ("http://cdn.example/a.mp3", "http://cdn.example/a.mp3")),
        Row(
            reference: "https://cdn.example/a.mp3", remote: "https://cdn.example/a.mp3",
            local: "https://cdn.example/a.mp3",
            resolved: ("https://cdn.example/a.mp3", "https://cdn.example/a.mp3")),
    ]

    @Test(arguments: Kind.allCases, rows)
    func anEntryInheritsTheTrustOfItsList(kind: Kind, row: Row) throws {
        for remote in [true, false] {
            let base = try #require(URL(string: (remote ? Self.remoteBase : Self.localBase) + "list." + kind.rawValue))
            let entries = PlaylistParser.read(kind.text(naming: row.reference), base: base)
            let expected = remote ? row.remote : row.local
            let context = "\(kind) \(remote ? "from the network" : "on disk"): \(row.reference)"
            #expect(entries.items.map(\.url.absoluteString) == [expected, Self.good].compactMap { $0 }, "\(context)")
            if expected == nil {
                let reason =
                    remote ? ListTrust.networkReason : ListTrust.localReason
                let dropped = DroppedEntry(entry: remote ? row.resolved.remote : row.resolved.local, reason: reason)
                #expect(entries.dropped == [dropped], "\(context)")
                #expect(
                    entries.warning(name: "list.\(kind)") == "list.\(kind): 1 entry dropped: \(dropped)", "\(context)")
            } else {
                #expect(entries.dropped.isEmpty && entries.problems == nil, "\(context)")
            }
        }
    }

    @Test func aStationsRefusedAlternativesAreLeftOutAndItPlaysOnTheOthers() {
        let text = """
            <asx version="3.0"><entry><ref href="file:///etc/hostname"/><ref href="http://radio.example/a"/></entry></asx>
            """
        let entries = PlaylistParser.read(text, base: URL(string: "http://lists.example/a.asx")!)
        #expect(entries.items == [TrackItem(url: URL(string: "http://radio.example/a")!)])
        #expect(entries.dropped.isEmpty)
    }

    @Test func aListLongerThanTheCapIsCutWithAWarning() {
        let count = PlaylistParser.maximumEntries + 5
        let text = "#EXTM3U\n" + (0..<count).map { "track\($0).mp3" }.joined(separator: "\n")
        let entries = PlaylistParser.read(text, base: URL(string: "http://lists.example/big.m3u")!)
        #expect(entries.items.count == PlaylistParser.maximumEntries)
        #expect(entries.items.last?.url.lastPathComponent == "track9999.mp3")
        #expect(entries.leftOut == 5)
        let warning = entries.warning(name: "big.m3u")
        #expect(
            warning == "big.m3u: only the first 10000 of 10005 entries queued (a list holds at most 10000)",
            "\(warning)")
        #expect(PlaylistEntries.isWarning(warning ?? ""))
    }

    @Test func manyDroppedEntriesAreCountedAndTheFirstNamed() {
        let text = "#EXTM3U\n/a.mp3\n/b.mp3\n/c.mp3\nok.mp3\n"
        let entries = PlaylistParser.read(text, base: URL(string: "http://lists.example/l.m3u")!)
        let reason = ListTrust.networkReason
        let warning = entries.warning(name: "l.m3u") ?? ""
        #expect(
            warning
                == "l.m3u: 3 entries dropped (\(reason)): file:///a.mp3, file:///b.mp3 and 1 more")
        #expect(PlaylistEntries.isWarning(warning))
        // Failures are not warnings, even when they quote one.
        #expect(!PlaylistEntries.isWarning("l.m3u: the playlist l.m3u has nothing to play: \(warning)"))
        #expect(!PlaylistEntries.isWarning("a.mp3: Not Found"))
        #expect(!PlaylistEntries.isWarning("l.m3u: cannot fetch the playlist: HTTP 404"))
    }

    @Test func aRemoteListWithNothingItMayNameFailsNamingWhatItDropped() async {
        let resolver = TrackResolver { _ in Data("#EXTM3U\nfile:///etc/hostname\n".utf8) }
        await #expect(
            throws: TrackSourceError(
                "the playlist evil.m3u has nothing to play: 1 entry dropped: file:///etc/hostname (\(ListTrust.networkReason))"
            )
        ) { try await resolver.resolve("http://lists.example/evil.m3u") }
        let kept = TrackResolver { _ in Data("#EXTM3U\n/etc/hostname\nhttp://cdn.example/a.mp3\n".utf8) }
        let entries = try? await kept.entries("http://lists.example/mixed.m3u")
        #expect(entries?.items.map(\.url.absoluteString) == ["http://cdn.example/a.mp3"])
        #expect(entries?.dropped.map(\.entry) == ["file:///etc/hostname"])
    }

    @Test func onlyRegularFilesAreQueuedAndAFIFOIsNeverWaitedOn() async throws {
        let dir = try TemporaryDirectory()
        #expect(mkfifo(dir.file("pipe.mp3").path, 0o600) == 0)
        #expect(mkfifo(dir.file("pipe.m3u").path, 0o600) == 0)
        #expect(symlink("/dev/zero", dir.file("zero.mp3").path) == 0)
        try Data().write(to: dir.file("real.mp3"))
        #expect(symlink(dir.file("real.mp3").path, dir.file("link.mp3").path) == 0)
        let resolver = TrackResolver { _ in Data() }
        for name in ["pipe.mp3", "pipe.m3u", "zero.mp3"] {
            let path = dir.file(name).path
            await #expect(throws: TrackSourceError("\(path): not a regular file"), "\(name)") {
                try await resolver.resolve(path)
            }
        }
        // In a directory they are skipped; a link to a regular file is queued.
        let items = try await resolver.resolve(dir.path)
        #expect(items.map(\.url.lastPathComponent) == ["link.mp3", "real.mp3"])
    }
}
