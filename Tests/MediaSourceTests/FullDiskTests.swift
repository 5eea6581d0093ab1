import Foundation
import MediaSource
import RangeCache
import TestSupport
import Testing

/// The file system, except that no byte of audio fits: a data file gets its header, and every
/// write past it fails with ENOSPC, as on a disk that filled up.
final class FullDiskStorage: CacheStorage {
    let disk = FileSystemStorage()

    func create(_ path: String) -> (any StoredFile)? { disk.create(path).map(FullFile.init) }
    func open(_ path: String, writable: Bool) -> (any StoredFile)? {
        disk.open(path, writable: writable).map(FullFile.init)
    }
    func remove(_ path: String) { disk.remove(path) }
    func syncDirectory(_ directory: String) { disk.syncDirectory(directory) }
    func fileNames(in directory: String) -> Set<String> { disk.fileNames(in: directory) }
}

private final class FullFile: StoredFile {
    let file: any StoredFile
    init(_ file: any StoredFile) { self.file = file }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int {
        guard offset == 0 else {
            errno = ENOSPC
            return -1
        }
        return file.write(bytes, at: offset)
    }
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int {
        file.read(into: buffer, at: offset)
    }
    func sync() -> Int32 { file.sync() }
    var length: Int64? { file.length }
    var allocatedBytes: Int64 { file.allocatedBytes }
}

@Suite("A full disk", .serialized)
struct FullDiskTests {
    @Test func aTrackLongerThanTheMemoryWindowStreamsThroughItAndASeekBackAsksAgain() throws {
        // Capped, so that a cancelled transfer has not already pushed the whole body into the
        // sockets' buffers: bytes sent then measure bytes asked for.
        let rig = try CacheRig(size: 3 << 20, faults: OriginFaults(bytesPerSecond: 6 << 20), storage: FullDiskStorage())
        let capacity: Int64 = 512 << 10
        let source = HTTPByteSource(
            url: rig.url, entry: try rig.cache.entry(for: rig.url), fetcher: rig.fetcher,
            memoryWindow: MemoryWindow(capacity: capacity))
        defer { source.close() }
        #expect(try open(source).get().length == Int64(rig.body.count))

        var largest: Int64 = 0
        var offset = 0
        while offset < rig.body.count {
            let length = min(64 << 10, rig.body.count - offset)
            let bytes = try readFully(source, at: Int64(offset), length: length).get()
            try #require(firstDifference(bytes, rig.body[offset..<offset + length]) == nil, "bytes differ at \(offset)")
            largest = max(largest, source.bytesInMemory)
            offset += length
            // Read at the pace of playback, a quarter of the origin's rate: the download could
            // run far ahead of the reader.
            Thread.sleep(forTimeInterval: Double(length) / Double(3 << 19))
        }
        #expect(largest <= capacity, "held \(largest) bytes with a window of \(capacity)")
        #expect(largest >= capacity / 4, "the disk refused the bytes and memory took them (\(largest) held)")
        // The download stayed within the window: what it dropped behind the reader was never
        // fetched twice on the way through.
        let sent = rig.bytesSent
        #expect(
            sent <= rig.body.count + (64 << 10),
            "sent \(sent) bytes for a body of \(rig.body.count): \(rig.origin.requests().map { "\($0.range ?? "-") \($0.bodyBytesSent)" })"
        )

        // The start was dropped long ago: reading it again asks the origin again.
        let before = rig.origin.requests().count
        let again = try readFully(source, at: 0, length: 4096).get()
        #expect(firstDifference(again, rig.body.prefix(4096)) == nil)
        let requests = try rig.origin.requests(atLeast: before + 1)
        #expect(
            requests.dropFirst(before).contains { $0.range?.hasPrefix("bytes=0-") == true },
            "\(requests.map { $0.range ?? "-" })")
        #expect(source.bytesInMemory <= capacity)
    }
}
