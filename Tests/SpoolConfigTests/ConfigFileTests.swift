import Foundation
import TestSupport
import Testing

@testable import SpoolConfig

/// The configuration error `body` throws, or nil.
func configError(_ body: () throws -> Void) -> ConfigError? { caught(ConfigError.self, body) }

/// The assignments of `text` as `key → value`.
func values(_ text: String) throws -> [String: String] {
    Dictionary(uniqueKeysWithValues: try ConfigFile(parsing: text, path: "f").assignments.map { ($0.key, $0.value) })
}

@Suite("The configuration file format")
struct ConfigFileTests {
    @Test func commentsBlankLinesAndWhitespaceAreIgnored() throws {
        let file = try ConfigFile(
            parsing: """
                # Spool settings

                \tcache.budget=1GiB
                  preload.count   =  3   # three ahead
                # log.level = debug
                """, path: "/x/config")
        #expect(
            file.assignments == [
                .init(key: "cache.budget", value: "1GiB", line: 3),
                .init(key: "preload.count", value: "3", line: 4),
            ])
    }

    @Test func quotesKeepSpacesAndHashesAndDoubleQuotesHaveTwoEscapes() throws {
        let parsed = try values(
            #"""
            audio.sink = "fakesink  sync=true # not a comment"   # a comment
            account = 'its'
            log.level = 'C:\tmp'
            a = "say \"hi\" \\ bye"
            b = ""
            c =
            d = x#y
            """#)
        #expect(parsed["audio.sink"] == "fakesink  sync=true # not a comment")
        #expect(parsed["account"] == "its")
        #expect(parsed["log.level"] == #"C:\tmp"#)
        #expect(parsed["a"] == #"say "hi" \ bye"#)
        #expect(parsed["b"] == "")
        #expect(parsed["c"] == "")
        #expect(parsed["d"] == "x#y")
    }

    @Test func windowsLineEndingsAndAByteOrderMarkAreTolerated() throws {
        #expect(
            try values("\u{FEFF}cache.budget = 1GiB\r\nlog.level = debug\r\n") == [
                "cache.budget": "1GiB", "log.level": "debug",
            ])
    }

    @Test(arguments: [
        ("cache.budget 2GiB", ConfigError.Kind.syntax, "f:1: expected 'key = value', found 'cache.budget 2GiB'"),
        ("= 2GiB", .syntax, "f:1: no key before '='"),
        ("cache budget = 2GiB", .syntax, "f:1: a key has no spaces, found 'cache budget'"),
        ("[cache]", .syntax, "f:1: sections are not supported; write the whole key, e.g. cache.budget = 2GiB"),
        ("audio.sink = \"pulsesink", .syntax, "f:1: audio.sink: the value has no closing \""),
        ("audio.sink = 'pulsesink", .syntax, "f:1: audio.sink: the value has no closing '"),
        ("audio.sink = \"a\" b", .syntax, "f:1: audio.sink: unexpected 'b' after the closing \""),
        (
            "audio.sink = \"a\\tb\"", .syntax,
            "f:1: audio.sink: in double quotes only \\\" and \\\\ are escapes; use single quotes for a literal backslash"
        ),
        (
            "audio.sink = \"a\\", .syntax,
            "f:1: audio.sink: in double quotes only \\\" and \\\\ are escapes; use single quotes for a literal backslash"
        ),
        ("log.level = info\n\nlog.level = debug", .duplicateKey, "f:3: log.level is already set on line 1"),
    ])
    func malformedLinesNameTheFileTheLineAndTheProblem(text: String, kind: ConfigError.Kind, message: String) {
        let error = configError { _ = try ConfigFile(parsing: text, path: "f") }
        #expect(error?.kind == kind)
        #expect(error?.description == message)
    }

    @Test func aMissingFileIsNoFileAndAnUnreadableOneIsAnError() throws {
        let directory = try TemporaryDirectory(prefix: "spool-config")
        #expect(try ConfigFile.read(at: directory.file("absent").path) == nil)

        let folder = directory.file("folder")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let unreadable = configError { _ = try ConfigFile.read(at: folder.path) }
        #expect(unreadable?.kind == .unreadableFile)
        #expect(unreadable?.description.hasPrefix("\(folder.path): cannot read the configuration file (") == true)

        let binary = directory.file("binary")
        try Data([0x63, 0xFF, 0xFE, 0x0A]).write(to: binary)
        #expect(
            configError { _ = try ConfigFile.read(at: binary.path) }?.description
                == "\(binary.path): the configuration file is not UTF-8 text")

        let good = directory.file("config")
        try "preload.count = 4\n".write(to: good, atomically: true, encoding: .utf8)
        #expect(try ConfigFile.read(at: good.path)?.assignments == [.init(key: "preload.count", value: "4", line: 1)])
    }

    @Test func theFileLivesUnderXDGConfigHomeOrElseTheHomeFolder() {
        #expect(ConfigFile.defaultPath(environment: ["XDG_CONFIG_HOME": "/c", "HOME": "/h"]) == "/c/spool/config")
        #expect(
            ConfigFile.defaultPath(environment: ["XDG_CONFIG_HOME": "relative", "HOME": "/h"])
                == "/h/.config/spool/config")
        #expect(ConfigFile.defaultPath(environment: ["HOME": "/h"]) == "/h/.config/spool/config")
        #expect(ConfigFile.defaultPath(environment: [:]).hasSuffix("/.config/spool/config"))
    }

    @Test(arguments: [
        ("plain", "plain"), ("", "\"\""), ("a b", "\"a b\""), ("a#b", "\"a#b\""),
        ("say \"hi\" \\", #""say \"hi\" \\""#), ("it's", #""it's""#),
    ])
    func valuesAreQuotedOnlyWhenTheyNeedItAndReadBackUnchanged(text: String, written: String) throws {
        #expect(ConfigFile.quoted(text) == written)
        #expect(try values("k = \(written)")["k"] == text)
    }
}
