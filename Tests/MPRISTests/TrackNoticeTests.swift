import DBusKit
import MPRIS
import Testing

@Suite("Track notifications: what they say and when")
struct TrackNoticeTests {
    let start = ContinuousClock.now
    let a = TrackNotice(track: "/t/1", title: "A", body: "Artist — Album", art: nil)
    let b = TrackNotice(track: "/t/2", title: "B", body: "", art: "file:///tmp/b.jpg")
    let c = TrackNotice(track: "/t/3", title: "C", body: "", art: nil)

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    @Test func theMetadataGivesTitleArtistsAlbumAndArtOnlyWhilePlaying() {
        let metadata: [String: DBusValue] = [
            "mpris:trackid": .objectPath("/t/9"), "xesam:title": .string("Song"),
            "xesam:artist": .stringArray(["One", "Two"]),
            "xesam:album": .string("LP"), "mpris:artUrl": .string("file:///art.png"),
        ]
        #expect(
            TrackNotice(metadata: metadata, playing: true)
                == TrackNotice(track: "/t/9", title: "Song", body: "One, Two — LP", art: "file:///art.png"))
        #expect(TrackNotice(metadata: metadata, playing: false) == nil, "a paused player announces nothing")
        #expect(
            TrackNotice(metadata: ["mpris:trackid": .objectPath("/t/9")], playing: true) == nil, "no title, no notice")
        let albumOnly: [String: DBusValue] = [
            "mpris:trackid": .objectPath("/t/9"), "xesam:title": .string("T"), "xesam:album": .string("LP"),
        ]
        #expect(TrackNotice(metadata: albumOnly, playing: true)?.body == "LP")
    }

    @Test func aTrackIsAnnouncedOnceItsTagsHadTimeToArrive() {
        var pacer = NoticePacer()
        let byFileName = TrackNotice(track: a.track, title: "01 a.flac", body: "", art: nil)
        #expect(pacer.offer(byFileName, now: at(0)) == .wait(until: at(300)))
        #expect(pacer.offer(a, now: at(40)) == .wait(until: at(300)), "its tags: the same turn")
        #expect(pacer.due(now: at(299)) == nil)
        #expect(pacer.due(now: at(300)) == a)
        let withArt = TrackNotice(track: a.track, title: "A", body: "Artist — Album", art: "file:///art.png")
        #expect(
            pacer.offer(withArt, now: at(2000)) == .send(withArt),
            "what the on-screen track shows changed: updated at once")
    }

    @Test func oneNoticeASecondTheLatestWinning() {
        var pacer = NoticePacer()
        #expect(pacer.offer(a, now: at(0)) == .wait(until: at(300)))
        #expect(pacer.due(now: at(300)) == a)
        #expect(pacer.offer(b, now: at(500)) == .wait(until: at(1300)))
        #expect(pacer.offer(c, now: at(700)) == .wait(until: at(1300)), "the later one replaces the waiting one")
        #expect(pacer.due(now: at(1299)) == nil)
        #expect(pacer.due(now: at(1300)) == c)
        #expect(pacer.due(now: at(1500)) == nil, "sent once")
        #expect(pacer.offer(a, now: at(5000)) == .wait(until: at(5300)))
    }

    @Test func whatIsOnScreenIsNotShownAgain() {
        var pacer = NoticePacer()
        _ = pacer.offer(a, now: at(0))
        #expect(pacer.due(now: at(300)) == a)
        #expect(pacer.offer(nil, now: at(3000)) == .nothing, "paused")
        #expect(pacer.offer(a, now: at(6000)) == .nothing, "playing again: the same track is on screen")
        #expect(pacer.offer(b, now: at(6100)) == .wait(until: at(6400)))
        #expect(pacer.offer(a, now: at(6200)) == .nothing, "back to the one on screen: the waiting one is dropped")
        #expect(pacer.due(now: at(8000)) == nil)
    }
}
