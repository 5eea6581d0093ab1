// A writer for the range cache's crash test: it writes two entries forever
// (one sequentially, one at random offsets) and reports each write on stdout,
// until the test SIGKILLs it. Usage: RangeCacheKillChild CACHE_DIR SOURCE_FILE
//
// Entry bytes are a function of the source file, the entry and its version
// (the ETag `"g<version>"`): byte o of entry e at version g is
// source[(o + (2g + e) * 4099) % source.count]. When an entry is nearly full
// its version is bumped, which empties it.
import Basics
import Foundation
import RangeCache

let arguments = CommandLine.arguments
guard arguments.count == 3, let source = FileManager.default.contents(atPath: arguments[2]) else {
    FileHandle.standardError.write(Data("usage: RangeCacheKillChild CACHE_DIR SOURCE_FILE\n".utf8))
    exit(2)
}

/// The entries' length.
let length: Int64 = 1 << 20
/// The largest piece written at once.
let maxPiece = 96 << 10

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func version(of entry: CacheEntry) -> Int {
    Int(entry.metadata.validator.etag?.dropFirst(2).dropLast() ?? "") ?? 0
}

func bump(_ entry: CacheEntry, to version: Int) throws {
    try entry.setMetadata(EntryMetadata(validator: ResourceVersion(etag: "\"g\(version)\"", length: length)))
}

var random = SystemRandomNumberGenerator()
var configuration = RangeCache.Configuration()
configuration.minimumFreeBytes = 0
configuration.minimumFreeFraction = 0
configuration.maximumUnsyncedBytes = configuration.syncBatchBytes  // the tightest loss bound, proven by the test
do {
    let cache = try RangeCache(directory: URL(fileURLWithPath: arguments[1]), configuration: configuration)
    let entries = try ["seq", "rand"].map { try cache.entry(for: CacheKey(stable: $0))! }
    var versions = entries.map(version(of:))
    for (index, entry) in entries.enumerated() where entry.metadata.validator.etag == nil {
        try bump(entry, to: versions[index])
    }
    say("ready")
    let parent = getppid()
    var piece = [UInt8](repeating: 0, count: maxPiece)
    // Run until killed, or until the test process that started us is gone.
    while getppid() == parent {
        for (index, entry) in entries.enumerated() {
            let offset: Int64
            if index == 0 {
                offset = entry.contiguousLength(from: 0)
            } else {
                offset = Int64.random(in: 0..<length, using: &random)
            }
            if offset >= length || entry.cachedRanges.count > length * 9 / 10 {
                versions[index] += 1
                try bump(entry, to: versions[index])
                say("V \(index) \(versions[index])")
                continue
            }
            let count = Int(min(Int64(Int.random(in: 1...maxPiece, using: &random)), length - offset))
            let shift = Int64((2 * versions[index] + index) * 4099)
            for i in 0..<count { piece[i] = source[Int((offset + Int64(i) + shift) % Int64(source.count))] }
            try piece.withUnsafeBytes { try entry.write(UnsafeRawBufferPointer(rebasing: $0[..<count]), at: offset) }
            if entry.isBehindOnSyncs {
                // Ahead of the disk: take no more bytes until it catches up, as a transfer is held.
                let caughtUp = DispatchSemaphore(value: 0)
                entry.whenSyncsCatchUp { caughtUp.signal() }
                caughtUp.wait()
            }
            say("W \(index) \(versions[index]) \(entry.cachedRanges.count)")
        }
    }
    exit(0)
} catch {
    FileHandle.standardError.write(Data("RangeCacheKillChild: \(error)\n".utf8))
    exit(1)
}
