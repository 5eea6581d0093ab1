import Basics
import Testing

@testable import SpoolConfig

/// The error of type `E` that `body` throws; nil when it throws none, or another kind.
func caught<E: Error>(_ type: E.Type, _ body: () throws -> Void) -> E? {
    do {
        try body()
        return nil
    } catch {
        return error as? E
    }
}

/// The message of the value error `body` throws, or nil.
func valueProblem(_ body: () throws -> Void) -> String? { caught(ConfigValueError.self, body)?.description }

@Suite("Setting values")
struct ValueTests {
    @Test(arguments: [
        ("2GiB", Int64(2) << 30), ("500MB", 500_000_000), ("1048576", 1_048_576), ("1.5 MiB", 1_572_864),
        ("0", 0), ("7b", 7), ("3kib", 3072), ("1KB", 1000), ("2TiB", Int64(2) << 40), ("0.5GB", 500_000_000),
        (".5KiB", 512),
    ])
    func sizesParseWithBinaryAndDecimalUnits(text: String, bytes: Int64) throws {
        #expect(try ByteCount(configText: text).bytes == bytes)
    }

    @Test(arguments: ["", "GiB", "2 GiBs", "2XB", "-1", "1.2.3MB", "2GiB x", "99999999999TiB", "1.MB", "."])
    func textsThatAreNotSizesAreRefusedWithAnExample(text: String) {
        let message = valueProblem { _ = try ByteCount(configText: text) }
        #expect(message == "'\(text)' is not a size; write e.g. 2GiB, 500MB or 1048576")
    }

    @Test(arguments: [
        (Int64(2) << 30, "2GiB"), (500_000_000, "500MB"), (1000, "1KB"), (1024, "1KiB"), (0, "0B"),
        (1_024_000, "1000KiB"), (1_000_001, "1000001B"),
    ])
    func sizesAreWrittenWithTheUnitGivingTheSmallestExactNumber(bytes: Int64, text: String) throws {
        #expect(ByteCount(bytes).configText == text)
        #expect(try ByteCount(configText: text).bytes == bytes)
    }

