import EngineAPI
import Foundation
import PlayerCore
import Testing

func urls(_ count: Int) -> [(url: URL, title: String?)] {
    (1...count).map { (URL(string: "http://127.0.0.1:1/\($0).mp3")!, nil) }
}

@Suite("Play queue rules")
struct PlayQueueTests {
    @Test func idsAreUniqueAndNeverReusedEvenForTheSameURL() {
        var queue = PlayQueue()
        let first = queue.add([(URL(string: "file:///a.flac")!, nil)])
        queue.remove(first[0])
        let second = queue.add([(URL(string: "file:///a.flac")!, nil), (URL(string: "file:///a.flac")!, nil)])
        #expect(Set(first + second).count == 3)
    }

    @Test func nextStopsAtTheEndWithoutLoopAndWrapsWithPlaylistLoop() {
        var queue = PlayQueue()
        let ids = queue.add(urls(3))
        #expect(queue.advance(automatic: false) == ids[1])
        #expect(queue.advance(automatic: false) == ids[2])
        #expect(queue.advance(automatic: false) == nil)
        queue.loop = .playlist
        #expect(queue.advance(automatic: false) == ids[0])
    }

    @Test func trackLoopRepeatsOnlyAutomaticTransitions() {
        var queue = PlayQueue()
        let ids = queue.add(urls(2))
        queue.loop = .track
        #expect(queue.advance(automatic: true) == ids[0])
        #expect(queue.advance(automatic: false) == ids[1])
    }

    @Test func shufflePlaysEveryTrackOnceBeforeRepeating() {
        for _ in 0..<50 {
            var queue = PlayQueue()
            let ids = queue.add(urls(12))
            queue.loop = .playlist
            queue.setShuffle(true)
            var played = [queue.currentID!]
            for _ in 1..<12 { played.append(queue.advance(automatic: true)!) }
            #expect(Set(played) == Set(ids))
            // The next round starts again with every track, not with the one just played.
            let nextRound = queue.advance(automatic: true)!
            #expect(nextRound != played.last)
            var round = [nextRound]
            for _ in 1..<12 { round.append(queue.advance(automatic: true)!) }
            #expect(Set(round) == Set(ids))
        }
    }

    @Test func turningShuffleOffContinuesInListOrderFromTheCurrentTrack() {
        var queue = PlayQueue()
        let ids = queue.add(urls(10))
        queue.setShuffle(true)
        _ = queue.advance(automatic: false)
        _ = queue.advance(automatic: false)
        let current = queue.currentID!
        queue.setShuffle(false)
        let index = ids.firstIndex(of: current)!
        let expected = index + 1 < ids.count ? ids[index + 1] : nil
        #expect(queue.advance(automatic: false) == expected)
    }

    @Test func tracksAddedWhileShuffledAreStillPlayed() {
        var queue = PlayQueue()
        queue.add(urls(3))
        queue.setShuffle(true)
        let added = queue.add(urls(3))
        var played = [queue.currentID!]
        while let next = queue.advance(automatic: false) { played.append(next) }
        #expect(played.count == 6)
        #expect(Set(added).isSubset(of: Set(played)))
    }

    @Test func removingTheCurrentTrackMakesTheNextCurrent() {
        var queue = PlayQueue()
        let ids = queue.add(urls(3))
        let removedCurrent = queue.remove(ids[0])
        #expect(removedCurrent)
        #expect(queue.currentID == ids[1])
        let removedOther = queue.remove(ids[2])
        #expect(!removedOther)
        #expect(queue.currentID == ids[1])
        queue.remove(ids[1])
        #expect(queue.currentID == nil)
        #expect(queue.entries.isEmpty)
    }

    @Test func insertAfterAndMovePlaceEntriesInListOrder() {
        var queue = PlayQueue()
        let ids = queue.add(urls(3))
        let inserted = queue.add(urls(1), after: ids[0])
        #expect(queue.entries.map(\.id) == [ids[0], inserted[0], ids[1], ids[2]])
        queue.move(ids[2], to: 0)
        #expect(queue.entries.map(\.id) == [ids[2], ids[0], inserted[0], ids[1]])
    }

    @Test func previousGoesBackInPlayOrderAndStopsAtTheStart() {
        var queue = PlayQueue()
        let ids = queue.add(urls(3))
        #expect(queue.retreat() == nil)
        queue.jump(to: ids[2])
        #expect(queue.retreat() == ids[1])
        #expect(queue.canGoPrevious)
        queue.loop = .playlist
        queue.jump(to: ids[0])
        #expect(queue.retreat() == ids[2])
    }

    @Test func upcomingListsThePreloadWindowInPlayOrder() {
        var queue = PlayQueue()
        let ids = queue.add(urls(4))
        #expect(queue.upcoming(2) == [ids[1], ids[2]])
        queue.jump(to: ids[3])
        #expect(queue.upcoming(2).isEmpty)
        queue.loop = .playlist
        #expect(queue.upcoming(2) == [ids[0], ids[1]])
    }

    @Test func aShuffleSeedReplaysTheSameOrdersAndOtherSeedsDiffer() {
        func orders(seed: UInt64) -> [[TrackID]] {
            var queue = PlayQueue(shuffleSeed: seed)
            queue.add(urls(12))
            queue.loop = .playlist
            queue.setShuffle(true)
            var rounds = [queue.playOrder]
            for _ in 0..<12 { _ = queue.advance(automatic: false) }  // past the end: a new round
            rounds.append(queue.playOrder)
            return rounds
        }
        #expect(orders(seed: 42) == orders(seed: 42))
        #expect(Set((0..<8).map { orders(seed: $0) }.map { $0[0] }).count > 1, "a seed changes the order")
    }
}
