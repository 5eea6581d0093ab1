import ByteSourceAPI
import Foundation
import HLSSource
import Synchronization
import TestSupport
import Testing

/// 20 s of AAC in 4-s MPEG-TS segments by `hlssink2`, as served from memory: the playlist's
/// text and each segment's bytes by URL.
private func presentation() async throws -> (playlist: String, segments: [Data], durations: [Duration]) {
    let folder = try TemporaryDirectory(prefix: "spool-ts-entry")
    let (playlist, names) = try await HLSMedia.make(in: folder.url, seconds: 20)
    let text = try String(contentsOf: playlist, encoding: .utf8)
    let durations = text.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }.map {
        Duration.microseconds(Int64((Double($0.dropFirst(8).split(separator: ",")[0]) ?? 0) * 1e6))
    }
    return (text, try names.map { try Data(contentsOf: folder.url.appendingPathComponent($0)) }, durations)
}

/// A 188-byte packet of `pid`; with `pts`, it begins a PES packet of MPEG audio stamped so.
private func packet(pid: Int, pts: Int64? = nil, streamID: UInt8 = 0xC0) -> Data {
    var bytes: [UInt8] = [0x47, UInt8(pid >> 8) | (pts == nil ? 0 : 0x40), UInt8(pid & 0xFF), 0x10]
    if let pts {
        bytes += [0, 0, 1, streamID, 0, 0, 0x80, 0x80, 5]
        bytes += [
            UInt8(0x21 | ((pts >> 29) & 0x0E)), UInt8((pts >> 22) & 0xFF), UInt8(((pts >> 14) & 0xFE) | 1),
            UInt8((pts >> 7) & 0xFF), UInt8(((pts << 1) & 0xFE) | 1),
        ]
    }
    return Data(bytes + [UInt8](repeating: 0xFF, count: 188 - bytes.count))
}

/// Whether the packet at `offset` of `bytes` begins a PES packet on `pid` (its own reading of
/// the header's bits, to check the entry against).
private func beginsPES(_ bytes: Data, at offset: Int, pid: Int) -> Bool {
    let start = bytes.startIndex + offset
    return bytes[start] == 0x47 && bytes[start + 1] & 0x40 != 0
        && (Int(bytes[start + 1] & 0x1F) << 8 | Int(bytes[start + 2])) == pid
}

@Suite("Entering an MPEG-TS segment part-way")
struct TransportStreamEntryTests {
    /// A real segment's head is its PAT and program map; its first audio packet, entered at,
    /// plays at the segment's start.
    @Test func theHeadOfARealSegmentIsItsTablesThenItsFirstAudio() async throws {
        let segment = try await presentation().segments[2]
        let head = try #require(TransportStreamEntry.head(of: segment.prefix(3008)))
        #expect(head.tablesLength == 2 * 188, "hlssink2 writes the PAT and the PMT first")
        #expect(beginsPES(segment, at: head.tablesLength, pid: head.audioPID))
        let first = try #require(TransportStreamEntry.entry(in: segment.dropFirst(head.tablesLength), after: head))
        #expect(first == TransportStreamEntry.Entry(offset: 0, time: .zero))
    }

