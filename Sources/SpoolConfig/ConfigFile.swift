import Basics
import FoundationEssentials
import Glibc

/// The configuration file, read but not yet interpreted: which key was set
/// to which text on which line. The format, one setting a line:
///
///     # a comment; blank lines are ignored
///     cache.budget = 2GiB
///     audio.sink   = "pulsesink client-name=Spool"   # quotes keep spaces and '#'
///     account='work'
///
/// Whitespace around keys, `=` and values does not matter. A value may be in
/// double quotes (where `\"` and `\\` stand for `"` and `\`) or single
/// quotes (taken literally). Outside quotes, `#` after whitespace starts a
/// comment. Each key may appear once.
public struct ConfigFile: Sendable, Equatable {
    /// One `key = value` line.
    public struct Assignment: Sendable, Equatable {
        /// The key as written.
        public let key: String
        /// The value, unquoted and without its comment.
        public let value: String
        /// The line number, from 1.
        public let line: Int
    }

    /// The file's path, for messages.
    public let path: String
    /// The settings in the order they appear.
    public let assignments: [Assignment]

    /// Where the file is: `spool/config` in the configuration folder (``BaseDirectories``:
    /// `$XDG_CONFIG_HOME`, else `$HOME/.config`).
    public static func defaultPath(environment: [String: String]) -> String {
        BaseDirectories(environment: environment).configHome.appendingPathComponent("spool/config").path
    }

    /// Reads and parses the file at `path`; nil when there is no file there.
    public static func read(at path: String) throws(ConfigError) -> ConfigFile? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigError(.unreadableFile, at: path, "cannot read the configuration file (\(reason(error)))")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError(.unreadableFile, at: path, "the configuration file is not UTF-8 text")
        }
        return try ConfigFile(parsing: text, path: path)
    }

    /// Parses the text of a configuration file; `path` only names it in errors.
    public init(parsing text: String, path: String) throws(ConfigError) {
        self.path = path
        var assignments: [Assignment] = []
        let body = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
        // `\r\n` is one Character in Swift, and a newline like `\n`.
        for (index, line) in body.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = index + 1
            let content = line.trimmed
            if content.isEmpty || content.hasPrefix("#") { continue }
            let location = "\(path):\(number)"
            if content.hasPrefix("[") {
                throw ConfigError(
                    .syntax, at: location, "sections are not supported; write the whole key, e.g. cache.budget = 2GiB")
            }
            guard let equals = content.firstIndex(of: "=") else {
                throw ConfigError(.syntax, at: location, "expected 'key = value', found '\(content)'")
            }
            let key = content[..<equals].trimmed
            guard !key.isEmpty else { throw ConfigError(.syntax, at: location, "no key before '='") }
            guard !key.contains(where: \.isWhitespace) else {
                throw ConfigError(.syntax, at: location, "a key has no spaces, found '\(key)'")
            }
            if let earlier = assignments.first(where: { $0.key == key }) {
                throw ConfigError(.duplicateKey, at: location, "\(key) is already set on line \(earlier.line)")
            }
            let value: String
            do {
                value = try Self.value(content[content.index(after: equals)...])
            } catch {
                throw ConfigError(.syntax, at: location, "\(key): \(error.description)")
            }
            assignments.append(Assignment(key: key, value: value, line: number))
        }
        self.assignments = assignments
    }

    /// The value after `=`: unquoted, unescaped, without a trailing comment.
    private static func value(_ raw: Substring) throws(ConfigValueError) -> String {
        let text = Substring(raw.trimmed)
        guard let quote = text.first, quote == "\"" || quote == "'" else {
            var end = text.endIndex
            var index = text.startIndex
            while index < text.endIndex {
                if text[index] == "#", index == text.startIndex || text[text.index(before: index)].isWhitespace {
                    end = index
                    break
                }
                index = text.index(after: index)
            }
            return text[..<end].trimmed
        }
        var result = ""
        var index = text.index(after: text.startIndex)
        var closed = false
        while index < text.endIndex {
            let character = text[index]
            index = text.index(after: index)
            if character == quote {
                closed = true
                break
            }
            if character == "\\", quote == "\"" {
                guard index < text.endIndex, text[index] == "\"" || text[index] == "\\" else {
                    throw ConfigValueError(
                        "in double quotes only \\\" and \\\\ are escapes; use single quotes for a literal backslash")
                }
                result.append(text[index])
                index = text.index(after: index)
                continue
            }
            result.append(character)
        }
        guard closed else { throw ConfigValueError("the value has no closing \(quote)") }
        let rest = text[index...].trimmed
        guard rest.isEmpty || rest.hasPrefix("#") else {
            throw ConfigValueError("unexpected '\(rest)' after the closing \(quote)")
        }
        return result
    }

    /// `text` quoted for the file when it needs to be: when empty, or when it
    /// has whitespace, quotes or `#`.
    public static func quoted(_ text: String) -> String {
        let plain = !text.isEmpty && !text.contains { $0.isWhitespace || $0 == "\"" || $0 == "'" || $0 == "#" }
        if plain { return text }
        return "\"" + text.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\""
    }
}

/// The reason in a Foundation file error, without the path it repeats.
private func reason(_ error: any Error) -> String {
    if let underlying = (error as? CocoaError)?.underlying as? POSIXError {
        return String(cString: strerror(underlying.code.rawValue))
    }
    return String(describing: error)
}
