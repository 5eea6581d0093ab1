import Foundation
import TestSupport
import Testing

@testable import DBusKit

/// Every suite that starts a dbus-daemon, run one test at a time.
@Suite("DBusKit over a private bus", .serialized)
struct BusTests {}

/// Runs a command on its own thread, so that waiting for it never holds one
/// of the few cooperative threads that the service's method handlers need.
func runOffPool(_ executable: String, _ arguments: [String], environment: [String: String]) async throws
    -> CommandResult
{
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(
                with: Result { try runCommand(executable, arguments, environment: environment, timeout: 20) })
        }.start()
    }
}

extension BusTests {
    @Suite("Method calls")
    struct Calls {
        @Test func everyValueTypeRoundTripsThroughTheBus() async throws {
            let echo = try EchoService()
            for (index, value) in sampleValues.enumerated() {
                let reply = try await echo.call("Echo\(index)", [value])
                #expect(reply == [value], "Echo\(index) of \(value.signature)")
            }
            #expect(try await echo.call("EchoAll", sampleValues) == sampleValues)
            for value in sampleValues {
                #expect(try await echo.call("EchoVariant", [.variant(value)]) == [.variant(value)])
            }
        }

        @Test func largeStringsAndArraysRoundTrip() async throws {
            let echo = try EchoService()
            let big = String(repeating: "ü", count: 1 << 20)
            #expect(try await echo.call("Concat", [.string(big), .string("!")]) == [.string(big + "!")])
            let bytes = DBusValue.array(elementSignature: "y", (0..<100_000).map { .byte(UInt8($0 & 0xFF)) })
            #expect(try await echo.call("EchoVariant", [.variant(bytes)]) == [.variant(bytes)])
        }

        @Test func handlerErrorsBecomeErrorReplies() async throws {
            let echo = try EchoService()
            let custom = await thrownError { try await echo.call("Fail", [.string("why")]) }
            #expect(custom == DBusError(name: "org.spool.Error.Custom", message: "why"))
            #expect(await thrownName { try await echo.call("Crash") } == "org.freedesktop.DBus.Error.Failed")
            #expect(await thrownName { try await echo.call("WrongResult") } == "org.freedesktop.DBus.Error.Failed")
        }

        @Test func aCallWithoutInterfaceDispatchesByMember() async throws {
            let echo = try EchoService()
            #expect(try await echo.call("Concat", [.string("a"), .string("b")], interface: "") == [.string("ab")])
            #expect(try await echo.call("Hello", interface: "") == [.string("second")])
            let introspection = try await echo.call("Introspect", interface: "")
            #expect(introspection.first?.stringValue?.contains("org.spool.Second") == true)
        }

