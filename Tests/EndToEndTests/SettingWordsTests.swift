import Testing

@testable import spool

@Suite("The words of loop and shuffle, and usage mistakes as one sentence")
struct SettingWordsTests {
    @Test(arguments: [
        ("none", "None"), ("track", "Track"), ("playlist", "Playlist"), ("TRACK", "Track"), ("Playlist", "Playlist"),
    ])
    func loopWordsMapToLoopStatus(word: String, status: String) {
        #expect(SettingWords.loopStatus(word) == status)
        #expect(SettingWords.loopWord(status) == word.lowercased())
    }

    @Test(arguments: ["", "trak", "all", "one", "1"])
    func otherLoopWordsAreRefused(word: String) {
        #expect(SettingWords.loopStatus(word) == nil)
    }

    @Test(arguments: [
        ("on", true), ("off", false), ("yes", true), ("no", false), ("true", true), ("false", false), ("1", true),
        ("0", false), ("ON", true), ("No", false),
    ])
    func switchWordsAreOnOrOff(word: String, on: Bool) {
        #expect(SettingWords.switchValue(word) == on)
    }

    @Test(arguments: ["", "offf", "2", "enable", "y"])
    func otherSwitchWordsAreRefused(word: String) {
        #expect(SettingWords.switchValue(word) == nil)
    }

    @Test func switchesPrintAsOnOrOff() {
        #expect(SettingWords.switchWord(true) == "on")
        #expect(SettingWords.switchWord(false) == "off")
    }

    @Test(arguments: [
        ("trak", "unknown loop mode 'trak'; did you mean 'track'?"),
        ("zzzzzz", "unknown loop mode 'zzzzzz'; use none, track or playlist"),
    ])
    func aMistakeIsOneSentenceWithASuggestionOrTheChoices(word: String, message: String) {
        let written = mistake(
            "unknown loop mode '\(word)'", word: word, among: ["none", "track", "playlist"],
            otherwise: "use none, track or playlist")
        #expect(written == message)
    }
}
