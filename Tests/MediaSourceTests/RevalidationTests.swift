import ByteSourceAPI
import Fetcher
import Foundation
import MediaSource
import RangeCache
import Synchronization
import TestSupport
import Testing

/// How long opening `source` takes, and its result.
func timedOpen(_ source: ByteSource) -> (Result<ResourceInfo, MediaSourceError>, seconds: Double) {
    let started = ContinuousClock.now
    let result = open(source)
    let elapsed = ContinuousClock.now - started
    return (result, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

@Suite("Revalidation with a deadline", .serialized)
struct RevalidationTests {
    /// What the origin sends to name a version.
    enum Naming: String, CaseIterable, CustomTestStringConvertible {
        case strongETag, lastModifiedOnly
        var testDescription: String { rawValue }

        func resource(_ body: Data, version: Int) -> OriginResource {
            OriginResource(
                body, etag: "\"v\(version)\"",
                lastModified: Date(timeIntervalSince1970: 1_700_000_000 + Double(version) * 60),
                sendsETag: self == .strongETag)
        }
    }

    /// A deadline no check in these tests reaches: an open that waited for it would fail on the
    /// `open` helper's own 10-s limit, so no test measures how long an open took.
    static let farDeadline = Duration.seconds(600)

    /// A rig whose entry is complete, then the file changes on the origin (same length).
    private func changedRig(_ naming: Naming, faults: OriginFaults = OriginFaults()) throws -> (CacheRig, newer: Data) {
        let rig = try CacheRig(size: 300_000)
        rig.origin.serve(naming.resource(rig.body, version: 1), at: rig.path)
        try rig.fill()
        let newer = Data(rig.body.reversed())
        rig.origin.serve(naming.resource(newer, version: 2), at: rig.path, faults: faults)
        rig.origin.clearRequests()
        return (rig, newer)
    }

    /// A track prepared ahead (the next one) has nobody waiting for its open: it is held for the
    /// answer, and a new version plays from its first byte, the answer being its download.
    @Test(arguments: Naming.allCases)
    func aPreparedSourceWaitsForTheCheckAndANewVersionPlaysFromItsFirstByte(naming: Naming) throws {
        let (rig, newer) = try changedRig(naming)
        let earlier = rig.origin.transfers().count  // the first play's, of the old version
        let revalidator = Revalidator(interval: .seconds(3600), wait: Self.farDeadline)
        do {
            let source = try rig.source(revalidator: revalidator)
            source.setBackground(true)
            #expect(try open(source).get().length == Int64(newer.count), "opened on the answer, not the deadline")
            #expect(
                firstDifference(try readInChunks(source, length: newer.count).get(), newer) == nil,
                "the play that found the change plays the new version")
            source.close()
        }
        let log = try rig.origin.settledRequests()
        #expect(log.count == 1, "the check's answer is the new version's download: \(log)")
        let check = log.first { $0.ifModifiedSince != nil }
        #expect(check?.range == "bytes=0-")
        #expect(check?.ifNoneMatch == (naming == .strongETag ? "\"v1\"" : nil))
        #expect(check?.ifModifiedSince == HTTPDate.format(Date(timeIntervalSince1970: 1_700_000_060)))
        // Every byte of the new file crossed the network once.
        let sent = rig.origin.transfers(of: rig.path).filter { $0.id >= earlier }
        #expect(TransferAccounting.sentTwice(sent) == 0, "\(sent)")
        #expect(TransferAccounting.covered(sent.map(\.sentBytes)) == newer.count, "\(sent)")
        #expect(try rig.settledBytesSent() == newer.count, "nothing fetched twice")
        // The entry now holds the new version, whole: the next play needs no network.
        let again = try rig.source(revalidator: revalidator)
        defer { again.close() }
        _ = try open(again).get()
        #expect(firstDifference(try readFully(again, at: 0, length: newer.count).get(), newer) == nil)
        #expect(rig.origin.requests().count == 1)
    }

    /// The play starts from the cached copy while the check travels; a new version answered
    /// within the wait makes reads fail as `versionChanged` (the player starts the track again),
    /// and the next source plays the new version, fetched once.
    @Test(arguments: Naming.allCases)
    func aNewVersionAnsweredJustAfterThePlayBeganStartsItAgainOnThatVersion(naming: Naming) async throws {
        let answer = ResponseHold()
        let (rig, newer) = try changedRig(naming, faults: OriginFaults(hold: answer))
        let revalidator = Revalidator(interval: .seconds(3600), wait: Self.farDeadline)
        do {
            let source = try rig.source(revalidator: revalidator)
            let reported = Mutex<[MediaSourceError]>([])
            source.whenFailed { error in reported.withLock { $0.append(error) } }
            #expect(try open(source).get().length == Int64(rig.body.count), "opened with the answer held")
            #expect(
                firstDifference(try readFully(source, at: 0, length: 4096).get(), rig.body.prefix(4096)) == nil,
                "the cached copy plays at once")
            answer.release()
            // No read is asking when the answer comes: the reader is told all the same, once.
            #expect(await eventually(timeout: 10) { !reported.withLock { $0.isEmpty } })
            #expect(reported.withLock { $0.count } == 1)
            let first = reported.withLock { $0.first }
            if case .versionChanged = first {} else { Issue.record("reported \(String(describing: first))") }
            #expect(
                await eventually(timeout: 10) {
                    if case .failed(.versionChanged) = source.read(at: 4096, maxLength: 4096, wake: {}) { return true }
                    return false
                }, "once the new version is known, no byte of the old one is served")
            source.close()
        }
        let checks = try rig.origin.settledRequests().filter { $0.ifModifiedSince != nil }
        #expect(checks.map(\.range) == ["bytes=0-0"], "the check asks for one byte: \(checks)")
        let again = try rig.source(revalidator: revalidator)
        defer { again.close() }
        _ = try open(again).get()
        #expect(firstDifference(try readFully(again, at: 0, length: newer.count).get(), newer) == nil)
    }

    @Test func anUnchangedResourceOpensFromTheCacheAsSoonAsTheOriginSaysSo() async throws {
        let rig = try CacheRig(size: 300_000)
        try rig.fill()
        rig.origin.clearRequests()
        let source = try rig.source(revalidator: Revalidator(interval: .seconds(3600), wait: Self.farDeadline))
        defer { source.close() }
        #expect(try open(source).get().length == Int64(rig.body.count), "opened on the 304, not the deadline")
        #expect(firstDifference(try readFully(source, at: 0, length: rig.body.count).get(), rig.body) == nil)
        let log = try rig.origin.requests(atLeast: 1)
        #expect(log.map(\.status) == [304])
        #expect(try rig.settledBytesSent() == 0)
        #expect(await eventually(timeout: 10) { !source.isRevalidating } && !source.foundNewVersion)
    }

    @Test func aNewVersionThatAnswersAfterTheDeadlineWaitsForTheNextPlay() async throws {
        let answer = ResponseHold()
        let (rig, newer) = try changedRig(.strongETag, faults: OriginFaults(hold: answer))
        let revalidator = Revalidator(interval: .seconds(3600), wait: .milliseconds(100))
        do {
            let current = try rig.source(revalidator: revalidator)
            _ = try open(current).get()  // with the answer held: the deadline opened it
            #expect(
                firstDifference(try readFully(current, at: 0, length: rig.body.count).get(), rig.body) == nil,
                "past the deadline the cached copy plays")
            #expect(await eventually(timeout: 10) { current.isCheckingForTheNextPlay }, "the deadline passes")
            answer.release()
            #expect(await eventually(timeout: 10) { current.foundNewVersion })
            current.close()
        }
        let next = try rig.source(revalidator: revalidator)
        defer { next.close() }
        _ = try open(next).get()
        #expect(firstDifference(try readFully(next, at: 0, length: newer.count).get(), newer) == nil)
    }

    @Test func anUnreachableOriginNeverMakesTheOpenWait() throws {
        let rig = try CacheRig(size: 300_000)
        try rig.fill()
        rig.origin.stop()  // its port refuses connections
        let source = try rig.source(revalidator: Revalidator(interval: .seconds(3600), wait: Self.farDeadline))
        defer { source.close() }
        #expect(try open(source).get().length == Int64(rig.body.count), "offline, opened before the deadline")
        #expect(firstDifference(try readFully(source, at: 0, length: rig.body.count).get(), rig.body) == nil)
    }
}