        @Test func malformedCallsGetTheProperErrors() async throws {
            let echo = try EchoService()
            let wrongArguments = await thrownError { try await echo.call("Concat", [.int32(1)]) }
            #expect(wrongArguments?.name == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(wrongArguments?.message.contains("'ss'") == true && wrongArguments?.message.contains("'i'") == true)
            #expect(await thrownName { try await echo.call("Nope") } == "org.freedesktop.DBus.Error.UnknownMethod")
            #expect(
                await thrownName { try await echo.call("Concat", interface: "org.spool.Nope") }
                    == "org.freedesktop.DBus.Error.UnknownInterface")
            #expect(
                await thrownName { try await echo.call("Concat", path: "/org/spool/Nope") }
                    == "org.freedesktop.DBus.Error.UnknownObject")
            #expect(
                await thrownName {
                    try await echo.call(
                        "Introspect", interface: "org.freedesktop.DBus.Introspectable", path: "/elsewhere")
                }
                    == "org.freedesktop.DBus.Error.UnknownObject")
            #expect(try await echo.call("Ping", interface: "org.freedesktop.DBus.Peer", path: "/anywhere") == [])
            let machineID = try await echo.call("GetMachineId", interface: "org.freedesktop.DBus.Peer")
            #expect(machineID.first?.stringValue?.count == 32)
            #expect(
                await thrownName { try await echo.properties("Get", [.string(testInterface)]) }
                    == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(try await echo.call("Concat", [.string("still"), .string(" alive")]) == [.string("still alive")])
        }

        @Test func invalidOutgoingCallsThrowWithoutSending() async throws {
            let echo = try EchoService()
            #expect(await thrownName { try await echo.call("bad member") } == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(
                await thrownName { try await echo.call("X", path: "relative") }
                    == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(
                await thrownName { try await echo.call("X", [.string("a\0b")]) }
                    == "org.freedesktop.DBus.Error.InvalidArgs")
        }

        @Test func callsWithoutReplyExpectedRunButGetNoReply() async throws {
            let echo = try EchoService()
            let before = echo.service.repliesSent
            try echo.client.callWithoutReply(
                destination: testName, path: testPath, interface: testInterface, method: "Count")
            var counted = echo.state.counted.stream.makeAsyncIterator()
            #expect(await counted.next() == 1)
            try echo.client.callWithoutReply(
                destination: testName, path: testPath, interface: testInterface, method: "Nope")
            _ = try await echo.call("Count")
            #expect(await counted.next() == 2)
            #expect(echo.service.repliesSent == before + 1)
        }

        @Test func rawDbusSendCallsGetErrorsAndTheServiceKeepsAnswering() async throws {
            let echo = try EchoService()
            func send(_ arguments: [String]) async throws -> CommandResult {
                try await runOffPool(
                    "dbus-send", ["--session", "--print-reply", "--dest=\(testName)"] + arguments,
                    environment: echo.bus.environment)
            }
            let cases: [([String], String)] = [
                ([testPath, "\(testInterface).Concat", "int32:1", "string:x"], "InvalidArgs"),
                ([testPath, "\(testInterface).Concat"], "InvalidArgs"),
                ([testPath, "\(testInterface).Missing", "array:string:a,b"], "UnknownMethod"),
                ([testPath, "org.spool.Missing.Concat", "string:a", "string:b"], "UnknownInterface"),
                (["/no/such/object", "\(testInterface).Concat", "string:a", "string:b"], "UnknownObject"),
                (
                    [
                        testPath, "org.freedesktop.DBus.Properties.Set", "string:\(testInterface)", "string:Volume",
                        "variant:string:loud",
                    ], "InvalidArgs"
                ),
                (
                    [
                        testPath, "org.freedesktop.DBus.Properties.Set", "string:\(testInterface)", "string:Name",
                        "variant:string:x",
                    ], "PropertyReadOnly"
                ),
                (
                    [testPath, "org.freedesktop.DBus.Properties.Get", "string:\(testInterface)", "string:Nope"],
                    "UnknownProperty"
                ),
                ([testPath, "org.freedesktop.DBus.Properties.GetAll", "string:org.spool.Nope"], "UnknownInterface"),
                ([testPath, "\(testInterface).Echo19", "dict:string:int32:a,1"], "InvalidArgs"),
            ]
            for (arguments, expected) in cases {
                let result = try await send(arguments)
                #expect(result.status != 0, "\(arguments)")
                #expect(
                    result.stderr.contains("org.freedesktop.DBus.Error.\(expected)"), "\(arguments): \(result.stderr)")
            }
            let good = try await send([testPath, "\(testInterface).Concat", "string:a", "string:b"])
            #expect(good.status == 0)
            #expect(good.stdout.contains("\"ab\""))
            #expect(try await echo.call("Concat", [.string("x"), .string("y")]) == [.string("xy")])
        }
    }

    @Suite("Properties")
    struct Properties {
        @Test func getReturnsTheGettersValueInAVariant() async throws {
            let echo = try EchoService()
            #expect(
                try await echo.properties("Get", [.string(testInterface), .string("Name")]) == [
                    .variant(.string("Spool test"))
                ])
            #expect(
                try await echo.properties("Get", [.string("org.spool.Second"), .string("Answer")]) == [
                    .variant(.int32(42))
                ])
            #expect(try await echo.properties("Get", [.string(""), .string("Answer")]) == [.variant(.int32(42))])
        }

        @Test func getAllListsReadablePropertiesInDeclarationOrder() async throws {
            let echo = try EchoService()
            let reply = try await echo.properties("GetAll", [.string(testInterface)])
            let keys = reply.first?.dictionaryEntries?.compactMap(\.key.stringValue)
            #expect(keys == ["Name", "Volume", "Metadata"])  // Broken has the wrong type, Secret is write-only
            let metadata = reply.first?.stringVariantDictValue?["Metadata"]?.stringVariantDictValue
            #expect(metadata?["mpris:length"] == .int64(5))
            let everything = try await echo.properties("GetAll", [.string("")])
            #expect(
                everything.first?.stringVariantDictValue?.keys.sorted() == ["Answer", "Metadata", "Name", "Volume"])
            let standard = try await echo.properties("GetAll", [.string("org.freedesktop.DBus.Peer")])
            #expect(standard == [.stringVariantDict([])])
        }

        @Test func setCallsTheSetterWithTheUnwrappedValue() async throws {
            let echo = try EchoService()
            _ = try await echo.properties("Set", [.string(testInterface), .string("Volume"), .variant(.double(0.25))])
            #expect(echo.state.volume.withLock { $0 } == 0.25)
            #expect(
                try await echo.properties("Get", [.string(testInterface), .string("Volume")]) == [
                    .variant(.double(0.25))
                ])
            let rejected = await thrownError {
                try await echo.properties("Set", [.string(testInterface), .string("Volume"), .variant(.double(7))])
            }
            #expect(rejected == .invalidArgs("volume out of range"))
        }

        @Test func propertyErrorsHaveTheStandardNames() async throws {
            let echo = try EchoService()
            let cases: [(String, [DBusValue], String)] = [
                ("Get", [.string(testInterface), .string("Nope")], "UnknownProperty"),
                ("Get", [.string("org.spool.Nope"), .string("Name")], "UnknownInterface"),
                ("Get", [.string(testInterface), .string("Broken")], "Failed"),
                ("Get", [.string(testInterface), .string("Secret")], "InvalidArgs"),
                ("GetAll", [.string("org.spool.Nope")], "UnknownInterface"),
                ("Set", [.string(testInterface), .string("Nope"), .variant(.int32(1))], "UnknownProperty"),
                ("Set", [.string(testInterface), .string("Name"), .variant(.string("x"))], "PropertyReadOnly"),
                ("Set", [.string(testInterface), .string("Volume"), .variant(.string("loud"))], "InvalidArgs"),
                ("Set", [.string(testInterface), .string("Volume"), .double(1)], "InvalidArgs"),
                ("Set", [.string("org.spool.Nope"), .string("Volume"), .variant(.double(1))], "UnknownInterface"),
            ]
            for (method, arguments, expected) in cases {
                let name = await thrownName { try await echo.properties(method, arguments) }
                #expect(name == "org.freedesktop.DBus.Error.\(expected)", "\(method) \(arguments)")
            }
        }
    }
}