    /// Entered at any packet of a real segment, the entry is the first packet from there that
    /// begins an audio PES packet; its time grows with the offset and stays within the segment.
    @Test func fromEveryPacketTheEntryIsTheNextAudioPESAndItsTimeGrows() async throws {
        let made = try await presentation()
        for (index, segment) in made.segments.enumerated() where made.durations[index] > .seconds(1) {
            let head = try #require(TransportStreamEntry.head(of: segment))
            var last = Duration.zero
            for start in stride(from: head.tablesLength, to: segment.count - 188 * 8, by: 188) {
                let entry = try #require(
                    TransportStreamEntry.entry(in: segment.dropFirst(start), after: head), "at \(start)")
                #expect(beginsPES(segment, at: start + entry.offset, pid: head.audioPID))
                for skipped in stride(from: start, to: start + entry.offset, by: 188) {
                    #expect(!beginsPES(segment, at: skipped, pid: head.audioPID), "skipped a PES at \(skipped)")
                }
                #expect(entry.time >= last && entry.time < made.durations[index], "at \(start): \(entry.time)")
                last = entry.time
            }
        }
    }

    /// The estimate for a depth lands on a packet and, in a real segment of AAC (about constant
    /// bytes per second), within 0.3 s of that depth.
    @Test func theEstimateForADepthLandsNearIt() async throws {
        let made = try await presentation()
        let segment = made.segments[1]
        let head = try #require(TransportStreamEntry.head(of: segment))
        for depth in [0.5, 1.0, 2.0, 3.0, 3.5].map({ Duration.milliseconds(Int64($0 * 1000)) }) {
            let offset = try #require(
                TransportStreamEntry.estimatedOffset(
                    depth: depth, duration: made.durations[1], length: Int64(segment.count), head: head))
            #expect(offset % 188 == 0)
            let entry = try #require(TransportStreamEntry.entry(in: segment.dropFirst(Int(offset)), after: head))
            #expect(abs((entry.time - depth) / .milliseconds(1)) < 300, "\(depth): entered at \(entry.time)")
        }
    }

    @Test func estimatesThatAreNoEntry() {
        let head = TransportStreamEntry.Head(tablesLength: 376, audioPID: 0x41, firstPTS: 0)
        let estimate = { (depth: Double, length: Int64) in
            TransportStreamEntry.estimatedOffset(
                depth: .milliseconds(Int64(depth * 1000)), duration: .seconds(4), length: length, head: head)
        }
        #expect(estimate(0, 100_000) == nil, "no depth")
        #expect(estimate(0.001, 100_000) == nil, "no further than the first audio")
        #expect(estimate(4, 188 * 500) == nil, "the segment's end")
        #expect(estimate(2, 376) == nil, "nothing but tables")
        let half: Int64 = 376 + 188 * 249  // the tables, then half the packets after them
        #expect(estimate(2, 188 * 500) == half)
        #expect(
            TransportStreamEntry.estimatedOffset(depth: .seconds(2), duration: .zero, length: 100_000, head: head)
                == nil)
    }

    /// Bytes it cannot read give no entry (the segment is then read whole), never a guess.
    @Test func whatItCannotReadIsNoEntry() {
        let pat = packet(pid: 0)
        let pmt = packet(pid: 0x20)
        let audio = packet(pid: 0x41, pts: 90_000)
        #expect(TransportStreamEntry.head(of: pat + pmt + audio)?.tablesLength == 376)
        #expect(TransportStreamEntry.head(of: Data()) == nil)
        #expect(TransportStreamEntry.head(of: (pat + pmt + audio).prefix(187 + 376)) == nil, "a packet cut short")
        #expect(TransportStreamEntry.head(of: Data("ID3\u{4}\0\0\0\0\0\0packed audio".utf8)) == nil)
        #expect(TransportStreamEntry.head(of: pmt + audio) == nil, "no PAT before the audio")
        var lostSync = pat + pmt + audio
        lostSync[188] = 0x00
        #expect(TransportStreamEntry.head(of: lostSync) == nil)
        #expect(TransportStreamEntry.head(of: pat + packet(pid: 0x41) + pmt) == nil, "no PES begins")
        #expect(TransportStreamEntry.head(of: pat + packet(pid: 0x42, pts: 0, streamID: 0xBD)) == nil, "not audio")

        let head = TransportStreamEntry.Head(tablesLength: 376, audioPID: 0x41, firstPTS: 90_000)
        #expect(TransportStreamEntry.entry(in: packet(pid: 0x42, pts: 180_000), after: head) == nil, "another PID")
        var broken = packet(pid: 0x41) + packet(pid: 0x41, pts: 180_000)
        broken[0] = 0x46
        #expect(TransportStreamEntry.entry(in: broken, after: head) == nil, "lost sync")
        #expect(
            TransportStreamEntry.entry(in: packet(pid: 0x41) + packet(pid: 0x41, pts: 180_000), after: head)
                == TransportStreamEntry.Entry(offset: 188, time: .seconds(1)))
    }

    /// A PTS that wrapped past 33 bits since the segment's first still counts forward.
    @Test func aTimestampThatWrappedCountsOn() {
        let wrap: Int64 = 1 << 33
        let head = TransportStreamEntry.Head(tablesLength: 376, audioPID: 0x41, firstPTS: wrap - 45_000)
        #expect(
            TransportStreamEntry.entry(in: packet(pid: 0x41, pts: 45_000), after: head)?.time == .seconds(1))
    }
}

