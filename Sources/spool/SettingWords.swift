import SpoolConfig

/// The words `spool loop` and `spool shuffle` take and print, mapped to and from
/// the MPRIS values, so the parsing and the printing are one table each.
enum SettingWords {
    /// `spool loop`'s words and MPRIS's `LoopStatus` values, in the order the help lists them.
    static let loopModes: [(word: String, mpris: String)] = [
        ("none", "None"), ("track", "Track"), ("playlist", "Playlist"),
    ]

    /// The words `spool shuffle` (and any on/off setting) understands.
    static let switchWords: [String: Bool] = [
        "on": true, "off": false, "yes": true, "no": false, "true": true, "false": false, "1": true, "0": false,
    ]

    /// The `LoopStatus` value for a word the user typed (any case), or nil.
    static func loopStatus(_ text: String) -> String? {
        loopModes.first { $0.word == text.lowercased() }?.mpris
    }

    /// The word `spool loop` prints for a `LoopStatus` value; an unknown value is shown as it came.
    static func loopWord(_ status: String) -> String {
        loopModes.first { $0.mpris == status }?.word ?? status
    }

    /// On or off for a word the user typed (any case), or nil.
    static func switchValue(_ text: String) -> Bool? {
        switchWords[text.lowercased()]
    }

    /// The word `spool shuffle` prints.
    static func switchWord(_ on: Bool) -> String { on ? "on" : "off" }
}

/// One sentence for a word that is not one of `candidates`: `problem` followed by a
/// suggestion when one is likely (`unknown loop mode 'trak'; did you mean 'track'?`),
/// else by `advice` (`…; use none, track or playlist`). A suggestion and a list in
/// one line read as two sentences glued together, so there is only ever one of them.
func mistake(_ problem: String, word: String, among candidates: [String], otherwise advice: String) -> String {
    if let guess = closestName(to: word, among: candidates) { return "\(problem); did you mean '\(guess)'?" }
    return "\(problem); \(advice)"
}
