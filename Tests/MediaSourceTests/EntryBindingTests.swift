import Basics
import Fetcher
import Foundation
import MediaSource
import RangeCache
import TestSupport
import Testing

@Suite("How a cache entry follows the origin's answers")
struct EntryBindingTests {
    let directory: TemporaryDirectory
    let cache: RangeCache
    let url = URL(string: "http://127.0.0.1:9/a.mp3")!
    let fetcher = Fetcher(userAgent: "Spool/test")

    init() throws {
        directory = try TemporaryDirectory(prefix: "spool-binding")
        cache = try RangeCache(directory: directory.url)
    }

    private func head(etag: String? = "\"v1\"", lastModified: String? = nil, length: Int64 = 1000) -> ResponseHead {
        ResponseHead(
            status: 206, totalLength: length, etag: etag, lastModified: lastModified, contentType: "audio/mpeg")
    }

    @Test func anEmptyEntryAsksWithoutAConditionAndOneWithBytesWithIfRange() throws {
        let entry = try cache.entry(for: url)
        defer { entry.close() }
        entry.bind(to: head(), from: url, fetcher: fetcher)
        let held = entry.metadata.validator.named
        #expect(entry.continuationCondition(held: held) == nil, "nothing to splice with")
        try entry.write(Data(repeating: 1, count: 100), at: 0)
        #expect(entry.continuationCondition(held: held) == .ifRange(ResourceVersion(etag: "\"v1\"", length: 1000)))
        #expect(entry.continuationCondition(held: nil) == nil, "no version named: no condition")
    }

    @Test func aWeakTagKeepsItsWeaknessOnTheWayBackToTheOrigin() {
        let held = ResourceVersion(etag: "W/\"w\"", lastModified: "Mon").named
        #expect(held?.etag == "W/\"w\"")
        #expect(held?.ifRangeValue == "Mon", "a weak tag never guards a range; the date does")
        #expect(ResourceVersion(length: 10).named == nil)
    }

    @Test func anotherVersionEmptiesTheEntryAndTheSameKeepsItsBytes() throws {
        let entry = try cache.entry(for: url)
        defer { entry.close() }
        entry.bind(to: head(), from: url, fetcher: fetcher)
        try entry.write(Data(repeating: 1, count: 100), at: 0)
        #expect(entry.bind(to: head(), from: url, fetcher: fetcher) == false)
        #expect(entry.cachedRanges.contains(0..<100))
        #expect(entry.holdsVersion(of: head()))
        #expect(!entry.holdsVersion(of: head(etag: "\"v2\"")))
        #expect(!entry.holdsVersion(of: head(length: 999)))
        #expect(entry.bind(to: head(etag: "\"v2\""), from: url, fetcher: fetcher) == true)
        #expect(entry.cachedRanges.isEmpty)
        #expect(entry.metadata.validator == ResourceVersion(etag: "\"v2\"", length: 1000))
        #expect(entry.metadata.acceptsRanges == true)
    }

    @Test func aMissingSidecarStaysWithItsVersionAndANewVersionForgetsIt() throws {
        let entry = try cache.entry(for: url)
        defer { entry.close() }
        entry.bind(to: head(), from: url, fetcher: fetcher)
        try entry.write(Data(repeating: 1, count: 100), at: 0)
        #expect(try entry.markSidecarMissing(ofVersion: ResourceVersion(etag: "\"v0\"")) == false)
        #expect(!entry.metadata.sidecarMissing, "recorded only for the version held")
        #expect(try entry.markSidecarMissing(ofVersion: ResourceVersion(etag: "\"v1\"")))
        entry.bind(to: head(), from: url, fetcher: fetcher)
        #expect(entry.metadata.sidecarMissing, "the same version's next response keeps it")
        entry.bind(to: head(etag: "\"v2\""), from: url, fetcher: fetcher)
        #expect(!entry.metadata.sidecarMissing, "a new version is asked for its sidecar again")
    }