/// The starts a source reported moved (``HLSByteSource/whenRestartMoved(_:)``).
private final class MovedStarts: Sendable {
    let starts = Mutex<[Duration]>([])
}

@Suite("HLS: a restart deep into a segment")
struct SegmentEntrySourceTests {
    /// A source of the presentation over memory, and the starts it reports moved.
    private static func source(
        _ made: (playlist: String, segments: [Data], durations: [Duration]), key: [UInt8]? = nil
    ) throws -> (Origin, HLSByteSource, MovedStarts) {
        var playlist = made.playlist
        var bodies: [URL: Data] = [:]
        for (index, segment) in made.segments.enumerated() {
            let name = String(format: "seg%03d.ts", index)
            bodies[url(name)] = try key.map { try opensslEncrypt(segment, key: $0, iv: iv(index)) } ?? segment
        }
        var blobs: [URL: Data] = [:]
        if let key {
            playlist = playlist.replacingOccurrences(
                of: "#EXT-X-TARGETDURATION:4\n", with: "#EXT-X-TARGETDURATION:4\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n")
            blobs[url("k")] = Data(key)
        }
        let origin = Origin(playlists: [url("index.m3u8"): playlist], bodies: bodies, blobs: blobs)
        let source = origin.source(url("index.m3u8"))
        let moved = MovedStarts()
        source.whenRestartMoved { start in moved.starts.withLock { $0.append(start) } }
        return (origin, source, moved)
    }

    /// The IV of segment `index` with no IV in its key tag: its media sequence number.
    private static func iv(_ index: Int) -> [UInt8] { Array(repeating: 0, count: 15) + [UInt8(index)] }

    /// 2.5 s into the third segment: the stream is that segment's tables, then its bytes from a
    /// packet that begins audio before the target, then the segments after it; the source never
    /// asks for the bytes between, and reports where the entered stream starts.
    @Test func itReadsTheTablesThenTheSegmentFromNearTheTarget() async throws {
        let made = try await presentation()
        #expect(made.playlist.contains("#EXT-X-TARGETDURATION:4\n"))
        let (origin, source, moved) = try Self.source(made)
        _ = try await open(source).get()
        let listedStart = made.durations[0] + made.durations[1]
        let target = listedStart + .milliseconds(2_500)
        let segmentStart = try #require(source.restart(at: target))
        #expect(abs((segmentStart - listedStart) / .microseconds(1)) < 1, "the third segment's start")
        let read = try await readAll(source, chunk: 4096).get()

        let segment = made.segments[2]
        let after = made.segments[3...].reduce(Data(), +)
        #expect(read.prefix(376) == segment.prefix(376), "the tables first")
        #expect(read.suffix(after.count) == after, "then the segments after it, whole")
        let entered = read.dropFirst(376).dropLast(after.count)
        let resume = segment.count - entered.count
        #expect(entered.count < segment.count * 6 / 10, "entered \(entered.count) of \(segment.count) bytes")
        #expect(segment.suffix(entered.count) == entered && resume % 188 == 0, "from a packet of the segment")
        let head = try #require(TransportStreamEntry.head(of: segment))
        let entry = try #require(TransportStreamEntry.entry(in: segment.dropFirst(resume), after: head))
        #expect(entry.offset == 0, "from a packet that begins audio")
        #expect(moved.starts.withLock { $0 } == [segmentStart + entry.time])
        #expect(
            entry.time <= target - segmentStart && entry.time > target - segmentStart - .seconds(1),
            "starts \(entry.time) in, for a target 2.5 s in")

