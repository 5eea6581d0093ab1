import Foundation
import Synchronization
import TestSupport
import Testing

/// About half a second of white noise as 128 kbit/s CBR MP3 (no two frames alike, so audio
/// taken from the wrong offset shows up), made once per test process.
private enum NoiseMP3 {
    private static let made = Mutex<Data?>(nil)

    static func data() async throws -> Data {
        if let cached = made.withLock({ $0 }) { return cached }
        let directory = try TemporaryDirectory(prefix: "spool-radio")
        let file = directory.file("noise.mp3")
        let result = try await runCommandAwaiting(
            "gst-launch-1.0",
            [
                "-q", "audiotestsrc", "wave=white-noise", "num-buffers=22", "samplesperbuffer=1024", "!",
                "audio/x-raw,rate=44100,channels=2", "!", "lamemp3enc", "target=bitrate", "bitrate=128", "cbr=true",
                "!", "filesink", "location=\(file.path)",
            ])
        guard result.status == 0 else { throw RigError("encoding the station's MP3 failed: \(result.stderr)") }
        let data = try Data(contentsOf: file)
        // Tests starting together each encode; the noise differs between runs, so all keep the first.
        return made.withLock { made in
            if made == nil { made = data }
            return made!
        }
    }
}

/// The stream rate of every test station: 256 kbit/s, so a few metadata intervals take a fraction of a second.
private let rate = 32_000

/// Runs the blocking socket reads of `body` on a thread of their own: a blocked executor
/// thread would stall the tests beside it.
private func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await onOwnThread { Result { try body() } }.get()
}

/// `duration` in seconds.
private func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
}

/// A station playing the noise MP3 at ``rate``.
private func station(_ settings: RadioSettings = .init(), faults: RadioFaults = .init()) async throws -> RadioStation {
    let station = try RadioStation(audio: try await NoiseMP3.data(), bytesPerSecond: rate, settings: settings)
    station.setFaults(faults)
    return station
}

/// What a reader received, carried out of its thread.
private struct Received: Sendable {
    let statusLine: String
    let headers: [String: String]
    let audio: Data
    let blocks: [ICYMetadataBlock]
    let body: Data
    let closed: Bool

    init(_ reader: ICYTestReader) {
        statusLine = reader.statusLine
        headers = reader.headers
        audio = reader.audio
        blocks = reader.blocks
        body = reader.body
        closed = reader.isClosedByPeer
    }
}

@Suite("Radio station: stream and metadata")
struct RadioStationTests {
    @Test func announcesItselfAndSendsNoMetadataUnlessAsked() async throws {
        let station = try await station(RadioSettings(metaInterval: 1_000, titles: [.init(atAudioByte: 0, "Song")]))
        let received = try await blocking {
            let reader = try ICYTestReader(port: station.port, metadata: false, headers: ["Range": "bytes=100-"])
            try reader.readAudio(atLeast: 3_500)
            return Received(reader)
        }
        #expect(received.statusLine == "HTTP/1.0 200 OK")
        let expectedHeaders = [
            "content-type": "audio/mpeg", "icy-name": "Spool Test Radio", "icy-genre": "Test",
            "icy-url": "http://radio.invalid/", "icy-br": "128", "icy-description": "A looping stream for tests",
            "cache-control": "no-cache", "connection": "close", "server": "spool-radio-station",
        ]
        #expect(received.headers == expectedHeaders)
        let request = try #require(try await station.waitForRequests(atLeast: 1).first)
        #expect(request.status == 200)
        #expect(request.icyMetaData == nil)
        #expect(request.range == "bytes=100-")
        #expect(request.metadataBlocksSent == 0)
        let played = station.audioBytes(from: request.startAudioByte, count: received.audio.count)
        #expect(firstDifference(received.audio, played) == nil, "\(describeDifference(received.audio, played))")
    }

    @Test func speaksOldShoutcastAndOmitsUnsetHeaders() async throws {
        let settings = RadioSettings(statusLine: "ICY 200 OK", icyGenre: nil, icyURL: nil, icyDescription: nil)
        let station = try await station(settings)
        let received = try await blocking {
            let reader = try ICYTestReader(port: station.port)
            try reader.readAudio(atLeast: 100)
            return Received(reader)
        }
        #expect(received.statusLine == "ICY 200 OK")
        #expect(received.headers["icy-name"] == "Spool Test Radio")
        #expect(received.headers["icy-metaint"] == "16000")
        for omitted in ["icy-genre", "icy-url", "icy-description", "content-length"] {
            #expect(received.headers[omitted] == nil, "\(omitted)")
        }
    }

