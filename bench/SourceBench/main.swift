// Measures reading a complete cached resource through the media source
// (HTTPByteSource, as the engine reads it) against the cache's raw reads of
// the same entry, in one run.
//
//   swift run -c release SourceBench
import Basics
import Fetcher
import Foundation
import MediaSource
import RangeCache

let size = 100 << 20
let chunk = 64 << 10
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-sourcebench-\(getpid())")
defer { try? FileManager.default.removeItem(at: directory) }

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

// A complete 100 MB entry, as if it had been played once.
let cache = try RangeCache(directory: directory)
let url = URL(string: "http://127.0.0.1:9/bench.flac")!
let entry = try cache.entry(for: url)
_ = try entry.setMetadata(
    EntryMetadata(url: url, validator: ResourceVersion(etag: "\"b\"", length: Int64(size)), acceptsRanges: true))
var block = Data(count: 1 << 20)
for index in 0..<block.count { block[index] = UInt8(truncatingIfNeeded: index &* 7) }
for offset in stride(from: 0, to: size, by: block.count) { try entry.write(block, at: Int64(offset)) }
try entry.flush()
entry.close()

let fetcher = Fetcher(userAgent: "Spool/bench")
var rawTimes: [Double] = []
var sourceTimes: [Double] = []
for _ in 0..<5 {
    let raw = try cache.entry(for: url)
    var start = now()
    var offset: Int64 = 0
    while offset < Int64(size) {
        guard let bytes = raw.read(at: offset, maxLength: chunk) else { fatalError("hole at \(offset)") }
        offset += Int64(bytes.count)
    }
    rawTimes.append(now() - start)
    raw.close()

    let source = HTTPByteSource(url: url, entry: try cache.entry(for: url), fetcher: fetcher)
    let opened = DispatchSemaphore(value: 0)
    source.open { _ in opened.signal() }
    opened.wait()
    start = now()
    offset = 0
    while offset < Int64(size) {
        guard case .data(let bytes) = source.read(at: offset, maxLength: chunk, wake: {}) else {
            fatalError("not served from the cache at \(offset)")
        }
        offset += Int64(bytes.count)
    }
    sourceTimes.append(now() - start)
    source.close()
}
let rawRate = Double(size) / median(rawTimes) / 1e6
let sourceRate = Double(size) / median(sourceTimes) / 1e6
print(
    String(
        format:
            "complete 100 MB entry in 64 KiB reads: media source %.0f MB/s, raw cache %.0f MB/s: %.0f %%  [target ≥ 80 %%] (medians of 5)",
        sourceRate, rawRate, sourceRate / rawRate * 100))
cache.close()
