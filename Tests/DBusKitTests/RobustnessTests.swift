import DBusKit
import Foundation
import TestSupport
import Testing

extension BusTests {
    @Suite("Names, disconnects and abuse")
    struct Robustness {
        @Test func requestNameFailsForANameAnotherConnectionOwns() async throws {
            let echo = try EchoService()
            #expect(try echo.client.requestName(testName) == false)
            #expect(try echo.service.requestName(testName) == true)  // already the owner
            #expect(try await echo.client.nameHasOwner(testName))
            try echo.service.releaseName(testName)
            #expect(try await echo.client.nameHasOwner(testName) == false)
            #expect(try echo.client.requestName(testName) == true)
        }

        @Test func theServiceSurvivesItsClientDisconnectingMidCall() async throws {
            let echo = try EchoService()
            let impatient = try DBusConnection(address: echo.bus.address)
            let abandoned = Task { try await echo.call("Slow", from: impatient) }
            var started = echo.state.slowStarted.stream.makeAsyncIterator()
            _ = await started.next()
            impatient.close()
            let outcome = await thrownName { try await abandoned.value }
            #expect(outcome == "org.freedesktop.DBus.Error.Disconnected")
            echo.state.slowRelease.continuation.yield()  // the handler now replies to a vanished caller
            #expect(try await echo.call("Concat", [.string("still"), .string("here")]) == [.string("stillhere")])
            let finished = Task { try await echo.call("Slow") }
            _ = await started.next()
            echo.state.slowRelease.continuation.yield()
            #expect(try await finished.value == [.string("done")])
        }

        @Test func aCallWithoutAnswerTimesOutWithNoReply() async throws {
            let echo = try EchoService()
            let clock = ContinuousClock()
            let started = clock.now
            let timedOut = await thrownName {
                try await echo.client.call(
                    destination: testName, path: testPath, interface: testInterface, method: "Slow",
                    timeout: .milliseconds(100))
            }
            #expect(timedOut == "org.freedesktop.DBus.Error.NoReply")
            #expect(started.duration(to: clock.now) < .seconds(2))
            echo.state.slowRelease.continuation.yield()
            echo.client.close()
            echo.client.close()  // idempotent
            #expect(!echo.client.isConnected)
        }

        @Test func theConnectionSurvivesTheBusDying() async throws {
            let echo = try EchoService()
            let endsWithTheBus = try await echo.service.subscribe(matching: "type='signal',interface='org.spool.Never'")
            let pending = Task { try await echo.call("Slow") }
            var started = echo.state.slowStarted.stream.makeAsyncIterator()
            _ = await started.next()
            echo.bus.stop()
            for await _ in endsWithTheBus {}  // ends when the connection thread ends
            #expect(!echo.service.isConnected)
            #expect(await thrownName { try await pending.value } == "org.freedesktop.DBus.Error.Disconnected")
            let clock = ContinuousClock()
            let closing = clock.measure {
                echo.service.close()
                echo.client.close()
            }
            #expect(closing < .milliseconds(500))
            #expect(await thrownName { try await echo.call("Concat") } == "org.freedesktop.DBus.Error.Disconnected")
            echo.service.emitSignal(path: testPath, interface: testInterface, name: "Other", arguments: [])  // dropped
            echo.state.slowRelease.continuation.yield()
        }

        @Test func aConnectionLostToItsBusSaysSoOnceAndAClosedOneNever() async throws {
            let echo = try EchoService()
            let (lost, tell) = AsyncStream.makeStream(of: String.self)
            echo.service.whenLost { tell.yield("service") }
            echo.client.whenLost { tell.yield("client") }
            echo.client.close()
            echo.bus.stop()
            var told = lost.makeAsyncIterator()
            #expect(await told.next() == "service")
            // Asked after the loss, the handler runs at once; the closed client's never runs.
            echo.service.whenLost {
                tell.yield("late")
                tell.finish()
            }
            #expect(await told.next() == "late")
            #expect(await told.next() == nil)
        }

        @Test func blockingBusCallsAfterTheBusWentAwayFailOnAnyThread() async throws {
            let echo = try EchoService()
            let (lost, tell) = AsyncStream.makeStream(of: Void.self)
            echo.service.whenLost { tell.finish() }
            echo.bus.stop()
            for await _ in lost {}
            // New threads often get the ended connection thread's id: none may pass for it.
            var outcomes = Set<String>()
            for _ in 0..<40 {
                outcomes.insert(
                    await onOwnThread {
                        do {
                            try echo.service.releaseName(testName)
                            return "released"
                        } catch {
                            return (error as? DBusError)?.name ?? "\(error)"
                        }
                    })
            }
            #expect(outcomes == ["org.freedesktop.DBus.Error.Disconnected"])
        }

        @Test func manyConcurrentCallsFromManyTasksAllGetTheirOwnReplies() async throws {
            let echo = try EchoService()
            let replies = try await withThrowingTaskGroup(of: (Int, [DBusValue]).self) { group in
                for index in 0..<300 {
                    group.addTask {
                        echo.service.emitSignal(path: testPath, interface: testInterface, name: "Other", arguments: [])
                        return (index, try await echo.call("Concat", [.string("n"), .string("\(index)")]))
                    }
                }
                var replies: [Int: [DBusValue]] = [:]
                for try await (index, reply) in group { replies[index] = reply }
                return replies
            }
            #expect(replies.count == 300)
            #expect(replies.allSatisfy { $0.value == [.string("n\($0.key)")] })
        }

