import TestSupport
import Testing

@testable import DBusKit

extension BusTests {
    @Suite("Bodies a receiver never asked for")
    struct UnicastSignals {
        /// The bus delivers a unicast signal whatever the receiver's match rules say, so any
        /// client can send megabytes to a connection: only a signal a subscription wants may
        /// cost the receiver the unmarshalling of its body.
        @Test func aUnicastSignalNoRuleWantsIsDroppedBeforeItsBodyIsRead() async throws {
            let bus = try PrivateBus()
            let listener = try DBusConnection(address: bus.address)
            defer { listener.close() }
            let stream = try await listener.subscribe(
                matching: "type='signal',interface='\(testInterface)',member='Changed'")
            let sender = try RawBusClient(address: bus.address)
            let unwanted = [
                (testPath, testInterface, "Other"), (testPath, "org.example.Else", "Changed"),
                ("/org/example/Else", "org.example.Else", "Changed"),
            ]
            for (path, interface, member) in unwanted {
                var message = RawMessage(.signal, destination: listener.uniqueName)
                (message.path, message.interface, message.member) = (path, interface, member)
                message.body = [.bytes(count: 4 << 20), .value(.string("unwanted"))]
                #expect(sender.send(message) != nil)
            }
            var wanted = RawMessage(.signal, destination: listener.uniqueName)
            (wanted.path, wanted.interface, wanted.member) = (testPath, testInterface, "Changed")
            wanted.body = [.value(.string("wanted"))]
            #expect(sender.send(wanted) != nil)
            var signals = stream.makeAsyncIterator()
            let received = await signals.next()
            #expect(received?.arguments == [.string("wanted")])
            #expect(received?.sender == sender.uniqueName)
            // The connection handles messages in order: the unwanted ones were dropped before this one.
            #expect(listener.signalBodiesRead == 1)
        }

        /// The bus checks a rule's well-known sender only for broadcasts; anyone can unicast a
        /// signal that looks like the owner's (a PrepareForSleep on the system bus, say).
        @Test func aUnicastSignalCannotPassForTheOwnerOfAWellKnownName() async throws {
            let echo = try EchoService()
            let stream = try await echo.client.subscribe(
                matching: "type='signal',sender='\(testName)',interface='\(testInterface)',member='Changed'")
            let impostor = try RawBusClient(address: echo.bus.address)
            var forged = RawMessage(.signal, destination: echo.client.uniqueName)
            (forged.path, forged.interface, forged.member) = (testPath, testInterface, "Changed")
            forged.body = [.value(.string("forged"))]
            #expect(impostor.send(forged) != nil)
            // Answered once the bus has routed the forged signal, which then reaches the
            // subscriber before anything the owner emits from now on.
            var ping = RawMessage(.methodCall, destination: "org.freedesktop.DBus")
            (ping.path, ping.interface, ping.member) = ("/org/freedesktop/DBus", "org.freedesktop.DBus.Peer", "Ping")
            #expect(impostor.call(ping, timeout: .seconds(5)) == .returned(sender: "org.freedesktop.DBus"))
            echo.service.emitSignal(
                path: testPath, interface: testInterface, name: "Changed", arguments: [.string("real")])
            var signals = stream.makeAsyncIterator()
            let first = await signals.next()
            #expect(first?.arguments == [.string("real")])
            #expect(first?.sender == echo.service.uniqueName)
        }

        @Test func aRuleOnAnArgumentStillSeesTheArguments() async throws {
            let bus = try PrivateBus()
            let listener = try DBusConnection(address: bus.address)
            defer { listener.close() }
            let stream = try await listener.subscribe(
                matching: "type='signal',interface='\(testInterface)',member='Changed',arg0='volume'")
            let sender = try RawBusClient(address: bus.address)
            for text in ["rate", "volume"] {
                var message = RawMessage(.signal, destination: nil)
                (message.path, message.interface, message.member) = (testPath, testInterface, "Changed")
                message.body = [.value(.string(text)), .value(.int32(3))]
                #expect(sender.send(message) != nil)
            }
            var signals = stream.makeAsyncIterator()
            #expect(await signals.next()?.arguments == [.string("volume"), .int32(3)])
        }

        /// A method call's arguments are read into values that cost far more than their bytes on the
        /// wire; any client can call, so a call of too many values is refused before it is read.
        @Test func aCallOfTooManyValuesIsRefusedWithoutBeingRead() async throws {
            let echo = try EchoService()
            let caller = try RawBusClient(address: echo.bus.address)
            var call = RawMessage(.methodCall, destination: echo.service.uniqueName)
            (call.path, call.interface, call.member) = (testPath, testInterface, "EchoVariant")
            let refused = DBusError.limitsExceeded("").name
            for body: RawArgument in [
                .variant(.bytes(count: 4 << 20)),
                .variant(.repeated(.objectPath("/a"), count: ConnectionLoop.maximumCallValues)),
            ] {
                call.body = [body]
                let started = ContinuousClock.now
                #expect(
                    caller.call(call, timeout: .seconds(30)) == .failed(name: refused, sender: echo.service.uniqueName))
                #expect(ContinuousClock.now - started < .seconds(2))
            }
            call.body = [.variant(.repeated(.objectPath("/a"), count: 1000))]
            #expect(caller.call(call, timeout: .seconds(5)) == .returned(sender: echo.service.uniqueName))
        }
    }
}
