import DBusKit
import Foundation
import Synchronization
import TestSupport

/// Values of every D-Bus type, including the awkward ones: empty containers,
/// nested variants, dictionaries of arrays, structures inside variants.
let sampleValues: [DBusValue] = [
    .byte(0xFF), .boolean(true), .boolean(false), .int16(.min), .uint16(.max), .int32(.min), .uint32(.max),
    .int64(.min), .uint64(.max), .double(-1.5e300), .string("héllo ✓ \u{1F3B5}"), .string(""),
    .objectPath("/org/spool/a_b/C9"), .objectPath("/"), .signature("a{sv}(ii)"), .signature(""),
    .array(elementSignature: "s", []),
    .array(elementSignature: "i", [.int32(1), .int32(-2), .int32(3)]),
    .array(
        elementSignature: "ay",
        [.array(elementSignature: "y", [.byte(1), .byte(0)]), .array(elementSignature: "y", [])]),
    .dictionary(
        keySignature: "s", valueSignature: "as",
        [DBusDictEntry(.string("k"), .stringArray(["a", "b"])), DBusDictEntry(.string("empty"), .stringArray([]))]),
    .dictionary(keySignature: "x", valueSignature: "v", []),
    .stringVariantDict([
        ("n", .int32(1)), ("nested", .variant(.variant(.string("deep")))), ("list", .objectPathArray(["/a", "/b"])),
    ]),
    .structure([.int32(1), .string("x"), .structure([.double(2.25), .boolean(true)])]),
    .variant(.structure([.objectPath("/"), .array(elementSignature: "(ii)", [])])),
    .array(elementSignature: "v", [.variant(.byte(1)), .variant(.stringArray([]))]),
    .dictionary(
        keySignature: "o", valueSignature: "(sa{sv})",
        [DBusDictEntry(.objectPath("/t/1"), .structure([.string("title"), .stringVariantDict([("x", .uint64(7))])]))]),
    .array(elementSignature: "a{sv}", [.stringVariantDict([]), .stringVariantDict([("a", .double(0))])]),
]

let testPath = "/org/spool/Test"
let testInterface = "org.spool.Test"
let testName = "org.spool.Test"

/// Observable state of the test service, shared with its handlers.
final class EchoState: Sendable {
    let volume = Mutex<Double>(0.5)
    let counted = AsyncStream<Int>.makeStream()
    let count = Atomic<Int>(0)
    let slowStarted = AsyncStream<Void>.makeStream()
    let slowRelease = AsyncStream<Void>.makeStream()
    /// The values `Record` calls carried, in the order their handlers ran.
    let recorded = Mutex<[Int32]>([])
    /// The Volume values set, in the order the setter ran.
    let volumesSet = Mutex<[Double]>([])
}

struct Boom: Error {}

/// Suspends the calling task until a Dispatch queue has run once.
func hop() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().async { continuation.resume() }
    }
}

/// A private bus, a service connection exporting the test interface under
/// `org.spool.Test`, and a client connection.
final class EchoService: Sendable {
    let bus: PrivateBus
    let service: DBusConnection
    let client: DBusConnection
    let state = EchoState()

    init() throws {
        bus = try PrivateBus()
        service = try DBusConnection(address: bus.address)
        client = try DBusConnection(address: bus.address)
        service.export(path: testPath, interfaces: [Self.interface(state), Self.secondInterface])
        guard try service.requestName(testName) else { throw RigError("could not own \(testName)") }
    }

    deinit {
        service.close()
        client.close()
        bus.stop()
    }

    /// Calls the service from the client.
    func call(
        _ method: String, _ arguments: [DBusValue] = [], interface: String = testInterface, path: String = testPath,
        from connection: DBusConnection? = nil
    ) async throws -> [DBusValue] {
        try await (connection ?? client).call(
            destination: testName, path: path, interface: interface, method: method, arguments: arguments)
    }

    /// Calls `org.freedesktop.DBus.Properties.<method>` on the test object.
    func properties(_ method: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
        try await call(method, arguments, interface: "org.freedesktop.DBus.Properties")
    }

