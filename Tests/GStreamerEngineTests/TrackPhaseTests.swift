import Testing

@testable import GStreamerEngine

@Suite("The loaded track's phases")
struct TrackPhaseTests {
    let noMarker: UInt64 = 0

    @Test func aLoadFromZeroPrerollsAndPlays() {
        var phase = TrackPhase.loading(start: nil)
        #expect(!phase.isPrerolled)
        #expect(phase.reportedPosition { .seconds(9) } == nil, "loading from 0: no position yet")
        #expect(phase.asyncDone(markersSeen: noMarker, filterMismatch: false, exactSeeks: true) == .resume)
        #expect(phase.isPrerolled)
        #expect(phase.reportedPosition { .seconds(1) } == .seconds(1))
    }

    @Test func aResumePositionIsSoughtOnceAndReported() {
        var phase = TrackPhase.loading(start: .seconds(42))
        #expect(phase.reportedPosition { nil } == .seconds(42), "where it is about to start")
        #expect(
            phase.asyncDone(markersSeen: noMarker, filterMismatch: false, exactSeeks: false)
                == .seek(to: .seconds(42), exact: false))
        #expect(
            phase.asyncDone(markersSeen: noMarker, filterMismatch: false, exactSeeks: false) == .seeked(quiet: false))
        #expect(phase.stage == .ready)
    }

    @Test func aRateAtTheStartIsAppliedBySeekingToZeroQuietly() {
        var phase = TrackPhase.loading(start: .zero)
        #expect(
            phase.asyncDone(markersSeen: noMarker, filterMismatch: false, exactSeeks: true)
                == .seek(to: .zero, exact: true))
        #expect(phase.asyncDone(markersSeen: noMarker, filterMismatch: false, exactSeeks: true) == .seeked(quiet: true))
    }

    @Test func aListenersSeekBeforeThePrerollBecomesTheStart() {
        var phase = TrackPhase.loading(start: nil)
        #expect(phase.listenerSeek(to: .seconds(5)) == .atPreroll)
        #expect(
            phase.asyncDone(markersSeen: noMarker, filterMismatch: false, exactSeeks: true)
                == .seek(to: .seconds(5), exact: true))
        #expect(
            phase.asyncDone(markersSeen: noMarker, filterMismatch: false, exactSeeks: true) == .seeked(quiet: false))
    }

    @Test func aListenersSeekWhenReadyLeavesNowAndIsReported() {
        var phase = TrackPhase.ready
        #expect(phase.listenerSeek(to: .seconds(3)) == .now)
        phase.aim(at: .seconds(3))
        #expect(phase.target == .seconds(3))
        #expect(
            phase.asyncDone(markersSeen: noMarker, filterMismatch: false, exactSeeks: true) == .seeked(quiet: false))
    }

    @Test func aStreamRestartedAtTheStartNeedsNoSeekAndReportsItsPlace() {
        var phase = TrackPhase.restarted(at: .seconds(30), reported: true)
        #expect(phase.reportedPosition { .seconds(2) } == .seconds(30), "held until prerolled")
        #expect(
            phase.asyncDone(markersSeen: noMarker, filterMismatch: false, exactSeeks: false) == .seeked(quiet: false),
            "prerolled where asked: no seek follows")
        #expect(phase.isSettled)
        #expect(phase.reportedPosition { .seconds(31) } == .seconds(31))
    }

    @Test func aRestartHoldsItsTargetUntilItsOwnPrerollAndANewSeekReplacesIt() {
        var phase = TrackPhase.ready
        #expect(phase.listenerSeek(to: .seconds(20)) == .now)
        phase.restart(at: .seconds(20), marker: 1, reported: true)
        #expect(phase.reportedPosition { .seconds(3) } == .seconds(20))
        #expect(
            phase.asyncDone(markersSeen: 0, filterMismatch: false, exactSeeks: false) == .stale,
            "the pipeline before the restart")
        // A second seek while the first restart prerolls: its own target is shown at once.
        #expect(phase.listenerSeek(to: .seconds(8)) == .now)
        #expect(phase.reportedPosition { nil } == .seconds(8))
        phase.restart(at: .seconds(8), marker: 2, reported: true)
        #expect(phase.asyncDone(markersSeen: 1, filterMismatch: false, exactSeeks: false) == .stale)
        #expect(phase.asyncDone(markersSeen: 2, filterMismatch: false, exactSeeks: false) == .seeked(quiet: false))
        #expect(phase.isSettled)
    }

    @Test func aRestartForARateIsNotReported() {
        var phase = TrackPhase.ready
        phase.rateSeek()
        phase.restart(at: .seconds(4), marker: 1, reported: false)
        #expect(phase.asyncDone(markersSeen: 1, filterMismatch: false, exactSeeks: false) == .seeked(quiet: true))
    }

    @Test func aRateSeekIsNotReported() {
        var phase = TrackPhase.ready
        phase.rateSeek()
        #expect(phase.asyncDone(markersSeen: noMarker, filterMismatch: false, exactSeeks: true) == .seeked(quiet: true))
    }

    @Test func aRebuildHoldsItsPositionIgnoresStaleMessagesAndRestartsExactlyQuietly() {
        var phase = TrackPhase.ready
        phase.rebuild(at: .seconds(12), marker: 3, rateIsOne: false)
        #expect(phase.isRebuilding && !phase.isPrerolled)
        #expect(phase.reportedPosition { .seconds(99) } == .seconds(12), "the pipeline answers no query meanwhile")
        // A seek that ended as the rebuild began: its ASYNC_DONE comes before the marker.
        #expect(phase.asyncDone(markersSeen: 2, filterMismatch: false, exactSeeks: false) == .stale)
        #expect(
            phase.asyncDone(markersSeen: 3, filterMismatch: false, exactSeeks: false)
                == .seek(to: .seconds(12), exact: true))
        #expect(phase.isRebuilding, "until its seek is done")
        #expect(phase.asyncDone(markersSeen: 3, filterMismatch: false, exactSeeks: false) == .seeked(quiet: true))
        #expect(!phase.isRebuilding)
        #expect(phase.reportedPosition { .seconds(12.5) } == .seconds(12.5))
    }

    @Test func aRebuildAtZeroAtNormalSpeedNeedsNoSeek() {
        var phase = TrackPhase.ready
        phase.rebuild(at: .zero, marker: 1, rateIsOne: true)
        #expect(phase.asyncDone(markersSeen: 1, filterMismatch: false, exactSeeks: true) == .resume)
        #expect(!phase.isRebuilding && phase.stage == .ready)
    }

    @Test func aListenersSeekDuringARebuildIsHeldAndReported() {
        var phase = TrackPhase.ready
        phase.rebuild(at: .seconds(12), marker: 1, rateIsOne: false)
        #expect(phase.listenerSeek(to: .seconds(30)) == .atPreroll)
        #expect(phase.reportedPosition { nil } == .seconds(30))
        #expect(
            phase.asyncDone(markersSeen: 1, filterMismatch: false, exactSeeks: false)
                == .seek(to: .seconds(30), exact: false))
        #expect(phase.asyncDone(markersSeen: 1, filterMismatch: false, exactSeeks: false) == .seeked(quiet: false))
    }

    @Test func aRateThatCrossedOneBeforeThePrerollRebuildsFirst() {
        var phase = TrackPhase.loading(start: .seconds(7))
        #expect(
            phase.asyncDone(markersSeen: noMarker, filterMismatch: true, exactSeeks: true) == .rebuild(at: .seconds(7)))
        #expect(!phase.isPrerolled, "still loading: the rebuild restarts it")
    }

    @Test func aRefusedSeekLeavesTheTrackReady() {
        var phase = TrackPhase.ready
        phase.rebuild(at: .seconds(4), marker: 1, rateIsOne: false)
        phase.seekRefused()
        #expect(phase.stage == .ready && !phase.isRebuilding)
        #expect(phase.reportedPosition { .seconds(4.2) } == .seconds(4.2))
    }

    @Test func aTrackBeingReplacedReportsTheNewStart() {
        var phase = TrackPhase.ready
        phase.replaced(startingAt: .seconds(8))
        #expect(phase.reportedPosition { .seconds(100) } == .seconds(8))
    }
}
