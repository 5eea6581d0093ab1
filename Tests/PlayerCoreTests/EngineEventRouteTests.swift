import ByteSourceAPI
import EngineAPI
import Foundation
import Testing

@testable import PlayerCore

/// Which of the player's tracks an engine event is about, one row per rule; the order of the
/// rules is the point (a start of the loaded track during a loop restart, a start of a track
/// that is both prepared and committed).
@Suite("Routing engine events to the player's tracks")
struct EngineEventRouteTests {
    static let loaded = TrackID(1)
    static let prepared = TrackID(2)
    static let committed = TrackID(3)
    static let other = TrackID(9)

    struct Row: Sendable, CustomTestStringConvertible {
        let event: EngineEvent
        let tracks: EngineEventRoute.Tracks
        let route: EngineEventRoute
        let testDescription: String
    }

    static func tracks(
        prepared: TrackID? = Self.prepared, committed: TrackID? = nil, loop: Bool = false, upcoming: TrackID? = nil
    ) -> EngineEventRoute.Tracks {
        EngineEventRoute.Tracks(
            loaded: loaded, prepared: prepared, committed: committed, loopRestartQueued: loop, upcoming: upcoming)
    }

    static let error = EngineError("broken")
    static let station = LiveStation(name: "Radio One", genre: "Jazz", bitrate: 128)
    static let song = StreamTitle(text: "Artist - Song", artist: "Artist", title: "Song")

    static let rows: [Row] = [
        Row(
            event: .nextQueued(loaded), tracks: tracks(prepared: loaded), route: .loopRestartQueued,
            testDescription: "the loaded track queued as its own follower: loop Track"),
        Row(
            event: .nextQueued(loaded), tracks: tracks(), route: .ignored,
            testDescription: "a queued event for the loaded track that is no longer prepared: stale"),
        Row(
            event: .nextQueued(prepared), tracks: tracks(), route: .committed(prepared),
            testDescription: "the prepared track committed"),
        Row(
            event: .nextQueued(other), tracks: tracks(), route: .ignored,
            testDescription: "another track queued: stale"),
        Row(
            event: .trackStarted(loaded), tracks: tracks(), route: .started(loaded, restarted: false),
            testDescription: "the loaded track started"),
        Row(
            event: .trackStarted(loaded), tracks: tracks(prepared: loaded, loop: true, upcoming: loaded),
            route: .started(loaded, restarted: true), testDescription: "restarted for loop Track"),
        Row(
            event: .trackStarted(loaded), tracks: tracks(prepared: loaded, loop: true, upcoming: prepared),
            route: .loopRestartAbandoned(loaded), testDescription: "restarted, but loop Track was turned off since"),
        Row(
            event: .trackStarted(prepared), tracks: tracks(upcoming: prepared), route: .handedOver(prepared),
            testDescription: "the prepared track took over, the queue's next"),
        Row(
            event: .trackStarted(prepared), tracks: tracks(committed: prepared, upcoming: other),
            route: .committedTrackStale(ended: loaded),
            testDescription: "the committed track took over, but the queue changed since"),
        Row(
            event: .trackStarted(prepared), tracks: tracks(upcoming: other), route: .ignored,
            testDescription: "a prepared track no longer next and never committed"),
        Row(
            event: .trackStarted(other), tracks: tracks(), route: .ignored,
            testDescription: "a start of no track of the player's"),
        Row(
            event: .described(loaded, TrackTags(), duration: .seconds(3)), tracks: tracks(),
            route: .described(TrackTags(), duration: .seconds(3)),
            testDescription: "the loaded track described"),
        Row(
            event: .described(prepared, TrackTags(), duration: nil), tracks: tracks(),
            route: .describedAhead(prepared, TrackTags()), testDescription: "the prepared track described ahead"),
        Row(
            event: .described(other, TrackTags(), duration: nil), tracks: tracks(), route: .ignored,
            testDescription: "another track described"),
        Row(
            event: .buffering(other, true), tracks: tracks(), route: .ignored,
            testDescription: "another track buffering"),
        Row(
            event: .seekable(prepared, true), tracks: tracks(), route: .seekableAhead(prepared, true),
            testDescription: "another track's seekability, kept"),
        Row(
            event: .seeked(other, position: .seconds(1)), tracks: tracks(), route: .ignored,
            testDescription: "another track's seek"),
        Row(
            event: .liveStream(loaded, station), tracks: tracks(), route: .live(loaded, station),
            testDescription: "the loaded track is a live stream"),
        Row(
            event: .liveStream(prepared, station), tracks: tracks(), route: .liveAhead(prepared, station),
            testDescription: "the prepared track is a live stream, kept"),
        Row(
            event: .variant(loaded, StreamVariant(bitrate: 256_000, number: 2, count: 3)), tracks: tracks(),
            route: .variant(loaded, StreamVariant(bitrate: 256_000, number: 2, count: 3)),
            testDescription: "the loaded track plays a variant"),
        Row(
            event: .variant(prepared, StreamVariant(bitrate: 64_000, number: 1, count: 3)), tracks: tracks(),
            route: .variantAhead(prepared, StreamVariant(bitrate: 64_000, number: 1, count: 3)),
            testDescription: "the prepared track's variant, kept"),
        Row(
            event: .streamTitle(loaded, song), tracks: tracks(), route: .streamTitle(song),
            testDescription: "the loaded live stream's song is heard"),
        Row(
            event: .streamTitle(prepared, song), tracks: tracks(), route: .ignored,
            testDescription: "a song of a stream not heard yet"),
        Row(
            event: .programDate(loaded, Date(timeIntervalSince1970: 1e9), heardAt: .seconds(3)), tracks: tracks(),
            route: .programDate(Date(timeIntervalSince1970: 1e9), heardAt: .seconds(3)),
            testDescription: "the loaded live stream's audio is dated"),
        Row(
            event: .programDate(prepared, Date(timeIntervalSince1970: 1e9), heardAt: .zero), tracks: tracks(),
            route: .ignored, testDescription: "a date of a stream not heard yet"),
        Row(
            event: .endOfTrack(prepared), tracks: tracks(), route: .ignored,
            testDescription: "the end of a track not loaded"),
        Row(
            event: .failed(nil, error), tracks: tracks(), route: .failed(loaded, error),
            testDescription: "a failure of no track: the loaded one's"),
        Row(
            event: .failed(prepared, error), tracks: tracks(), route: .ignored,
            testDescription: "a failure of a track not loaded"),
    ]

    @Test(arguments: rows)
    func anEventGoesWhereItsTrackSays(row: Row) {
        #expect(EngineEventRoute.route(row.event, row.tracks) == row.route)
    }
}