    static func echo(_ index: Int, _ signature: String) -> DBusMethod {
        DBusMethod("Echo\(index)", in: signature, out: signature) { $0 }
    }

    static func interface(_ state: EchoState) -> DBusInterface {
        var methods = sampleValues.enumerated().map { echo($0.offset, $0.element.signature) }
        methods += [
            DBusMethod(
                "EchoAll", in: DBusValue.signature(of: sampleValues), out: DBusValue.signature(of: sampleValues)
            ) { $0 },
            DBusMethod("EchoVariant", in: "v", out: "v", argumentNames: ["value"], resultNames: ["same"]) { $0 },
            DBusMethod("Concat", in: "ss", out: "s", argumentNames: ["a", "b"], resultNames: ["ab"]) { arguments in
                [.string((arguments[0].stringValue ?? "") + (arguments[1].stringValue ?? ""))]
            },
            DBusMethod("Fail", in: "s") { arguments in
                throw DBusError(name: "org.spool.Error.Custom", message: arguments[0].stringValue ?? "")
            },
            DBusMethod("Crash") { _ in throw Boom() },
            DBusMethod("WrongResult", out: "s") { _ in [.int32(1)] },
            DBusMethod("Count") { _ in
                let value = state.count.add(1, ordering: .relaxed).newValue
                state.counted.continuation.yield(value)
                return []
            },
            // Suspends a different number of times per call (a hop through a Dispatch queue each)
            // before it records: handlers run side by side would record out of order. Hops, not
            // Task.yield loops: each yield waits its turn behind every task of the test process.
            DBusMethod("Record", in: "i") { arguments in
                let value = arguments[0].int32Value ?? -1
                for _ in 0..<Int(value.magnitude % 3) { await hop() }
                state.recorded.withLock { $0.append(value) }
                return []
            },
            DBusMethod("Slow", out: "s") { _ in
                state.slowStarted.continuation.yield()
                for await _ in state.slowRelease.stream { break }
                return [.string("done")]
            },
        ]
        return DBusInterface(
            testInterface, methods: methods,
            properties: [
                DBusProperty("Name", signature: "s") { .string("Spool test") },
                DBusProperty(
                    "Volume", signature: "d", access: .readWrite, get: { .double(state.volume.withLock { $0 }) },
                    set: { value in
                        guard let volume = value.doubleValue, (0...1).contains(volume) else {
                            throw DBusError.invalidArgs("volume out of range")
                        }
                        for _ in 0..<Int(volume * 1000) % 3 { await hop() }
                        state.volume.withLock { $0 = volume }
                        state.volumesSet.withLock { $0.append(volume) }
                    }),
                DBusProperty("Metadata", signature: "a{sv}") {
                    .stringVariantDict([("xesam:title", .string("T")), ("mpris:length", .int64(5))])
                },
                DBusProperty("Broken", signature: "s") { .int32(3) },
                DBusProperty("Secret", signature: "s", access: .write, get: { .string("hidden") }, set: { _ in }),
            ],
            signals: [
                DBusSignal("Changed", arguments: [("what", "s"), ("how_much", "x")]),
                DBusSignal("Other"),
            ])
    }

    static let secondInterface = DBusInterface(
        "org.spool.Second",
        methods: [DBusMethod("Hello", out: "s") { _ in [.string("second")] }],
        properties: [DBusProperty("Answer", signature: "i") { .int32(42) }])
}

/// The D-Bus error name of `error`, or a description of what else it was.
func errorName(_ error: any Error) -> String {
    (error as? DBusError)?.name ?? "not a DBusError: \(error)"
}

/// Runs `body` and returns the `DBusError` it threw (nil when it threw nothing or another error).
func thrownError(_ body: () async throws -> some Any) async -> DBusError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error as? DBusError
    }
}

/// The name of the `DBusError` `body` threw (nil when it threw nothing).
func thrownName(_ body: () async throws -> some Any) async -> String? {
    await thrownError(body)?.name
}
