/// A configuration that cannot be used, told in one line that says where the
/// problem is (`/home/me/.config/spool/config:4`, `SPOOL_CACHE_BUDGET`,
/// `--cache-budget`), which key, and what would be right.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of mistake it is.
    public enum Kind: Sendable, Equatable {
        /// The file exists but cannot be read, or is not UTF-8 text.
        case unreadableFile
        /// A line of the file is not `key = value`, a comment or blank.
        case syntax
        /// The file names a key Spool does not have.
        case unknownKey
        /// The file sets one key twice.
        case duplicateKey
        /// A value does not parse, or is out of range.
        case badValue
        /// The command line has an option Spool does not have.
        case unknownOption
        /// An option is last on the command line and has no value.
        case missingValue
        /// The command line has a word that is not an option.
        case unexpectedArgument
    }

    /// What kind of mistake it is.
    public let kind: Kind
    /// Where: `path:line`, an environment variable or a flag; nil for the command line as a whole.
    public let location: String?
    /// What is wrong and what would be right.
    public let message: String

    /// Creates an error.
    public init(_ kind: Kind, at location: String?, _ message: String) {
        self.kind = kind
        self.location = location
        self.message = message
    }

    /// `location: message`, one line.
    public var description: String { location.map { "\($0): \(message)" } ?? message }
}

/// The name in `candidates` the user most likely meant by `name`: the closest
/// by edit distance when it is close enough, or the only one whose last
/// dot-separated part is `name` (`budget` → `cache.budget`).
func suggestion(for name: String, among candidates: [String]) -> String? {
    let lowered = name.lowercased()
    let scored = candidates.map { ($0, editDistance(lowered, $0.lowercased())) }
    if let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(2, name.count / 4),
        scored.filter({ $0.1 == best.1 }).count == 1
    {
        return best.0
    }
    let byLastPart = candidates.filter { $0.split(separator: ".").last.map(String.init)?.lowercased() == lowered }
    return byLastPart.count == 1 ? byLastPart[0] : nil
}

/// `"; did you mean 'x'?"` when there is a likely `x`, else empty.
func didYouMean(_ name: String, among candidates: [String]) -> String {
    suggestion(for: name, among: candidates).map { "; did you mean '\($0)'?" } ?? ""
}

/// The Levenshtein distance: the fewest single-character insertions,
/// deletions and substitutions that turn `a` into `b`.
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    var previous = Array(0...b.count)
    for (i, x) in a.enumerated() {
        var current = [i + 1] + Array(repeating: 0, count: b.count)
        for (j, y) in b.enumerated() {
            current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
        }
        previous = current
    }
    return previous[b.count]
}

/// The name in `candidates` the user most likely meant by `name` (close by edit
/// distance, or the only one ending in `.name`), for "did you mean" hints anywhere.
public func closestName(to name: String, among candidates: [String]) -> String? {
    suggestion(for: name, among: candidates)
}