    @Test func interleavesTheTitleEveryMetaInterval() async throws {
        let title = "Spool – Première chanson"
        let station = try await station(RadioSettings(metaInterval: 4_000, titles: [.init(atAudioByte: 0, title)]))
        let received = try await blocking {
            let reader = try ICYTestReader(port: station.port)
            try reader.readBlocks(atLeast: 3)
            return Received(reader)
        }
        #expect(received.headers["icy-metaint"] == "4000")
        let request = try #require(try await station.waitForRequests(atLeast: 1).first)
        #expect(request.icyMetaData == "1")
        let played = station.audioBytes(from: request.startAudioByte, count: received.audio.count)
        #expect(firstDifference(received.audio, played) == nil, "\(describeDifference(received.audio, played))")
        let blocks = received.blocks.prefix(3)
        #expect(blocks.map(\.audioOffset) == [4_000, 8_000, 12_000])
        let content = "StreamTitle='\(title)';".utf8.count
        #expect(blocks.first?.lengthByte == UInt8((content + 15) / 16))
        #expect(blocks.first?.streamTitle == Data(title.utf8))
        #expect(blocks.first?.payload.dropFirst(content).allSatisfy { $0 == 0 } == true)
        #expect(blocks.dropFirst().map(\.lengthByte) == [0, 0])
    }

    @Test func sendsAScheduledTitleInTheBlockAfterItsByte() async throws {
        let change: Int64 = 10_000
        let titles = [TitleChange(atAudioByte: 0, "First"), TitleChange(atAudioByte: change, raw: Data([0x43, 0xE9]))]
        let station = try await station(RadioSettings(metaInterval: 4_000, titles: titles))
        let received = try await blocking {
            // A lower-case header name: servers match it case-insensitively.
            let reader = try ICYTestReader(port: station.port, metadata: false, headers: ["icy-metadata": "1"])
            try reader.readBlocks(atLeast: 5)
            return Received(reader)
        }
        let start = try #require(try await station.waitForRequests(atLeast: 1).first).startAudioByte
        // The first block whose absolute byte (start + 4,000 × (k + 1)) reaches the change.
        let changed = (0..<5).first { start + 4_000 * Int64($0 + 1) >= change }!
        let titlesSeen = received.blocks.prefix(5).map { $0.streamTitle }
        var expected: [Data?] = Array(repeating: nil, count: 5)
        expected[0] = Data("First".utf8)
        expected[changed] = Data([0x43, 0xE9])
        #expect(titlesSeen == expected)
        #expect(received.blocks.prefix(5).map(\.isEmpty) == expected.map { $0 == nil })
    }

    @Test func setTitleReachesTheNextBlocks() async throws {
        let station = try await station(RadioSettings(metaInterval: 4_000, titles: [.init(atAudioByte: 0, "Before")]))
        let (received, changedAt) = try await blocking {
            let reader = try ICYTestReader(port: station.port)
            try reader.readBlocks(atLeast: 1)
            let changedAt = station.livePoint()
            station.setTitle("After")
            guard reader.read(timeout: 2, until: { $0.blocks.contains { $0.streamTitle == Data("After".utf8) } }) else {
                throw RigError("no block carried the new title")
            }
            return (Received(reader), changedAt)
        }
        #expect(received.blocks.first?.streamTitle == Data("Before".utf8))
        let start = try #require(try await station.waitForRequests(atLeast: 1).first).startAudioByte
        let carrying = try #require(received.blocks.first { $0.streamTitle == Data("After".utf8) })
        #expect(start + Int64(carrying.audioOffset) >= changedAt)
        #expect(station.title(atAudioByte: 0) == Data("Before".utf8))
        #expect(station.title(atAudioByte: station.livePoint()) == Data("After".utf8))
    }

    @Test func loopsTheFileForever() async throws {
        let audio = try await NoiseMP3.data()
        let station = try RadioStation(audio: audio, bytesPerSecond: rate)
        let count = Int64(audio.count)
        let acrossTheEnd = station.audioBytes(from: count - 10, count: 20)
        #expect(firstDifference(acrossTheEnd, audio.suffix(10) + audio.prefix(10)) == nil)
        #expect(firstDifference(station.audioBytes(from: count * 1_000 + 5, count: 7), audio[5..<12]) == nil)
        let twice = station.audioBytes(from: 3, count: audio.count * 2)
        #expect(firstDifference(twice, audio[3...] + audio + audio.prefix(3)) == nil)
    }