    @Test func aFreeSpaceFloorTakesASizeAPercentageOrBothInEitherOrder() throws {
        #expect(try FreeSpaceFloor(configText: "1GiB, 5%") == FreeSpaceFloor(size: .gibibytes(1), percent: 5))
        #expect(
            try FreeSpaceFloor(configText: " 2.5 % ,500MB")
                == FreeSpaceFloor(size: ByteCount(500_000_000), percent: 2.5))
        #expect(try FreeSpaceFloor(configText: "10%") == FreeSpaceFloor(size: ByteCount(0), percent: 10))
        #expect(try FreeSpaceFloor(configText: "0") == FreeSpaceFloor(size: ByteCount(0), percent: 0))
        #expect(FreeSpaceFloor(size: .gibibytes(1), percent: 5).configText == "1GiB, 5%")
        #expect(FreeSpaceFloor(size: ByteCount(0), percent: 2.5).configText == "2.5%")
        #expect(FreeSpaceFloor(size: ByteCount(0), percent: 0).configText == "0B")
    }

    @Test func aFreeSpaceFloorKeepsTheLargerOfItsParts() {
        let floor = FreeSpaceFloor(size: .gibibytes(1), percent: 5)
        #expect(floor.minimumFreeBytes(filesystemSize: 10 << 30) == 1 << 30)
        #expect(floor.minimumFreeBytes(filesystemSize: 100 << 30) == 5 << 30)
        #expect(FreeSpaceFloor(size: ByteCount(0), percent: 0).minimumFreeBytes(filesystemSize: 1 << 40) == 0)
    }

    @Test(arguments: ["", "5%, 6%", "1GiB, 2GiB", "100%", "-1%", "1GiB, 5%, 6%", "x%", "1e2%", ",", "1GiB,"])
    func badFreeSpaceFloorsAreRefused(text: String) {
        let message = valueProblem { _ = try FreeSpaceFloor(configText: text) }
        #expect(message?.hasPrefix("'\(text)' is not a free-space floor; write a size, a percentage or both") == true)
    }

    @Test(arguments: [
        ("60s", 60_000), ("1m30s", 90_000), ("500ms", 500), ("2h", 7_200_000), ("90", 90_000), ("1.5s", 1500),
        ("1min", 60_000), ("1h 2m 3s", 3_723_000), ("0", 0), ("10S", 10_000), ("0.25", 250),
    ])
    func durationsParseToTheMillisecond(text: String, milliseconds: Int64) throws {
        #expect(try Duration(configText: text) == .milliseconds(milliseconds))
    }

    @Test(arguments: ["", "s", "5 parsecs", "-5s", "1.2.3s", "5d", "ms5", "1e3s", "9999999999999h"])
    func textsThatAreNotDurationsAreRefusedWithAnExample(text: String) {
        let message = valueProblem { _ = try Duration(configText: text) }
        #expect(message == "'\(text)' is not a duration; write e.g. 60s, 1m30s, 500ms or 2h")
    }

    @Test(arguments: [(60_000, "1m"), (90_000, "1m30s"), (2500, "2s500ms"), (0, "0s"), (3_600_000, "1h"), (1, "1ms")])
    func durationsAreWrittenInTheirLargestUnits(milliseconds: Int64, text: String) throws {
        #expect(Duration.milliseconds(milliseconds).configText == text)
        #expect(try Duration(configText: text) == .milliseconds(milliseconds))
    }

    @Test(arguments: [
        ("96k", 96000), ("128kbps", 128_000), ("0.5M", 500_000), ("128000", 128_000), ("1.5 Mbit/s", 1_500_000),
        ("64 kb/s", 64000), ("2mbps", 2_000_000), ("320K", 320_000), ("48000bps", 48000), ("0", 0), (".5k", 500),
    ])
    func bitRatesParseWithDecimalPrefixes(text: String, bitsPerSecond: Int) throws {
        #expect(try BitRate(configText: text).bitsPerSecond == bitsPerSecond)
    }

    @Test(arguments: ["", "k", "fast", "-96k", "128KB", "16kB/s", "1.2.3k", "128 kbit", "5G", "99999999999999999M"])
    func textsThatAreNotBitRatesAreRefusedWithAnExample(text: String) {
        let message = valueProblem { _ = try BitRate(configText: text) }
        #expect(message == "'\(text)' is not a bit rate; write e.g. 128k, 96kbps, 0.5M or 128000")
    }

    @Test(arguments: [(128_000, "128kbps"), (1_000_000, "1Mbps"), (1500, "1500bps"), (0, "0bps"), (96000, "96kbps")])
    func bitRatesAreWrittenWithThePrefixGivingTheSmallestExactNumber(bitsPerSecond: Int, text: String) throws {
        #expect(BitRate(bitsPerSecond: bitsPerSecond).configText == text)
        #expect(try BitRate(configText: text).bitsPerSecond == bitsPerSecond)
    }

    @Test func theMeteredQualityIs128KilobitsUnlessSet() {
        #expect(ConfigKeys.networkMeteredQuality.defaultValue == BitRate(bitsPerSecond: 128_000))
        #expect(AnyConfigKey(ConfigKeys.networkMeteredQuality).defaultText == "128kbps")
        #expect(AnyConfigKey(ConfigKeys.networkMeteredQuality).placeholder == "BITRATE")
    }

    @Test func countsAreWholeNumbersFromZero() throws {
        #expect(try Int(configText: "0") == 0)
        #expect(try Int(configText: "12") == 12)
        for text in ["-1", "1.5", "two", "", "+3", "99999999999999999999"] {
            #expect(
                valueProblem { _ = try Int(configText: text) }
                    == "'\(text)' is not a count; write a whole number such as 0, 2 or 10")
        }
    }

    @Test func listsAreCommaSeparatedAndTrimmed() {
        #expect([String](configText: " token, sig ,,X-Amz-* ") == ["token", "sig", "X-Amz-*"])
        #expect([String](configText: "").isEmpty)
        #expect(["a", "b"].configText == "a, b")
    }

    @Test func logLevelsParseByNameAndNameTheChoicesWhenWrong() throws {
        #expect(try LogLevel(configText: "DEBUG") == .debug)
        #expect(try LogLevel(configText: "warn") == .warning)
        #expect(
            valueProblem { _ = try LogLevel(configText: "loud") }
                == "'loud' is not a log level; use trace, debug, info, notice, warning, error")
    }

    @Test func aMeteredSettingIsAutoYesOrNoAndNamesTheChoicesWhenWrong() throws {
        #expect(try MeteredSetting(configText: "auto") == .auto)
        #expect(try MeteredSetting(configText: "Yes").forced == true)
        #expect(try MeteredSetting(configText: "no").forced == false)
        #expect(MeteredSetting.auto.forced == nil)
        #expect(
            valueProblem { _ = try MeteredSetting(configText: "sometimes") }
                == "'sometimes' is not a metered setting; use auto, yes or no")
    }

    @Test func interruptionHandlingIsPauseOrIgnore() throws {
        #expect(try InterruptionHandling(configText: "pause") == .pause)
        #expect(try InterruptionHandling(configText: "Ignore") == .ignore)
        #expect(InterruptionHandling.ignore.configText == "ignore")
        #expect(ConfigKeys.audioInterruptions.defaultValue == .pause)
        #expect(
            valueProblem { _ = try InterruptionHandling(configText: "duck") }
                == "'duck' is not a way to take interruptions; use pause or ignore")
    }

    @Test func aSwitchTakesTheUsualWordsForOnAndOff() throws {
        for word in ["true", "Yes", "ON", "1"] { #expect(try Bool(configText: word) == true) }
        for word in ["false", "no", "Off", "0"] { #expect(try Bool(configText: word) == false) }
        #expect(
            valueProblem { _ = try Bool(configText: "maybe") }
                == "'maybe' is neither true nor false (also: yes/no, on/off, 1/0)")
        #expect(ConfigKeys.notify.defaultValue == false, "notifications are off unless asked for")
    }

    @Test func anAccountNameIsAPlainWord() throws {
        let key = AnyConfigKey(ConfigKeys.account)
        #expect(try key.parse("work-2.old_x") as? String == "work-2.old_x")
        for bad in ["", "../etc", ".hidden", "a b", "a/b", "é"] {
            #expect(valueProblem { _ = try key.parse(bad) }?.hasPrefix("'\(bad)' is not an account name") == true)
        }
    }

    @Test func everyDefaultIsWrittenSoThatItReadsBackToItself() throws {
        for key in ConfigKeys.all {
            let parsed = try key.parse(key.defaultText)
            #expect(parsed.configText == key.defaultText, "\(key.name)")
        }
    }

    @Test func flagsAndVariablesFollowFromTheKeyName() throws {
        let key = try #require(ConfigKeys.named("read-ahead.large-file-threshold"))
        #expect(key.flag == "--read-ahead-large-file-threshold")
        #expect(key.environmentVariables == ["SPOOL_READ_AHEAD_LARGE_FILE_THRESHOLD"])
        #expect(AnyConfigKey(ConfigKeys.audioSink).environmentVariables == ["SPOOL_AUDIO_SINK"])
        #expect(AnyConfigKey(ConfigKeys.logLevel).environmentVariables == ["SPOOL_LOG_LEVEL", "SPOOL_LOG"])
        #expect(AnyConfigKey(ConfigKeys.logLevel).flag == "--log-level")
        #expect(Set(ConfigKeys.all.map(\.name)).count == ConfigKeys.all.count)
    }

    @Test func suggestionsFindTheClosestNameOrTheOnlyOneEndingSo() {
        let names = ConfigKeys.all.map(\.name)
        #expect(suggestion(for: "cache.budgit", among: names) == "cache.budget")
        #expect(suggestion(for: "Cache.Budget", among: names) == "cache.budget")
        #expect(suggestion(for: "log-level", among: names) == "log.level")
        #expect(suggestion(for: "window", among: names) == "read-ahead.window")
        #expect(suggestion(for: "colour", among: names) == nil)
        #expect(editDistance("kitten", "sitting") == 3)
        #expect(editDistance("", "abc") == 3)
        #expect(editDistance("abc", "") == 3)
    }
}