        let asked = try #require(origin.made(url("seg002.ts")).first).readOffsets
        #expect(!asked.contains { $0 >= 376 + 3008 && $0 < resume - 188 * 8 }, "asked between: \(asked)")
    }

    /// A target near its segment's start, an encrypted segment (CBC reads from the start), or
    /// one that is not a transport stream: the segment is read whole, and nothing is moved.
    @Test(arguments: ["shallow", "encrypted", "not TS"])
    func otherRestartsReadTheSegmentWhole(kind: String) async throws {
        var made = try await presentation()
        if kind == "not TS" { made.segments = made.segments.map { Data("not a transport stream".utf8) + $0 } }
        let key: [UInt8]? = kind == "encrypted" ? Array(0..<16) : nil
        let (_, source, moved) = try Self.source(made, key: key)
        _ = try await open(source).get()
        let listedStart = made.durations[0] + made.durations[1]
        let depth: Duration = kind == "shallow" ? .milliseconds(500) : .milliseconds(2_500)
        let segmentStart = try #require(source.restart(at: listedStart + depth))
        #expect(abs((segmentStart - listedStart) / .microseconds(1)) < 1, "the third segment's start")
        let read = try await readAll(source, chunk: 4096).get()
        #expect(read == made.segments[2...].reduce(Data(), +))
        #expect(moved.starts.withLock { $0 }.isEmpty)
    }

    /// A segment of `packets` audio packets after its tables, each beginning a PES packet, the
    /// first `share` of them spanning `early` seconds and the rest the remaining 4 s less that:
    /// bytes that are far from even in time, as a byte estimate meets in VBR audio.
    private static func uneven(packets: Int, share: Double, early: Double) -> Data {
        let split = Int(Double(packets) * share)
        var segment = packet(pid: 0) + packet(pid: 0x20)
        for index in 0..<packets {
            let seconds =
                index < split
                ? early * Double(index) / Double(split)
                : early + (4 - early) * Double(index - split) / Double(packets - split)
            segment += packet(pid: 0x41, pts: 900_000 + Int64(seconds * 90_000))
        }
        return segment
    }

    private static func threeSegments(_ middle: Data) -> (playlist: String, segments: [Data], durations: [Duration]) {
        let playlist =
            "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n"
            + (0..<3).map { String(format: "#EXTINF:4.0,\nseg%03d.ts\n", $0) }.joined() + "#EXT-X-ENDLIST\n"
        let plain = uneven(packets: 400, share: 0.5, early: 2)
        return (playlist, [plain, middle, plain], Array(repeating: .seconds(4), count: 3))
    }

    /// An estimate that lands past the target (the segment's first half of bytes holds 3.5 of
    /// its 4 s) moves back by what it overshot, at the bytes per second it found: the stream
    /// enters before the target, not after it, and not at the segment's start.
    @Test func anEstimatePastTheTargetMovesBack() async throws {
        let middle = Self.uneven(packets: 400, share: 0.5, early: 3.5)
        let (origin, source, moved) = try Self.source(Self.threeSegments(middle))
        _ = try await open(source).get()
        #expect(source.restart(at: .milliseconds(6_500)) == .seconds(4))
        let read = try await readAll(source, chunk: 4096).get()
        let starts = moved.starts.withLock { $0 }
        let start = try #require(starts.first, "never entered")
        #expect(starts.count == 1)
        #expect(start <= .milliseconds(6_500) && start > .milliseconds(5_500), "entered at \(start)")
        let resume = middle.count + 2 * 188 - (read.count - Self.uneven(packets: 400, share: 0.5, early: 2).count)
        #expect(resume > 2 * 188 + 188 * 100, "entered \(resume) bytes in")
        let asked = try #require(origin.made(url("seg001.ts")).first).readOffsets.filter { $0 > 188 * 16 }
        #expect(Set(asked).count >= 2, "the estimate and the one moved back: \(asked)")
    }

    /// When the estimates keep landing past the target (all but the segment's last packets
    /// play in its last instant), the segment is read whole, from its first byte.
    @Test func estimatesThatKeepOvershootingReadTheSegmentWhole() async throws {
        let middle = Self.uneven(packets: 400, share: 0.02, early: 3.9)
        let made = Self.threeSegments(middle)
        let (_, source, moved) = try Self.source(made)
        _ = try await open(source).get()
        #expect(source.restart(at: .milliseconds(6_500)) == .seconds(4))
        #expect(try await readAll(source, chunk: 4096).get() == made.segments[1...].reduce(Data(), +))
        #expect(moved.starts.withLock { $0 }.isEmpty)
    }
}
