import DBusKit
import TestSupport
import Testing

@Suite("Raw D-Bus messages")
struct RawBusClientTests {
    /// The fuzz sends replies nobody asked for; a session bus (and the private one, with its
    /// policy) delivers them, so they do reach the service under test.
    @Test func aSessionBusDeliversAReplyNobodyAskedFor() throws {
        let bus = try PrivateBus()
        let from = try RawBusClient(address: bus.address)
        let to = try RawBusClient(address: bus.address)
        var reply = RawMessage(.methodReturn, destination: to.uniqueName)
        reply.replySerial = 4242
        reply.body = [.value(.string("nobody asked"))]
        #expect(from.send(reply) != nil)
        // The bus answers the sender's ping after it has routed the reply, and the receiver's
        // after that: the reply reached the receiver first and was set aside as a stray.
        var ping = RawMessage(.methodCall, destination: "org.freedesktop.DBus")
        (ping.path, ping.interface, ping.member) = ("/org/freedesktop/DBus", "org.freedesktop.DBus.Peer", "Ping")
        #expect(from.call(ping, timeout: .seconds(5)) == .returned(sender: "org.freedesktop.DBus"))
        #expect(to.strayReplies == 0)
        #expect(to.call(ping, timeout: .seconds(5)) == .returned(sender: "org.freedesktop.DBus"))
        #expect(to.strayReplies == 1)
    }

    @Test func aCallGetsItsReplyAndANameNobodyOwnsAnErrorFromTheBus() throws {
        let bus = try PrivateBus()
        let client = try RawBusClient(address: bus.address)
        var call = RawMessage(.methodCall, destination: "org.freedesktop.DBus")
        (call.path, call.interface, call.member) = ("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner")
        call.body = [.value(.string(client.uniqueName))]
        #expect(client.call(call, timeout: .seconds(5)) == .returned(sender: "org.freedesktop.DBus"))
        call.destination = "org.example.Nobody"
        #expect(
            client.call(call, timeout: .seconds(5))
                == .failed(name: "org.freedesktop.DBus.Error.ServiceUnknown", sender: "org.freedesktop.DBus"))
        #expect(client.isConnected)
    }
}