        @Test func sessionConnectsToTheBusNamedByTheEnvironment() async throws {
            let bus = try PrivateBus()
            let previous = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]
            setenv("DBUS_SESSION_BUS_ADDRESS", bus.address, 1)
            let connection = Result { try DBusConnection.session() }
            if let previous {
                setenv("DBUS_SESSION_BUS_ADDRESS", previous, 1)
            } else {
                unsetenv("DBUS_SESSION_BUS_ADDRESS")
            }
            let session = try connection.get()
            defer { session.close() }
            #expect(session.uniqueName.hasPrefix(":"))
            let other = try DBusConnection(address: bus.address)
            defer { other.close() }
            #expect(try await other.nameHasOwner(session.uniqueName))
        }

        @Test func callRoundTripLatencyOnAPrivateBus() async throws {
            let echo = try EchoService()
            let clock = ContinuousClock()
            var samples: [Duration] = []
            for index in 0..<300 {
                let started = clock.now
                _ = try await echo.call("Concat", [.string("n"), .string("\(index)")])
                samples.append(started.duration(to: clock.now))
            }
            samples.sort()
            let median = samples[samples.count / 2]
            let p99 = samples[samples.count * 99 / 100]
            print("DBusKit call round trip over a private bus: median \(median), p99 \(p99), max \(samples.last!)")
            #expect(median < .milliseconds(20))
        }

        @Test func aFewHundredRandomAndMalformedCallsDoNotHurtTheService() async throws {
            let echo = try EchoService()
            let fuzzers = try (0..<3).map { _ in try DBusConnection(address: echo.bus.address) }
            defer { for fuzzer in fuzzers { fuzzer.close() } }
            try await withThrowingTaskGroup(of: FuzzTally.self) { group in
                for (index, fuzzer) in fuzzers.enumerated() {
                    group.addTask { try await fuzz(fuzzer, seed: UInt64(index + 1), calls: 120) }
                }
                var total = FuzzTally()
                for try await tally in group { total.add(tally) }
                print("DBusKit fuzz: \(total)")
                #expect(total.unanswered == 0)
                #expect(total.mismatchedEchoes == 0)
                #expect(total.echoes > 20)
                #expect(total.errorReplies > 100)
            }
            let clock = ContinuousClock()
            let started = clock.now
            #expect(try await echo.call("Concat", [.string("a"), .string("b")]) == [.string("ab")])
            #expect(started.duration(to: clock.now) < .milliseconds(100))
        }
    }
}

struct FuzzTally: CustomStringConvertible {
    var echoes = 0
    var errorReplies = 0
    var rejectedLocally = 0
    var unanswered = 0
    var mismatchedEchoes = 0

    mutating func add(_ other: FuzzTally) {
        echoes += other.echoes
        errorReplies += other.errorReplies
        rejectedLocally += other.rejectedLocally
        unanswered += other.unanswered
        mismatchedEchoes += other.mismatchedEchoes
    }

    var description: String {
        "\(echoes) echoes, \(errorReplies) error replies, \(rejectedLocally) rejected locally, "
            + "\(unanswered) unanswered, \(mismatchedEchoes) mismatched"
    }
}

/// Sends `calls` random calls: random members, interfaces and paths, random
/// argument types and values, huge strings, wrong types to real methods,
/// random property writes, fire-and-forget calls, and random values through
/// `EchoVariant`, which must come back unchanged.
func fuzz(_ connection: DBusConnection, seed: UInt64, calls: Int) async throws -> FuzzTally {
    var random = SeededGenerator(seed: seed)
    var tally = FuzzTally()
    for _ in 0..<calls {
        var path = testPath
        var interface = testInterface
        var member = "EchoVariant"
        var arguments: [DBusValue]
        let value = random.value(depth: 0)
        switch random.next(below: 8) {
        case 0:
            member = random.identifier()
            arguments = random.values()
        case 1:
            interface = "org.\(random.identifier()).\(random.identifier())"
            arguments = random.values()
        case 2:
            path = "/" + random.identifier() + "/" + random.identifier()
            arguments = random.values()
        case 3:
            member = ["Concat", "Echo5", "Echo20", "EchoAll", "Fail"].randomElement(using: &random)!
            arguments = random.values()
        case 4:
            interface = "org.freedesktop.DBus.Properties"
            member = ["Get", "GetAll", "Set"].randomElement(using: &random)!
            arguments = [
                .string(testInterface), .string(["Volume", "Name", "Nope"].randomElement(using: &random)!),
                .variant(value),
            ]
            arguments = Array(arguments.prefix(random.next(below: 4)))
        case 5:
            member = "Concat"
            arguments = [.string(String(repeating: "x", count: 1 << 20)), .string(random.identifier())]
        case 6:
            try? connection.callWithoutReply(
                destination: testName, path: path, interface: interface, method: random.identifier(),
                arguments: random.values())
            continue
        default:
            arguments = [.variant(value)]
        }
        do {
            let reply = try await connection.call(
                destination: testName, path: path, interface: interface, method: member, arguments: arguments,
                timeout: .seconds(5))
            if member == "EchoVariant" {
                tally.echoes += 1
                if reply != arguments { tally.mismatchedEchoes += 1 }
            }
        } catch let error as DBusError {
            switch error.name {
            case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Disconnected":
                tally.unanswered += 1
            case "org.freedesktop.DBus.Error.InvalidArgs"
            where error.message.contains("nested")
                || error.message.contains("invalid"):
                tally.rejectedLocally += 1
            default:
                tally.errorReplies += 1
            }
        }
    }
    return tally
}
