import Basics
import Testing

@Suite("Log lines for a terminal and for journald")
struct LogLineFormatTests {
    @Test(arguments: [
        (LogLevel.trace, "<7>fetcher: hello\n"), (.debug, "<7>fetcher: hello\n"), (.info, "<6>fetcher: hello\n"),
        (.notice, "<5>fetcher: hello\n"), (.warning, "<4>fetcher: hello\n"), (.error, "<3>fetcher: hello\n"),
    ])
    func underSystemdEachLineStartsWithItsSyslogPriority(level: LogLevel, expected: String) {
        #expect(LogLineFormat.journal.line(level, label: "fetcher", message: "hello") == expected)
    }

    @Test(arguments: [
        (LogLevel.trace, "TRACE fetcher: hello\n"), (.info, "INFO fetcher: hello\n"),
        (.warning, "WARNING fetcher: hello\n"), (.error, "ERROR fetcher: hello\n"),
    ])
    func elsewhereALineNamesItsLevel(level: LogLevel, expected: String) {
        #expect(LogLineFormat.plain.line(level, label: "fetcher", message: "hello") == expected)
    }

    @Test func theJournalIsChosenOnlyWhenSystemdSaysStderrGoesThere() {
        #expect(LogLineFormat(environment: ["JOURNAL_STREAM": "8:12345"]) == .journal)
        #expect(LogLineFormat(environment: [:]) == .plain)
        #expect(LogLineFormat(environment: ["JOURNAL_STREAM": ""]) == .plain)
    }

    @Test func aMessageWithLineBreaksStaysOneLineAndOneJournalEntry() {
        let line = LogLineFormat.journal.line(.warning, label: "engine", message: "a\nb\r\nc")
        #expect(line == "<4>engine: a b\r c\n")
        #expect(LogLineFormat.plain.line(.info, label: "x", message: "1\n2") == "INFO x: 1 2\n")
    }
}
