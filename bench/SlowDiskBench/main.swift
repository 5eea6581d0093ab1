// Reads of bytes already here while the disk is slow: every data sync of the cache takes
// 500 ms (a storage that sleeps before fdatasync). A reader reads a 24 MB resource as the
// engine's feeder does (need-data → HTTPByteSource.read), in 4 KiB reads at a 320 kbps
// audio rate while the download runs, and the time of each read whose bytes are held is
// measured. Cases: the origin on loopback unthrottled (the download outruns the disk) and
// capped at 3× the audio rate.
//
//   swift run -c release SlowDiskBench
import Dispatch
import Fetcher
import Foundation
import MediaSource
import RangeCache
import TestSupport

/// The file system, with every data sync taking `delay`.
final class SlowSyncStorage: CacheStorage {
    let disk = FileSystemStorage()
    let delay: UInt32
    init(delayMicroseconds: UInt32) { delay = delayMicroseconds }
    func create(_ path: String) -> (any StoredFile)? { disk.create(path).map { SlowFile($0, delay) } }
    func open(_ path: String, writable: Bool) -> (any StoredFile)? {
        disk.open(path, writable: writable).map { SlowFile($0, delay) }
    }
    func remove(_ path: String) { disk.remove(path) }
    func syncDirectory(_ directory: String) { disk.syncDirectory(directory) }
    func fileNames(in directory: String) -> Set<String> { disk.fileNames(in: directory) }
}

final class SlowFile: StoredFile {
    let file: any StoredFile
    let delay: UInt32
    init(_ file: any StoredFile, _ delay: UInt32) {
        self.file = file
        self.delay = delay
    }
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int { file.write(bytes, at: offset) }
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int {
        file.read(into: buffer, at: offset)
    }
    func sync() -> Int32 {
        usleep(delay)
        return file.sync()
    }
    var length: Int64? { file.length }
    var allocatedBytes: Int64 { file.allocatedBytes }
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

let size = 24 << 20
let body = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) })
let audioRate = 40_000.0  // bytes per second: 320 kbps
let origin = try FaultOrigin(lifetime: 300)
let fetcher = Fetcher(userAgent: "Spool/bench")
print("SlowDiskBench: every data sync takes 500 ms; reads of held bytes, 4 KiB at \(Int(audioRate * 8 / 1000)) kbps")

for (label, rate) in [("origin unthrottled", nil), ("origin at 3× the audio rate", Int(audioRate * 3))]
    as [(String, Int?)]
{
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "spool-slowdisk-\(getpid())-\(rate ?? 0)")
    defer { try? FileManager.default.removeItem(at: directory) }
    var configuration = RangeCache.Configuration()
    configuration.minimumFreeBytes = 0
    configuration.minimumFreeFraction = 0
    configuration.storage = SlowSyncStorage(delayMicroseconds: 500_000)
    let cache = try RangeCache(directory: directory, configuration: configuration)
    let path = "/slow-\(rate ?? 0).flac"
    origin.serve(OriginResource(body, etag: "\"s\""), at: path, faults: OriginFaults(bytesPerSecond: rate))
    let url = origin.url(for: path)
    let source = HTTPByteSource(url: url, entry: try cache.entry(for: url), fetcher: fetcher)
    let opened = DispatchSemaphore(value: 0)
    source.open { _ in opened.signal() }
    opened.wait()

    var times: [Double] = []
    var offset: Int64 = 0
    let start = DispatchTime.now()
    let seconds = 12.0
    while Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9 < seconds {
        let before = DispatchTime.now().uptimeNanoseconds
        if source.holds(offset..<(offset + 4096)) {
            let outcome = source.read(at: offset, maxLength: 4096, wake: {})
            let took = Double(DispatchTime.now().uptimeNanoseconds - before) / 1e6
            if case .data(let bytes) = outcome {
                times.append(took)
                offset += Int64(bytes.count)
            }
        }
        usleep(UInt32(4096 / audioRate * 1e6))  // the audio's pace
    }
    source.close()
    let closeStart = DispatchTime.now().uptimeNanoseconds
    cache.close()
    let closing = Double(DispatchTime.now().uptimeNanoseconds - closeStart) / 1e9
    print(
        String(
            format:
                "%@: %d reads of held bytes: p50 %.3f ms, p99 %.3f ms, max %.1f ms  [target p99 ≤ 5 ms]; cache close %.1f s",
            label, times.count, percentile(times, 0.5), percentile(times, 0.99), times.max() ?? 0, closing))
}