    @Test func stopAndLifetimeCloseEveryConnection() async throws {
        let stopped = try await station()
        let shortLived = try RadioStation(audio: try await NoiseMP3.data(), bytesPerSecond: rate, lifetime: 0.3)
        let closed = try await blocking {
            let first = try ICYTestReader(port: stopped.port)
            let second = try ICYTestReader(port: shortLived.port)
            stopped.stop()
            return (first.readUntilClosed(timeout: 2), second.readUntilClosed(timeout: 2))
        }
        #expect(closed.0, "stop() closed the open stream")
        #expect(closed.1, "the end of the lifetime closed the open stream")
        #expect(stopped.openConnections == 0)
        shortLived.stop()  // already stopped: this waits for its connection threads to end
        #expect(shortLived.openConnections == 0)
    }
}

@Suite("Radio station: faults")
struct RadioStationFaultTests {
    @Test func splitMetadataWritesKeepAudioAndTitles() async throws {
        let titles = [TitleChange(atAudioByte: 0, "Split"), TitleChange(atAudioByte: 6_000, "Second")]
        let station = try await station(
            RadioSettings(metaInterval: 4_000, titles: titles), faults: RadioFaults(splitMetadataWrites: true))
        let received = try await blocking {
            let reader = try ICYTestReader(port: station.port)
            try reader.readBlocks(atLeast: 4)
            return Received(reader)
        }
        let request = try #require(try await station.waitForRequests(atLeast: 1).first)
        let played = station.audioBytes(from: request.startAudioByte, count: received.audio.count)
        #expect(firstDifference(received.audio, played) == nil, "\(describeDifference(received.audio, played))")
        let changed = (0..<4).first { request.startAudioByte + 4_000 * Int64($0 + 1) >= 6_000 }!
        var expected: [Data?] = Array(repeating: nil, count: 4)
        expected[0] = Data("Split".utf8)
        expected[changed] = Data("Second".utf8)
        #expect(received.blocks.prefix(4).map(\.streamTitle) == expected)
        // Every metadata byte went out in a write of its own.
        let metadataBytes = received.blocks.reduce(0) { $0 + 1 + $1.payload.count }
        #expect(request.writes > metadataBytes)
        // The same body cut into other pieces parses the same.
        for size in [1, 3, 4_001] {
            var parser = ICYStreamParser(metaInterval: 4_000)
            var index = received.body.startIndex
            while index < received.body.endIndex {
                let end = min(index + size, received.body.endIndex)
                parser.feed(received.body[index..<end])
                index = end
            }
            #expect(firstDifference(parser.audio, received.audio) == nil, "pieces of \(size)")
            #expect(parser.blocks == received.blocks, "pieces of \(size)")
        }
    }

    @Test func oversizeBlocksAreFullLength() async throws {
        let station = try await station(
            RadioSettings(metaInterval: 4_000, titles: [.init(atAudioByte: 0, "Big")]),
            faults: RadioFaults(oversizeBlocks: true))
        let received = try await blocking {
            let reader = try ICYTestReader(port: station.port)
            try reader.readBlocks(atLeast: 2)
            return Received(reader)
        }
        let first = try #require(received.blocks.first)
        #expect(first.lengthByte == 255)
        #expect(first.payload.count == 4_080)
        #expect(first.streamTitle == Data("Big".utf8))
        #expect(received.blocks.dropFirst().first?.isEmpty == true)
        let start = try #require(try await station.waitForRequests(atLeast: 1).first).startAudioByte
        #expect(firstDifference(received.audio, station.audioBytes(from: start, count: received.audio.count)) == nil)
    }

    @Test func dropsAfterSecondsAndTakesTheReconnect() async throws {
        let station = try await station(faults: RadioFaults(dropAfterSeconds: 1))
        let (elapsed, reconnectedAudio) = try await blocking {
            let first = try ICYTestReader(port: station.port)
            let opened = ContinuousClock.now
            guard first.readUntilClosed(timeout: 3) else { throw RigError("the station kept the stream open") }
            let elapsed = seconds(.now - opened)
            let second = try ICYTestReader(port: station.port)
            try second.readAudio(atLeast: 1_000)
            return (elapsed, second.audio.count)
        }
        #expect(elapsed > 0.9, "closed after \(elapsed) s (and within the read's 3-s deadline)")
        #expect(reconnectedAudio >= 1_000)
        let log = try await station.waitForRequests(atLeast: 2)
        #expect(log.map(\.number) == [0, 1])
        #expect(log.map(\.status) == [200, 200])
        let closed = try #require(log[0].closed)
        let open = seconds(closed - log[0].arrived)
        #expect(open >= 0.99 && open < 1.5, "the station closed after \(open) s")
    }

