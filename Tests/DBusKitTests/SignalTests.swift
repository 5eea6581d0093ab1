import DBusKit
import Foundation
import FoundationXML
import TestSupport
import Testing

extension BusTests {
    @Suite("Signals")
    struct Signals {
        @Test func propertiesChangedReachesASubscriber() async throws {
            let echo = try EchoService()
            let stream = try await echo.client.subscribe(
                matching:
                    "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='\(testPath)'"
            )
            echo.service.emitPropertiesChanged(
                path: testPath, interface: testInterface, changed: [("Volume", .double(0.75))],
                invalidated: ["Metadata"])
            var signals = stream.makeAsyncIterator()
            let signal = try #require(await signals.next())
            #expect(signal.sender == echo.service.uniqueName)
            #expect(signal.path == testPath)
            #expect(signal.member == "PropertiesChanged")
            #expect(
                signal.arguments == [
                    .string(testInterface), .stringVariantDict([("Volume", .double(0.75))]), .stringArray(["Metadata"]),
                ])
        }

        @Test func customSignalsAreRoutedByTheirRule() async throws {
            let echo = try EchoService()
            let changed = echo.client.signals(matching: "type='signal',interface='\(testInterface)',member='Changed'")
            let other = echo.client.signals(matching: "type='signal',interface='\(testInterface)',member='Other'")
            _ = try await echo.client.nameHasOwner(testName)  // the bus has processed both AddMatch calls
            echo.service.emitSignal(
                path: testPath, interface: testInterface, name: "Changed", arguments: [.string("volume"), .int64(-3)])
            echo.service.emitSignal(path: testPath, interface: testInterface, name: "Other", arguments: [])
            var changedSignals = changed.makeAsyncIterator()
            var otherSignals = other.makeAsyncIterator()
            #expect(await otherSignals.next()?.member == "Other")  // not Changed, which came first
            let first = await changedSignals.next()
            #expect(first?.member == "Changed")
            #expect(first?.arguments == [.string("volume"), .int64(-3)])
        }

        @Test func closeSendsWhatIsStillQueued() async throws {
            let echo = try EchoService()
            let stream = try await echo.client.subscribe(
                matching: "type='signal',interface='\(testInterface)',member='Changed'")
            for index in 0..<50 {
                echo.service.emitSignal(
                    path: testPath, interface: testInterface, name: "Changed",
                    arguments: [.string("last"), .int64(Int64(index))])
            }
            echo.service.close()
            var received: [Int64] = []
            for await signal in stream {
                received.append(signal.arguments.last?.int64Value ?? -1)
                if received.count == 50 { break }
            }
            #expect(received == Array(0..<50))
        }

        @Test func invalidSignalsAreDroppedAndStreamsEndOnClose() async throws {
            let echo = try EchoService()
            let stream = try await echo.client.subscribe(matching: "type='signal',interface='\(testInterface)'")
            echo.service.emitSignal(path: "bad path", interface: testInterface, name: "Changed", arguments: [])
            echo.service.emitSignal(
                path: testPath, interface: testInterface, name: "Other", arguments: [.string("x\0y")])
            echo.service.emitSignal(path: testPath, interface: testInterface, name: "Other", arguments: [])
            var signals = stream.makeAsyncIterator()
            #expect(await signals.next()?.arguments == [])
            echo.client.close()
            #expect(await signals.next() == nil)
            await #expect(throws: DBusError.self) { try await echo.client.subscribe(matching: "type='signal'") }
            await #expect(throws: DBusError.self) { try await echo.service.subscribe(matching: "bogus") }
        }
    }

    @Suite("Introspection")
    struct IntrospectionTests {
        @Test func introspectListsMethodsPropertiesAndSignalsInOrder() async throws {
            let echo = try EchoService()
            let reply = try await echo.call("Introspect", interface: "org.freedesktop.DBus.Introspectable")
            let xml = try #require(reply.first?.stringValue)
            #expect(xml == echo.service.introspectionXML(path: testPath))
            #expect(xml.hasPrefix("<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\""))
            let parsed = try IntrospectionSummary(xml)
            #expect(
                parsed.interfaces == [
                    "org.freedesktop.DBus.Peer", "org.freedesktop.DBus.Introspectable",
                    "org.freedesktop.DBus.Properties",
                    testInterface, "org.spool.Second",
                ])
            #expect(parsed.members[testInterface]?.contains("method Concat(in s a, in s b, out s ab)") == true)
            #expect(parsed.members[testInterface]?.contains("property Volume d readwrite") == true)
            #expect(parsed.members[testInterface]?.contains("property Secret s write") == true)
            #expect(parsed.members[testInterface]?.contains("signal Changed(s what, x how_much)") == true)
            #expect(
                parsed.members["org.freedesktop.DBus.Properties"]?.contains(
                    "method Get(in s interface_name, in s property_name, out v value)") == true)
            let methodOrder = parsed.members[testInterface]?.filter { $0.hasPrefix("method ") }.prefix(2)
            #expect(methodOrder.map(Array.init) == ["method Echo0(in y, out y)", "method Echo1(in b, out b)"])
        }

        @Test func parentPathsListTheirChildren() async throws {
            let echo = try EchoService()
            echo.service.export(path: "/org/spool/Other", interfaces: [])
            for (path, children) in [("/", ["org"]), ("/org", ["spool"]), ("/org/spool", ["Other", "Test"])] {
                let reply = try await echo.call(
                    "Introspect", interface: "org.freedesktop.DBus.Introspectable", path: path)
                let parsed = try IntrospectionSummary(try #require(reply.first?.stringValue))
                #expect(parsed.children == children, "\(path)")
                #expect(parsed.interfaces.isEmpty, "\(path)")
            }
            let leaf = try IntrospectionSummary(echo.service.introspectionXML(path: "/org/spool/Other"))
            #expect(leaf.interfaces.count == 3)
            #expect(leaf.children.isEmpty)
        }
    }
}

/// What an introspection document declares, flattened for comparison.
final class IntrospectionSummary: NSObject, XMLParserDelegate {
    private(set) var interfaces: [String] = []
    private(set) var members: [String: [String]] = [:]
    private(set) var children: [String] = []
    private var current: (kind: String, name: String, arguments: [String])?
    private var depth = 0

    init(_ xml: String) throws {
        super.init()
        let parser = XMLParser(data: Data(xml.utf8))
        parser.delegate = self
        guard parser.parse() else {
            throw RigError("introspection XML does not parse: \(String(describing: parser.parserError))")
        }
    }

    func parser(
        _ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        depth += 1
        let name = attributes["name"] ?? ""
        switch element {
        case "node" where depth == 2: children.append(name)
        case "interface": interfaces.append(name)
        case "method", "signal": current = (element, name, [])
        case "property":
            members[interfaces.last ?? "", default: []].append(
                "property \(name) \(attributes["type"] ?? "?") \(attributes["access"] ?? "?")")
        case "arg":
            let direction = attributes["direction"].map { $0 + " " } ?? ""
            let argument = direction + (attributes["type"] ?? "?") + (attributes["name"].map { " " + $0 } ?? "")
            current?.arguments.append(argument)
        default: break
        }
    }

    func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
        depth -= 1
        if element == "method" || element == "signal", let current {
            members[interfaces.last ?? "", default: []].append(
                "\(current.kind) \(current.name)(\(current.arguments.joined(separator: ", ")))")
            self.current = nil
        }
    }
}
