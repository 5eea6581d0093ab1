import HLS
import Testing

/// RFC 8216 §4.2 attribute lists and their value forms.
@Suite("Attribute lists")
struct AttributeListTests {
    @Test func readsEachValueForm() {
        let list = AttributeList(
            parsing:
                #"BANDWIDTH=1280000,IV=0x0aFF,FRAME-RATE=29.970,TIME-OFFSET=-2.5,NAME="Eng, US",TYPE=AUDIO,RESOLUTION=1920x1080"#
        )
        #expect(list.names == ["BANDWIDTH", "IV", "FRAME-RATE", "TIME-OFFSET", "NAME", "TYPE", "RESOLUTION"])
        #expect(list.decimalInteger("BANDWIDTH") == 1_280_000)
        #expect(list.hexadecimalSequence("IV") == [0x0A, 0xFF])
        #expect(list.decimalFloatingPoint("FRAME-RATE") == 29.97)
        #expect(list.signedDecimalFloatingPoint("TIME-OFFSET") == -2.5)
        #expect(list.duration("TIME-OFFSET") == .milliseconds(-2500))
        #expect(list.quotedString("NAME") == "Eng, US")
        #expect(list.enumeratedString("TYPE") == "AUDIO")
        #expect(list.resolution("RESOLUTION") == Resolution(width: 1920, height: 1080))
    }

    /// RFC 8216 §8.9: a quoted-string holding commas is one value.
    @Test func quotedStringsKeepTheirCommas() {
        let list = AttributeList(
            parsing: #"CHARACTERISTICS="public.accessibility.transcribes-spoken-dialog,public.easy-to-read",X=1"#)
        #expect(
            list.quotedString("CHARACTERISTICS")
                == "public.accessibility.transcribes-spoken-dialog,public.easy-to-read")
        #expect(list.decimalInteger("X") == 1)
    }

    @Test func formsAreNotConfused() {
        let list = AttributeList(parsing: #"Q="AUDIO",E=AUDIO,F=1.5,N=-3,H=0x"#)
        #expect(list.quotedString("E") == nil)
        #expect(list.enumeratedString("Q") == nil)
        #expect(list.string("Q") == "AUDIO" && list.string("E") == "AUDIO")
        #expect(list.decimalInteger("F") == nil)
        #expect(list.decimalFloatingPoint("N") == nil)
        #expect(list.signedDecimalFloatingPoint("N") == -3)
        #expect(list.hexadecimalSequence("H") == nil)
        #expect(list.resolution("F") == nil)
        #expect(list.string("MISSING") == nil)
    }

    /// Lenient reading: odd spacing, pairs without `=`, repeated names, an unterminated quote.
    @Test(
        arguments: [
            (#"A=1, B = 2 ,C="x""#, ["A": "1", "B": "2", "C": "x"]),
            (#"A=1,JUNK,B=2"#, ["A": "1", "B": "2"]),
            (#"A=1,A=2"#, ["A": "1"]),
            (#"A="x"junk,B=2"#, ["A": "x", "B": "2"]),
            (#"A=1,B="unterminated,C=3"#, ["A": "1"]),
            (#"=5,A="#, ["A": ""]),
            ("", [:]),
        ] as [(String, [String: String])])
    func lenientReading(text: String, expected: [String: String]) {
        let list = AttributeList(parsing: text)
        #expect(
            Dictionary(uniqueKeysWithValues: list.names.compactMap { name in list.string(name).map { (name, $0) } })
                == expected)
    }

    @Test(
        arguments: [
            ("18446744073709551616", nil), ("9223372036854775807", Int.max), ("007", 7), ("1e3", nil), ("+1", nil),
        ] as [(String, Int?)])
    func decimalIntegersStayInRange(text: String, value: Int?) {
        #expect(AttributeList(parsing: "N=\(text)").decimalInteger("N") == value)
    }

    @Test(
        arguments: [("inf", nil), ("nan", nil), ("1e5", nil), ("2.", 2.0), (".25", 0.25), ("1.2.3", nil)]
            as [(String, Double?)])
    func decimalFloatsHaveNoExponentOrSpecialValues(text: String, value: Double?) {
        #expect(AttributeList(parsing: "F=\(text)").decimalFloatingPoint("F") == value)
    }

    @Test func yesIsTheOnlyTrueValue() {
        let list = AttributeList(parsing: #"A=YES,B=NO,C=yes,D="YES""#)
        #expect(
            [list.isYes("A"), list.isYes("B"), list.isYes("C"), list.isYes("D"), list.isYes("E")] == [
                true, false, false, true, false,
            ])
    }
}
