import HLS
import Testing

/// When to reload a live playlist (RFC 8216 §6.3.4), as a table of loads and their decisions.
@Suite("Live reload schedule")
struct LiveReloadScheduleTests {
    /// One load: when it began (or, for a failure, ended), in seconds from the test's origin, and
    /// what it gave.
    enum Load: Sendable {
        /// A playlist whose last segment has this media sequence number (6 s segments, target 6 s).
        case playlist(at: Double, lastSequence: Int)
        /// The same, with `EXT-X-ENDLIST`.
        case ended(at: Double, lastSequence: Int)
        case failure(at: Double)
    }

    /// What the schedule should answer: a reload at seconds from the origin, stale (with the
    /// unchanged time), or ended.
    enum Expected: Sendable, Equatable {
        case reload(Double)
        case stale(Double, unchangedFor: Double)
        case ended
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let loads: [Load]
        let expected: [Expected]
        var testDescription: String { name }
    }

    @Test(arguments: [
        Case(
            name: "first load and each changed reload: a target duration after the load began",
            loads: [
                .playlist(at: 0, lastSequence: 10), .playlist(at: 6.2, lastSequence: 11),
                .playlist(at: 12.5, lastSequence: 12),
            ],
            expected: [.reload(6), .reload(12.2), .reload(18.5)]),
        Case(
            name: "unchanged reloads: half the target duration, then back to the full one",
            loads: [
                .playlist(at: 0, lastSequence: 10), .playlist(at: 6, lastSequence: 10),
                .playlist(at: 9, lastSequence: 11),
            ],
            expected: [.reload(6), .reload(9), .reload(15)]),
        Case(
            name: "stale once unchanged for more than three target durations since the last change",
            loads: [
                .playlist(at: 0, lastSequence: 10), .playlist(at: 6, lastSequence: 10),
                .playlist(at: 9, lastSequence: 10),
                .playlist(at: 12, lastSequence: 10), .playlist(at: 15, lastSequence: 10),
                .playlist(at: 18, lastSequence: 10), .playlist(at: 21, lastSequence: 10),
                .playlist(at: 24, lastSequence: 11),
            ],
            expected: [
                .reload(6), .reload(9), .reload(12), .reload(15), .reload(18), .reload(21),
                .stale(24, unchangedFor: 21), .reload(30),
            ]),
        Case(
            name: "failures back off from half the target duration, doubling, capped at 30 s",
            loads: [
                .playlist(at: 0, lastSequence: 10), .failure(at: 6.5), .failure(at: 10), .failure(at: 16.1),
                .failure(at: 30), .failure(at: 60), .failure(at: 100), .playlist(at: 130, lastSequence: 30),
            ],
            expected: [
                .reload(6), .reload(9.5), .reload(16), .reload(28.1), .reload(54), .reload(90), .reload(130),
                .reload(136),
            ]),
        Case(
            name: "a failure before any playlist: one second, doubling",
            loads: [.failure(at: 0), .failure(at: 1), .playlist(at: 3, lastSequence: 5)],
            expected: [.reload(1), .reload(3), .reload(9)]),
        Case(
            name: "an unchanged reload after a failure is still unchanged",
            loads: [.playlist(at: 0, lastSequence: 10), .failure(at: 6.5), .playlist(at: 9.5, lastSequence: 10)],
            expected: [.reload(6), .reload(9.5), .reload(12.5)]),
        Case(
            name: "EXT-X-ENDLIST: no more reloads",
            loads: [.playlist(at: 0, lastSequence: 10), .ended(at: 6, lastSequence: 11)],
            expected: [.reload(6), .ended]),
        Case(
            name: "gaining EXT-X-ENDLIST alone ends it too",
            loads: [.playlist(at: 0, lastSequence: 10), .ended(at: 6, lastSequence: 10)],
            expected: [.reload(6), .ended]),
    ])
    func decisions(_ test: Case) throws {
        let origin = ContinuousClock.now
        func instant(_ seconds: Double) -> ContinuousClock.Instant {
            origin + .milliseconds(Int64((seconds * 1000).rounded()))
        }
        func seconds(_ instant: ContinuousClock.Instant) -> Double { (instant - origin) / .milliseconds(1) / 1000 }
        var schedule = LiveReloadSchedule()
        var decisions: [Expected] = []
        for load in test.loads {
            let decision: LiveReloadDecision
            switch load {
            case .playlist(let at, let lastSequence):
                decision = schedule.loaded(try playlist(lastSequence: lastSequence, endList: false), began: instant(at))
            case .ended(let at, let lastSequence):
                decision = schedule.loaded(try playlist(lastSequence: lastSequence, endList: true), began: instant(at))
            case .failure(let at):
                decision = schedule.failed(ended: instant(at))
            }
            let observed: Expected =
                switch decision {
                case .reload(let at): .reload(seconds(at))
                case .stale(let at, let unchangedFor): .stale(seconds(at), unchangedFor: unchangedFor / .seconds(1))
                case .ended: .ended
                }
            decisions.append(observed)
        }
        #expect(decisions == test.expected)
    }

    /// A window of three 6 s segments ending at `lastSequence`.
    private func playlist(lastSequence: Int, endList: Bool) throws -> MediaPlaylist {
        try livePlaylist(firstSequence: lastSequence - 2, count: 3, endList: endList)
    }

    @Test func successResetsTheFailureCount() throws {
        var schedule = LiveReloadSchedule()
        let origin = ContinuousClock.now
        _ = schedule.failed(ended: origin)
        _ = schedule.failed(ended: origin)
        #expect(schedule.consecutiveFailures == 2)
        _ = schedule.loaded(try playlist(lastSequence: 5, endList: false), began: origin)
        #expect(schedule.consecutiveFailures == 0)
        #expect(schedule.failed(ended: origin).reloadAt == origin + .seconds(3))
    }

    @Test func policyNumbersApply() throws {
        var schedule = LiveReloadSchedule(
            policy: .init(
                staleAfterTargetDurations: 1, maximumFailureBackoff: .seconds(4), firstFailureBackoff: .seconds(2)))
        let origin = ContinuousClock.now
        #expect(schedule.failed(ended: origin) == .reload(at: origin + .seconds(2)))
        #expect(schedule.failureBackoff(afterFailures: 5) == .seconds(4))
        _ = schedule.loaded(try playlist(lastSequence: 5, endList: false), began: origin)
        #expect(
            schedule.loaded(try playlist(lastSequence: 5, endList: false), began: origin + .seconds(6))
                == .reload(at: origin + .seconds(9)))
        #expect(
            schedule.loaded(try playlist(lastSequence: 5, endList: false), began: origin + .seconds(7))
                == .stale(reloadAt: origin + .seconds(10), unchangedFor: .seconds(7)))
    }
}
