import Foundation
import TestSupport
import Testing

@testable import DBusKit

@Suite("DBusValue without a bus")
struct ValueTests {
    @Test func signaturesDescribeNestedContainers() {
        #expect(DBusValue.stringVariantDict([]).signature == "a{sv}")
        #expect(DBusValue.structure([.int32(1), .array(elementSignature: "(ii)", [])]).signature == "(ia(ii))")
        #expect(DBusValue.variant(.string("x")).signature == "v")
        #expect(DBusValue.signature(of: [.byte(1), .objectPath("/")]) == "yo")
    }

    @Test func completeTypesSplitASignature() {
        #expect(Syntax.completeTypes("sa{sv}(ia(ii))aay") == ["s", "a{sv}", "(ia(ii))", "aay"])
        #expect(Syntax.completeTypes("") == [])
    }

    @Test func accessorsConvertWhereClientsDisagree() {
        #expect(DBusValue.int32(3).doubleValue == 3)
        #expect(DBusValue.uint64(.max).int64Value == nil)
        #expect(DBusValue.byte(7).int64Value == 7)
        #expect(DBusValue.stringVariantDict([("a", .int32(1))]).stringVariantDictValue == ["a": .int32(1)])
        #expect(DBusValue.string("x").boolValue == nil)
    }

    @Test func invalidValuesAreRejectedBeforeLibdbusSeesThem() {
        let invalid: [DBusValue] = [
            .string("nul\0inside"), .objectPath("no/leading/slash"), .objectPath("/trailing/"), .signature("a"),
            .array(elementSignature: "s", [.int32(1)]), .array(elementSignature: "ss", []),
            .dictionary(keySignature: "v", valueSignature: "s", []), .structure([]),
            .dictionary(keySignature: "s", valueSignature: "s", [DBusDictEntry(.string("k"), .int32(1))]),
        ]
        for value in invalid {
            #expect(throws: DBusError.self, "\(value)") { try value.validate() }
        }
        for value in sampleValues {
            #expect(throws: Never.self, "\(value)") { try value.validate() }
        }
    }

    @Test func matchRulesRouteSignals() throws {
        let rule = try #require(
            MatchRule("type='signal',interface='org.a.B',member='C',path_namespace='/org',arg0='x'"))
        let signal = DBusSignalMessage(
            sender: ":1.1", path: "/org/a", interface: "org.a.B", member: "C", arguments: [.string("x")])
        #expect(rule.matches(signal))
        #expect(
            !rule.matches(
                DBusSignalMessage(
                    sender: nil, path: "/orga", interface: "org.a.B", member: "C", arguments: [.string("x")])))
        #expect(
            !rule.matches(
                DBusSignalMessage(sender: nil, path: "/org", interface: "org.a.B", member: "C", arguments: [])))
        #expect(MatchRule("nonsense") == nil)
        #expect(MatchRule("colour='red'") == nil)
    }
}