    /// A writer that read the metadata before the mark (the next response's binding, a
    /// 304's renewal) writes it back without losing the mark.
    @Test func aMissingSidecarMarkedBetweenAReadAndAWriteOfTheMetadataStays() throws {
        let entry = try cache.entry(for: url)
        defer { entry.close() }
        entry.bind(to: head(), from: url, fetcher: fetcher)
        let readBefore = entry.metadata
        #expect(try entry.markSidecarMissing(ofVersion: ResourceVersion(etag: "\"v1\"")))
        #expect(try entry.setMetadata(readBefore) == false)
        #expect(entry.metadata.sidecarMissing, "the same version's metadata written back keeps it")
        var changed = readBefore
        changed.validator = ResourceVersion(etag: "\"v2\"", length: 1000)
        _ = try entry.setMetadata(changed)
        #expect(!entry.metadata.sidecarMissing, "a new version starts without it")
    }

    /// The sidecar's 404 may come before the track's own response, even before its entry
    /// exists: the first version bound to the entry takes the mark, if that version has a name.
    @Test func aMissingSidecarMarkedBeforeTheFirstResponseIsTheFirstVersions() throws {
        #expect(try cache.markSidecarMissing(of: cache.key(for: url)), "no entry yet")
        let entry = try cache.entry(for: url)
        defer { entry.close() }
        entry.bind(to: head(), from: url, fetcher: fetcher)
        #expect(entry.metadata.sidecarMissing, "the first version bound takes it")
        entry.bind(to: head(etag: "\"v2\""), from: url, fetcher: fetcher)
        #expect(!entry.metadata.sidecarMissing, "and only that one")

        let other = URL(string: "http://example.org/other.mp3")!
        let unnamed = try cache.entry(for: other)
        defer { unnamed.close() }
        #expect(try cache.markSidecarMissing(of: cache.key(for: other)), "an entry without a version yet")
        unnamed.bind(to: head(etag: nil), from: other, fetcher: fetcher)
        #expect(!unnamed.metadata.sidecarMissing, "a version without a name cannot hold it")
        try unnamed.write(Data(repeating: 1, count: 100), at: 0)
        #expect(try cache.markSidecarMissing(of: cache.key(for: other)) == false, "nor can its bytes")
    }

    /// The entry that took a mark made ahead can be closed before its first byte (its track
    /// replaced at once, the daemon quit): it stays, with the mark, through a restart; a version
    /// forgotten before the first response does not use the mark up.
    @Test func anEmptyEntryThatTookAMarkStaysWithItThroughARestart() throws {
        #expect(try cache.markSidecarMissing(of: cache.key(for: url)))
        let entry = try cache.entry(for: url)
        entry.forgetVersion()
        entry.bind(to: head(), from: url, fetcher: fetcher)
        #expect(entry.metadata.sidecarMissing)
        entry.close()
        #expect(cache.info(for: cache.key(for: url))?.metadata.sidecarMissing == true, "kept without bytes")
        cache.close()
        let reopened = try RangeCache(directory: directory.url)
        defer { reopened.close() }
        #expect(reopened.info(for: reopened.key(for: url))?.metadata.sidecarMissing == true, "and after a restart")

        let plain = URL(string: "http://127.0.0.1:9/plain.mp3")!
        let unmarked = try reopened.entry(for: plain)
        unmarked.bind(to: head(), from: plain, fetcher: fetcher)
        unmarked.close()
        #expect(reopened.info(for: reopened.key(for: plain)) == nil, "an empty entry that knows nothing goes")
    }

    @Test func aChangedResourceIsForgotten() throws {
        let entry = try cache.entry(for: url)
        defer { entry.close() }
        entry.bind(to: head(), from: url, fetcher: fetcher)
        try entry.write(Data(repeating: 1, count: 100), at: 0)
        entry.forgetVersion()
        #expect(entry.cachedRanges.isEmpty)
        #expect(entry.metadata.validator == ResourceVersion())
        #expect(FetchError.resourceChanged("another total").meansResourceChanged)
        #expect(!FetchError.httpStatus(404).meansResourceChanged)
    }
}
