import ByteSourceAPI
import Fetcher
import Foundation
import MediaSource
import RangeCache
import TestSupport
import Testing

/// Reads `length` bytes from 0 in 64 KiB reads, as a player does (a read of everything at once
/// would wait until the whole resource is there and hide what a splice does to earlier reads).
func readInChunks(_ source: ByteSource, length: Int, chunk: Int = 65_536) -> Result<Data, MediaSourceError> {
    var collected = Data()
    while collected.count < length {
        switch readFully(source, at: Int64(collected.count), length: min(chunk, length - collected.count)) {
        case .success(let bytes):
            if bytes.isEmpty { return .success(collected) }
            collected.append(bytes)
        case .failure(let error):
            return .failure(error)
        }
    }
    return .success(collected)
}

/// A partial entry resumed after the file changed on the origin with the same length: whatever
/// the origin names versions with, the bytes read are one version, never a splice of two.
@Suite("Resuming never splices two versions", .serialized)
struct SplicingTests {
    enum Origin: String, CaseIterable, CustomTestStringConvertible {
        /// A weak ETag alone: no If-Range can be sent.
        case weakETagOnly
        /// Last-Modified alone, sent as If-Range.
        case lastModifiedOnly
        /// Last-Modified alone, and a server that honours Range whatever If-Range says.
        case lastModifiedOnlyIgnoringIfRange
        /// A strong ETag, and a server that honours Range whatever If-Range says.
        case strongETagIgnoringIfRange
        /// Neither ETag nor Last-Modified.
        case noValidators
        var testDescription: String { rawValue }

        func resource(_ body: Data, version: Int) -> OriginResource {
            let date = Date(timeIntervalSince1970: 1_700_000_000 + Double(version) * 60)
            return switch self {
            case .weakETagOnly: OriginResource(body, etag: "W/\"w\(version)\"", sendsLastModified: false)
            case .lastModifiedOnly, .lastModifiedOnlyIgnoringIfRange:
                OriginResource(body, lastModified: date, sendsETag: false)
            case .strongETagIgnoringIfRange: OriginResource(body, etag: "\"s\(version)\"", lastModified: date)
            case .noValidators: OriginResource(body, sendsETag: false, sendsLastModified: false)
            }
        }

        var faults: OriginFaults {
            var faults = OriginFaults()
            faults.ignoresIfRange = self == .lastModifiedOnlyIgnoringIfRange || self == .strongETagIgnoringIfRange
            return faults
        }
    }

    @Test(arguments: Origin.allCases)
    func aSameLengthChangeIsNeverSplicedWithTheCachedPart(origin kind: Origin) throws {
        let rig = try CacheRig(size: 1_000_000)
        var slow = kind.faults
        slow.bytesPerSecond = 2_000_000
        rig.origin.serve(kind.resource(rig.body, version: 1), at: rig.path, faults: slow)
        do {
            let source = try rig.source()
            _ = try open(source).get()
            _ = try readFully(source, at: 0, length: 200_000).get()
            source.close()  // the daemon stops mid-download
        }
        try rig.reopenCache()
        let cached = try rig.cache.entry(for: rig.url).contiguousLength(from: 0)
        #expect(cached >= 200_000 && cached < Int64(rig.body.count))
        let newer = Data(rig.body.reversed())
        rig.origin.serve(kind.resource(newer, version: 2), at: rig.path, faults: kind.faults)
        rig.origin.clearRequests()

        let stale = try rig.source()
        _ = try open(stale).get()
        let read = readInChunks(stale, length: rig.body.count)
        stale.close()
        switch read {
        case .success(let bytes):
            #expect(
                firstDifference(bytes, rig.body) == nil || firstDifference(bytes, newer) == nil,
                "spliced: \(rig.origin.requests())")
        case .failure(let error):
            #expect(error.description.contains("changed"), "\(error)")
        }
        if kind == .noValidators {
            #expect(
                try rig.origin.settledRequests().first?.range == "bytes=0-", "nothing names the version: not resumed")
        }
        // Played again, it is the new version, whole.
        let fresh = try rig.source()
        defer { fresh.close() }
        _ = try open(fresh).get()
        #expect(firstDifference(try readInChunks(fresh, length: newer.count).get(), newer) == nil)
    }
}
