import Fetcher
import Foundation
import TestSupport
import Testing

/// A transfer of a live stream (internet radio) against the test station: metadata blocks never
/// reach the caller, and a request that continues a known live stream past byte 0 asks for its
/// titles, sends no Range and takes the body at the offset it asked for.
@Suite("Fetcher: live streams")
struct LiveTransferTests {
    let fetcher = Fetcher(configuration: .forTests)

    /// A second of a looping body at 16,000 bytes a second, with a title from byte 0 on.
    private func station() throws -> RadioStation {
        try RadioStation(
            audio: patternedBody(48_000), bytesPerSecond: 16_000, lifetime: 30,
            settings: RadioSettings(metaInterval: 4_000, titles: [TitleChange(atAudioByte: 0, "Artist - Song")]))
    }

    /// Waits (polling, as the events are a stream of chunks) until `count` bytes arrived.
    private func awaitBytes(_ count: Int, in recorder: TransferRecorder) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while data(recorder.all).bytes.count < count {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    private func data(_ events: [TransferEvent]) -> (offset: Int64?, bytes: Data) {
        var bytes = Data()
        var first: Int64?
        for case .data(let chunk, let offset) in events {
            first = first ?? offset
            bytes.append(chunk)
        }
        return (first, bytes)
    }

    @Test func aNewStreamAsksForTitlesAndGetsAudioOnly() async throws {
        let station = try station()
        var request = RangeRequest(url: station.url)
        request.asksStreamMetadata = true
        let recorder = TransferRecorder()
        let id = fetcher.start(request) { recorder.record($1) }
        let served = try #require(try await station.waitForRequests(atLeast: 1).first)
        #expect(served.icyMetaData == "1")
        #expect(try await awaitBytes(12_000, in: recorder))
        #expect(recorder.head?.isLive == true)
        fetcher.cancel(id)
        let (offset, bytes) = data(recorder.all)
        #expect(offset == 0)
        #expect(bytes.prefix(12_000) == station.audioBytes(from: served.startAudioByte, count: 12_000))
        let titles = recorder.all.compactMap { event -> String? in
            if case .streamMetadata(let metadata, _) = event { metadata.streamTitle } else { nil }
        }
        #expect(titles.first == "Artist - Song")
    }

    @Test func aRequestContinuingALiveStreamSendsNoRangeAndSplicesAtItsStart() async throws {
        let station = try station()
        var request = RangeRequest(url: station.url, start: 50_000)
        request.asksStreamMetadata = true
        request.continuesLiveStream = true
        let recorder = TransferRecorder()
        let id = fetcher.start(request) { recorder.record($1) }
        #expect(try await awaitBytes(8_000, in: recorder))
        fetcher.cancel(id)
        let served = try #require(try await station.waitForRequests(atLeast: 1).first)
        #expect(served.range == nil, "a live stream has no ranges to ask for")
        #expect(served.icyMetaData == "1", "its titles are asked for on every connection")
        let (offset, bytes) = data(recorder.all)
        #expect(offset == 50_000, "the new connection's audio continues the stream where it was asked")
        #expect(bytes.prefix(8_000) == station.audioBytes(from: served.startAudioByte, count: 8_000))
        #expect(recorder.all.contains { if case .streamMetadata = $0 { true } else { false } })
    }
}
