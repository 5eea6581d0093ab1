import Basics
import Foundation
import Testing

@Suite("XDG base directories")
struct BaseDirectoriesTests {
    /// One environment and the folders it gives: cache, state, config, data.
    struct Case: Sendable, CustomTestStringConvertible {
        let environment: [String: String]
        let expected: [String]
        var testDescription: String {
            environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
    }

    @Test(arguments: [
        Case(environment: ["HOME": "/h"], expected: ["/h/.cache", "/h/.local/state", "/h/.config", "/h/.local/share"]),
        Case(
            environment: [
                "HOME": "/h", "XDG_CACHE_HOME": "/c", "XDG_STATE_HOME": "/s", "XDG_CONFIG_HOME": "/g",
                "XDG_DATA_HOME": "/d",
            ],
            expected: ["/c", "/s", "/g", "/d"]),
        Case(
            environment: [
                "HOME": "/h", "XDG_CACHE_HOME": "relative", "XDG_STATE_HOME": "", "XDG_CONFIG_HOME": "./g",
                "XDG_DATA_HOME": "~/d",
            ],
            expected: ["/h/.cache", "/h/.local/state", "/h/.config", "/h/.local/share"]),
        Case(
            environment: ["HOME": "/h", "XDG_STATE_HOME": "/s"],
            expected: ["/h/.cache", "/s", "/h/.config", "/h/.local/share"]),
        Case(
            environment: ["HOME": "/h", "XDG_CONFIG_HOME": "/g/"],
            expected: ["/h/.cache", "/h/.local/state", "/g", "/h/.local/share"]),
        Case(
            environment: ["XDG_CACHE_HOME": "/c", "XDG_DATA_HOME": "/d"],
            expected: ["/c", "~/.local/state", "~/.config", "/d"]),
        Case(
            environment: ["HOME": "", "XDG_CONFIG_HOME": "/g"],
            expected: ["~/.cache", "~/.local/state", "/g", "~/.local/share"]),
    ])
    func eachFolderComesFromItsAbsoluteVariableElseFromHome(_ test: Case) {
        // Without $HOME the password database's home folder stands in for `~`.
        let passwordHome = FileManager.default.homeDirectoryForCurrentUser.path
        let expected = test.expected.map { $0.hasPrefix("~") ? passwordHome + $0.dropFirst() : $0 }
        let directories = BaseDirectories(environment: test.environment)
        #expect(
            [directories.cacheHome, directories.stateHome, directories.configHome, directories.dataHome].map(\.path)
                == expected)
    }

    @Test func homeIsHOMEWhenSet() {
        #expect(BaseDirectories(environment: ["HOME": "/h"]).home.path == "/h")
        #expect(BaseDirectories(environment: [:]).home == FileManager.default.homeDirectoryForCurrentUser)
    }

    @Test(
        arguments: [
            ("XDG_MUSIC_DIR=\"$HOME/Music\"\n", "/h/Music"),
            ("# written by xdg-user-dirs-update\n  XDG_MUSIC_DIR=\"/srv/music\"\n", "/srv/music"),
            ("XDG_MUSIC_DIR=/srv/unquoted", "/srv/unquoted"),
            ("XDG_MUSIC_DIR=\"$HOME/\"", nil),
            ("XDG_MUSIC_DIR=\"$HOME\"", nil),
            ("XDG_MUSIC_DIR=\"Music\"", nil),
            ("XDG_DESKTOP_DIR=\"$HOME/Desktop\"", nil),
            ("", nil),
        ] as [(String, String?)])
    func theMusicFolderIsReadFromUserDirs(text: String, expected: String?) {
        #expect(BaseDirectories.musicFolder(inUserDirs: text, home: "/h")?.path == expected)
    }

    @Test func theMusicFolderFileIsInTheConfigFolder() throws {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("spool-xdg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: config) }
        let directories = BaseDirectories(environment: ["HOME": "/h", "XDG_CONFIG_HOME": config.path])
        #expect(directories.music() == nil)
        try Data("XDG_MUSIC_DIR=\"$HOME/Musik\"\n".utf8).write(to: config.appendingPathComponent("user-dirs.dirs"))
        #expect(directories.music()?.path == "/h/Musik")
    }

    /// `~` is the home folder the environment names (as the daemon's folders follow it), and
    /// otherwise what `expandingTildeInPath` makes of a path.
    @Test func tildeExpansionFollowsHomeAndMatchesExpandingTildeInPathOtherwise() {
        let passwordHome = FileManager.default.homeDirectoryForCurrentUser.path
        let folders = BaseDirectories(environment: ["HOME": passwordHome])
        for path in ["~", "~/", "~/a//b/", "~root/x", "~nosuchuser-spool/x", "/abs/~", "a~"] {
            #expect(folders.expandingTilde(path) == NSString(string: path).expandingTildeInPath, "\(path)")
        }
        let elsewhere = BaseDirectories(environment: ["HOME": "/srv/listener"])
        #expect(elsewhere.expandingTilde("~/Music/a.mp3") == "/srv/listener/Music/a.mp3")
        #expect(elsewhere.expandingTilde("~") == "/srv/listener")
        #expect(elsewhere.expandingTilde("~root/x") == "/root/x")
    }
}
