import Testing

@testable import MediaSource

/// The decisions of a check of a complete entry, driven directly.
@Suite("Revalidation gate")
struct RevalidationGateTests {
    /// The actions for `events` fed in order to a gate that holds the open (or not).
    private func run(
        _ events: [RevalidationGate.Event], holding: Bool = true, untilAnswered: Bool = false
    ) -> [RevalidationGate.Action] {
        var gate = RevalidationGate(holdsOpen: holding, untilAnswered: untilAnswered)
        return events.map { gate.handle($0) }
    }

    @Test func anAnswerBeforeTheDeadlineDecidesThisPlay() {
        #expect(run([.notModified, .finished, .deadline]) == [.openFromCache(stopRequest: false), .none, .none])
        #expect(run([.answered(sameVersion: false), .deadline]) == [.playNewVersion, .none])
        // An origin ignoring the condition sends the same version whole: stop it, play the copy.
        #expect(run([.answered(sameVersion: true)]) == [.openFromCache(stopRequest: true)])
        #expect(run([.failed]) == [.openFromCache(stopRequest: false)])
    }

    @Test func theDeadlineOrAnUnreachableOriginOpensFromTheCacheAndALaterChangeWaitsForTheNextPlay() {
        #expect(
            run([.deadline, .answered(sameVersion: false)]) == [.openFromCache(stopRequest: false), .replaceOnClose])
        #expect(
            run([.unreachable, .unreachable, .deadline, .answered(sameVersion: false)])
                == [.openFromCache(stopRequest: false), .none, .none, .replaceOnClose])
        #expect(run([.deadline, .answered(sameVersion: true)]) == [.openFromCache(stopRequest: false), .stopRequest])
        #expect(
            run([.deadline, .notModified, .answered(sameVersion: false)]) == [
                .openFromCache(stopRequest: false), .none, .none,
            ])
    }

    @Test func withoutAWaitTheOpenIsNotHeldAndAChangeOnlyReplacesTheEntryAtClose() {
        #expect(run([.answered(sameVersion: false)], holding: false) == [.replaceOnClose])
        #expect(run([.notModified, .deadline], holding: false) == [.none, .none])
        #expect(run([.unreachable, .failed, .answered(sameVersion: false)], holding: false) == [.none, .none, .none])
    }

    /// The usual check: the play starts from the cached copy at once; a new version answered
    /// before the deadline starts it again on that version, one answered later waits for the
    /// next play.
    @Test func aProvisionalPlayRestartsOnANewVersionOnlyBeforeTheDeadline() {
        func run(_ events: [RevalidationGate.Event]) -> [RevalidationGate.Action] {
            var gate = RevalidationGate.provisional
            return events.map { gate.handle($0) }
        }
        #expect(run([.answered(sameVersion: false), .deadline]) == [.restartWithNewVersion, .none])
        #expect(run([.notModified, .answered(sameVersion: false)]) == [.none, .none])
        #expect(run([.answered(sameVersion: true)]) == [.stopRequest])
        #expect(run([.unreachable, .answered(sameVersion: false)]) == [.none, .restartWithNewVersion])
        #expect(run([.deadline, .answered(sameVersion: false)]) == [.none, .replaceOnClose])
        #expect(run([.failed, .answered(sameVersion: false)]) == [.none, .none])
    }

    /// no-cache or must-revalidate: the copy is checked before use, so no deadline opens it;
    /// only the origin's answer does, or no origin at all (a personal player offline still plays).
    @Test func aCheckBeforeUseWaitsPastAnyDeadline() {
        #expect(
            run([.deadline, .deadline, .answered(sameVersion: false)], untilAnswered: true) == [
                .none, .none, .playNewVersion,
            ])
        #expect(run([.deadline, .notModified], untilAnswered: true) == [.none, .openFromCache(stopRequest: false)])
        #expect(
            run([.deadline, .unreachable, .answered(sameVersion: false)], untilAnswered: true) == [
                .none, .openFromCache(stopRequest: false), .replaceOnClose,
            ])
        #expect(run([.failed], untilAnswered: true) == [.openFromCache(stopRequest: false)])
    }
}
