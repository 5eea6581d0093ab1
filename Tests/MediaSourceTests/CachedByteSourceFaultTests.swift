import ByteSourceAPI
import Fetcher
import Foundation
import MediaSource
import RangeCache
import TestSupport
import Testing

/// Every misbehaviour the fault origin offers, as the media source meets it.
enum OriginFault: String, CaseIterable, CustomStringConvertible, Sendable {
    case firstByteLatency, bandwidthCap, cutShort, serverErrors, retryAfter, ignoresRange, chunked,
        chunkedWithoutRanges, contentLengthOver, contentLengthOverWithoutRanges, contentLengthUnder, redirect, stall,
        replacedDuringAResponse, replacedBetweenRequests

    var description: String { rawValue }

    /// The new version the changing faults switch to: other bytes, shorter than the point where
    /// the origin swaps it in (100,000), so a response under way is cut there. (A swap that goes
    /// on sending the new bytes inside the old version's 206 is a splice by the origin itself,
    /// which no HTTP client can see: the headers promised the old version.)
    static let newer = OriginResource(Data(patternedBody(80_000).reversed()), etag: "\"v2\"")

    var faults: OriginFaults {
        switch self {
        case .firstByteLatency: OriginFaults(firstByteLatency: 0.2)
        case .bandwidthCap: OriginFaults(bytesPerSecond: 1_000_000)
        case .cutShort: OriginFaults(closeAfterBodyBytes: 70_000)
        case .serverErrors: OriginFaults(errorResponses: .init(count: 2, status: 503))
        case .retryAfter: OriginFaults(errorResponses: .init(count: 1, status: 429, retryAfter: 1))
        case .ignoresRange: OriginFaults(ignoresRange: true)
        case .chunked: OriginFaults(chunked: true)
        case .chunkedWithoutRanges: OriginFaults(ignoresRange: true, chunked: true)
        case .contentLengthOver: OriginFaults(contentLengthError: 500)
        case .contentLengthOverWithoutRanges: OriginFaults(ignoresRange: true, contentLengthError: 500)
        case .contentLengthUnder: OriginFaults(contentLengthError: -500)
        case .redirect: OriginFaults()
        case .stall: OriginFaults(stall: .init(afterBodyBytes: 100_000))
        case .replacedDuringAResponse:
            OriginFaults(replacement: .init(afterBodyBytes: 100_000, resource: Self.newer))
        case .replacedBetweenRequests: OriginFaults(bytesPerSecond: 1_000_000)
        }
    }

    /// The file changes on the origin: what is read must be one version whole, never a splice.
    var changesTheFile: Bool { self == .replacedDuringAResponse || self == .replacedBetweenRequests }
}

/// The media source's reads compared byte for byte with the file under each fault of the
/// origin, read straight through and with random seeks first (the fetcher's own fault tests
/// check the requests; these check what a player would get).
@Suite("Cached byte source under every fault of the origin", .serialized)
struct CachedByteSourceFaultTests {
    static let size = 300_000

    /// Short stall and retry times, so each case takes about a second.
    static func fetcher() -> Fetcher {
        var configuration = FetcherConfiguration(userAgent: "Spool/test")
        configuration.stallTimeout = 1
        configuration.retryBaseDelay = 0.05
        configuration.retryMaxDelay = 0.2
        return Fetcher(configuration: configuration)
    }

    /// `[offset, offset + length)` reads: five random 16 KiB reads when seeking, then the whole file.
    static func plan(seeking: Bool, seed: UInt64) -> [(offset: Int, length: Int)] {
        var generator = SeededGenerator(seed: seed)
        let seeks = seeking ? (0..<5).map { _ in (generator.next(below: size - 16_384), 16_384) } : []
        return seeks + [(0, size)]
    }

    @Test(arguments: OriginFault.allCases, [false, true])
    func everyByteReadIsTheFilesByte(under fault: OriginFault, seeking: Bool) throws {
        var faults = fault.faults
        // Seeks while the transfers run (uncapped, loopback delivers 300 kB before the first seek).
        if seeking, faults.bytesPerSecond == nil { faults.bytesPerSecond = 2_000_000 }
        let rig = try CacheRig(size: Self.size, faults: faults, fetcher: Self.fetcher())
        var url = rig.url
        if fault == .redirect {
            rig.origin.redirect("/moved.flac", to: rig.path, status: 302)
            url = rig.origin.url(for: "/moved.flac")
        }
        if fault == .contentLengthUnder {
            // A body short of its range once; a server doing it on every request never finishes.
            let origin = rig.origin
            let path = rig.path
            Thread.detachNewThread {
                _ = try? origin.requests(atLeast: 1)
                origin.setFaults(OriginFaults(), for: path)
            }
        }
        if fault == .replacedBetweenRequests {
            // A first play caches part of the old version, then the file changes.
            let first = try rig.source()
            _ = try open(first).get()
            _ = try readFully(first, at: 0, length: 100_000).get()
            first.close()
            rig.origin.replace(rig.path, with: OriginFault.newer)
            rig.origin.setFaults(OriginFaults(), for: rig.path)
        }
        let seed = UInt64.random(in: 0...UInt64(UInt32.max))
        let source = try rig.source(url: url)
        defer { source.close() }
        var chunks: [(offset: Int, bytes: Data)] = []
        var failure: MediaSourceError?
        switch open(source) {
        case .success: break
        case .failure(let error): failure = error
        }
        for read in Self.plan(seeking: seeking, seed: seed) where failure == nil {
            switch readFully(source, at: Int64(read.offset), length: read.length, timeout: 20) {
            case .success(let bytes): chunks.append((read.offset, bytes))
            case .failure(let error): failure = error
            }
        }
        func all(match body: Data) -> Bool {
            chunks.allSatisfy { chunk in
                chunk.offset + chunk.bytes.count <= body.count
                    && firstDifference(chunk.bytes, body[chunk.offset..<chunk.offset + chunk.bytes.count]) == nil
            }
        }
        guard fault.changesTheFile else {
            #expect(failure == nil, "seed \(seed)")
            #expect(chunks.map(\.bytes.count) == Self.plan(seeking: seeking, seed: seed).map(\.length), "seed \(seed)")
            #expect(all(match: rig.body), "a byte differs from the file (seed \(seed))")
            return
        }
        // Never spliced: everything read is of one version; a change met mid-play is a clear error.
        #expect(all(match: rig.body) || all(match: OriginFault.newer.body), "spliced versions (seed \(seed))")
        if let failure { #expect(failure.description.contains("changed"), "\(failure)") }
        source.close()
        // Opened again, it plays the new version whole — once a response showed the change. (Short
        // requests may all end before the origin's swap point: then the old copy, complete in the
        // cache, is what a replay plays until its revalidation.)
        let sawChange = failure != nil || !all(match: rig.body)
        let again = try rig.source(url: url)
        defer { again.close() }
        _ = try open(again).get()
        let replay = try readFully(again, at: 0, length: OriginFault.newer.body.count).get()
        let expected = sawChange ? OriginFault.newer.body : rig.body.prefix(OriginFault.newer.body.count)
        #expect(firstDifference(replay, expected) == nil, "saw the change: \(sawChange) (seed \(seed))")
    }
}
