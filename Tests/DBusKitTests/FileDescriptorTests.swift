import DBusKit
import Foundation
import Synchronization
import TestSupport
import Testing

/// A service that receives descriptors (and writes through them) and hands out
/// the write ends of pipes whose read ends it keeps, on a private bus.
private final class PipeService: Sendable {
    static let name = "org.spool.Fds"
    static let path = "/org/spool/Fds"

    let bus: PrivateBus
    let service: DBusConnection
    let client: DBusConnection
    /// The pipes whose write ends `OpenPipe` handed out, in order.
    let handedOut = HandedOut()

    final class HandedOut: Sendable {
        let pipes = Mutex<[TestPipe]>([])
        var first: TestPipe? { pipes.withLock { $0.first } }
    }

    init() throws {
        bus = try PrivateBus()
        service = try DBusConnection(address: bus.address)
        client = try DBusConnection(address: bus.address)
        let handedOut = self.handedOut
        service.export(
            path: Self.path,
            interfaces: [
                DBusInterface(
                    Self.name,
                    methods: [
                        // Writes the text through the received descriptor, then closes it.
                        DBusMethod("WriteTo", in: "hs") { arguments in
                            guard let descriptor = arguments[0].fileDescriptorValue, let text = arguments[1].stringValue
                            else { throw DBusError.invalidArgs("want (h, s)") }
                            let written = descriptor.withUnsafeDescriptor { fd in
                                Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                            }
                            descriptor.close()
                            guard written == text.utf8.count else { throw DBusError.failed("write failed") }
                            return []
                        },
                        // Writes the text through every descriptor of an `av` of variants holding `h`.
                        DBusMethod("WriteToAll", in: "avs") { arguments in
                            let text = Array((arguments[1].stringValue ?? "").utf8)
                            for value in arguments[0].arrayValues ?? [] {
                                guard let descriptor = value.variantValue?.fileDescriptorValue else {
                                    throw DBusError.invalidArgs("want variants of h")
                                }
                                _ = descriptor.withUnsafeDescriptor { fd in
                                    text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                                }
                            }
                            return []  // the descriptors close when the arguments are dropped
                        },
                        // Returns the write end of a new pipe; the service keeps the read end.
                        DBusMethod("OpenPipe", out: "h") { _ in
                            let pipe = try TestPipe()
                            handedOut.pipes.withLock { $0.append(pipe) }
                            return [.unixFD(DBusFileDescriptor(taking: pipe.takeWriteEnd()))]
                        },
                    ])
            ])
        guard try service.requestName(Self.name) else { throw RigError("could not own \(Self.name)") }
    }

    deinit {
        service.close()
        client.close()
        bus.stop()
    }

    func call(_ method: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await client.call(
            destination: Self.name, path: Self.path, interface: Self.name, method: method, arguments: arguments)
    }
}

extension BusTests {
    @Suite("Unix file descriptors")
    struct FileDescriptors {
        @Test func aPrivateUnixBusPassesDescriptors() throws {
            let service = try PipeService()
            #expect(service.client.canPassFileDescriptors)
            #expect(service.service.canPassFileDescriptors)
        }

        @Test func aDescriptorSentInACallReachesTheService() async throws {
            let service = try PipeService()
            let pipe = try TestPipe()
            let writeEnd = DBusFileDescriptor(taking: pipe.takeWriteEnd())
            _ = try await service.call("WriteTo", [.unixFD(writeEnd), .string("through the bus ✓")])
            #expect(writeEnd.isOpen, "sending does not give the descriptor up")
            writeEnd.close()
            // The end of file proves that the service closed its copy and that libdbus kept none.
            let (data, ended) = pipe.readUntilEnd(timeout: 5)
            #expect(String(decoding: data, as: UTF8.self) == "through the bus ✓")
            #expect(ended)
        }

        @Test func descriptorsInsideVariantsAndArraysTravelToo() async throws {
            let service = try PipeService()
            let pipes = try (0..<3).map { _ in try TestPipe() }
            let ends = pipes.map { DBusFileDescriptor(taking: $0.takeWriteEnd()) }
            let values = DBusValue.array(elementSignature: "v", ends.map { .variant(.unixFD($0)) })
            #expect(values.containsFileDescriptor)
            _ = try await service.call("WriteToAll", [values, .string("x")])
            for end in ends { end.close() }
            for pipe in pipes {
                let (data, ended) = pipe.readUntilEnd(timeout: 5)
                #expect(data == Data("x".utf8))
                #expect(ended)
            }
        }

        @Test func aDescriptorReturnedByTheServiceIsOwnedByTheCaller() async throws {
            let service = try PipeService()
            let reply = try await service.call("OpenPipe")
            let received = try #require(reply.first?.fileDescriptorValue)
            let pipe = try #require(service.handedOut.first)
            let message = Array("written by the caller".utf8)
            let written = received.withUnsafeDescriptor { fd in
                message.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            }
            #expect(written == message.count)
            // Still open on the caller's side: the pipe has not ended although the service dropped its end.
            let early = pipe.readUntilEnd(timeout: 0.2)
            #expect(!early.ended)
            received.close()
            received.close()  // a second close does nothing (and closes no one else's descriptor)
            #expect(!received.isOpen)
            let (data, ended) = pipe.readUntilEnd(timeout: 5)
            #expect(early.data + data == Data(message))
            #expect(ended, "the caller's close released the last write end")
        }

        @Test func droppingTheLastReferenceClosesTheDescriptor() async throws {
            let service = try PipeService()
            do {
                let reply = try await service.call("OpenPipe")
                #expect(reply.first?.fileDescriptorValue?.isOpen == true)
            }
            let pipe = try #require(service.handedOut.first)
            #expect(pipe.waitForEnd(timeout: 5))
        }

        @Test func aClosedDescriptorIsRefusedBeforeSending() async throws {
            let service = try PipeService()
            let pipe = try TestPipe()
            let writeEnd = DBusFileDescriptor(taking: pipe.takeWriteEnd())
            writeEnd.close()
            let error = await thrownError { try await service.call("WriteTo", [.unixFD(writeEnd), .string("x")]) }
            #expect(error?.name == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(writeEnd.description == "fd (closed)")
        }
    }
}