    @Test func dropsAfterAudioBytesWithoutATrailingBlock() async throws {
        let station = try await station(
            RadioSettings(metaInterval: 4_000, titles: [.init(atAudioByte: 0, "Short")]),
            faults: RadioFaults(dropAfterAudioBytes: 8_000))
        let received = try await blocking {
            let reader = try ICYTestReader(port: station.port)
            guard reader.readUntilClosed(timeout: 2) else { throw RigError("the station kept the stream open") }
            return Received(reader)
        }
        #expect(received.audio.count == 8_000)
        #expect(received.blocks.map(\.audioOffset) == [4_000])
        let request = try #require(try await station.waitForRequests(atLeast: 1).first)
        #expect(request.audioBytesSent == 8_000)
        #expect(request.metadataBlocksSent == 1)
    }

    @Test func stallsOpenStreamsUntilLifted() async throws {
        let station = try await station(faults: RadioFaults(stall: .init(afterSeconds: 0.2)))
        let (duringStall, afterStall, closed) = try await blocking {
            let reader = try ICYTestReader(port: station.port, metadata: false)
            reader.read(for: 0.7)
            let duringStall = reader.audio.count
            station.setFaults(RadioFaults())
            try reader.readAudio(atLeast: duringStall + 3_200, timeout: 2)
            return (duringStall, reader.audio.count, reader.isClosedByPeer)
        }
        // 0.2 s of the stream arrived, not 0.7 s.
        #expect(duringStall >= rate / 10 && duringStall <= rate * 4 / 10, "\(duringStall) bytes")
        #expect(afterStall > duringStall)
        #expect(!closed)
    }

    @Test func refusesConnectionsUntilLifted() async throws {
        let station = try await station(faults: RadioFaults(refuseConnections: true))
        let refused = try await blocking { (try? ICYTestReader(port: station.port, timeout: 2)) == nil }
        #expect(refused)
        #expect(station.refusedConnections == 1)
        #expect(station.requests().isEmpty)
        station.setFaults(RadioFaults())
        let audio = try await blocking {
            let reader = try ICYTestReader(port: station.port)
            try reader.readAudio(atLeast: 100)
            return reader.audio.count
        }
        #expect(audio >= 100)
        #expect(try await station.waitForRequests(atLeast: 1).count == 1)
    }

    @Test func answersErrorsWithRetryAfterThenTheStream() async throws {
        let station = try await station(faults: RadioFaults(errorResponses: .init(count: 1, retryAfter: 5)))
        let (failed, served) = try await blocking {
            let first = try ICYTestReader(port: station.port)
            _ = first.readUntilClosed(timeout: 2)
            let second = try ICYTestReader(port: station.port)
            try second.readAudio(atLeast: 1_000)
            return (Received(first), Received(second))
        }
        #expect(failed.statusLine == "HTTP/1.0 503 Service Unavailable")
        #expect(failed.headers["retry-after"] == "5")
        #expect(failed.body == Data("injected failure\n".utf8))
        #expect(failed.closed)
        #expect(served.statusLine == "HTTP/1.0 200 OK")
        #expect(served.audio.count >= 1_000)
        #expect(try await station.waitForRequests(atLeast: 2).map(\.status) == [503, 200])
    }

    @Test func pacesAtTheRateAfterTheBurst() async throws {
        let burst = 16_000
        let station = try await station(RadioSettings(burstBytes: burst))
        let (paced, burstArrived) = try await blocking {
            let reader = try ICYTestReader(port: station.port, metadata: false)
            reader.read(for: 2)
            // The live point is now well past the burst, so a new listener gets all of it at once:
            // at the rate alone, 0.25 s brings half of it.
            let late = try ICYTestReader(port: station.port, metadata: false)
            return (reader.audio.count, late.read(timeout: 0.25) { $0.audio.count >= burst })
        }
        let log = try await station.waitForRequests(atLeast: 2)
        let expected = Double(2 * rate + log[0].burstBytes)
        #expect(abs(Double(paced) - expected) <= 0.3 * expected, "\(paced) bytes in 2 s, expected about \(expected)")
        #expect(burstArrived)
        #expect(log[1].burstBytes == burst)
    }
}
